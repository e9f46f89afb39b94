// Command notes-server is the MCP server of the MCP example: it serves
// the team's notes on its standard input and output, with two tools,
// list_topics and read_note. examples/mcp/ganglion.yaml starts it with
// go run, so the example builds it itself.
package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var notes = map[string]string{
	"launch":  "Launch is on Friday. Open items: write the README, record the benchmarks, tag v0.1.",
	"hiring":  "Two interviews next week; the take-home is the replay harness.",
	"on-call": "Ana this week, Bo the next. Page through the #ops channel.",
}

type readArgs struct {
	Topic string `json:"topic" jsonschema:"the topic of the note, as list_topics gives it"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_topics", Description: "List the topics the team has notes on."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			topics := make([]string, 0, len(notes))
			for t := range notes {
				topics = append(topics, t)
			}
			slices.Sort(topics)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(topics, "\n")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_note", Description: "Read the team's note on a topic."},
		func(_ context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, any, error) {
			n, ok := notes[a.Topic]
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("no note on %q: see list_topics", a.Topic)}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: n}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

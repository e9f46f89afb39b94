package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveTestMCP is an MCP server on standard input and output with one
// tool, wait, which writes its process's ID to $GANGLION_TEST_MCP_MARKS/began
// and waits until it is cancelled.
func serveTestMCP() {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Wait until cancelled."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		os.WriteFile(os.Getenv("GANGLION_TEST_MCP_MARKS")+"/began", []byte(strconv.Itoa(os.Getpid())), 0o644)
		select {
		case <-ctx.Done():
		case <-time.After(time.Hour):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil, nil
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

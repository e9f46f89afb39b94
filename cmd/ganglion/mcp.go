package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/runtime"
)

func newMCPCmd(stderr io.Writer) *cobra.Command {
	var (
		f    runFlags
		addr string
	)
	cmd := &cobra.Command{
		Use:   "mcp [DIR]",
		Short: "Serve DIR's agents as MCP tools, over stdio or streamable HTTP",
		Long: `MCP serves the agents of DIR/ganglion.yaml to MCP clients (an IDE, a desktop
assistant) as tools, one per agent, with their extensions, rules and delegation
behind them. A tool takes a message (and an optional instance key, default
"mcp") and returns the agent's answer, after every delegation has reported. A
turn that pauses for a human returns what it waits for, with each pending
item's ID and the command that answers it.

It speaks MCP on its standard input and output, or, with --http, serves
streamable HTTP at ADDR (path /mcp). Logs go to stderr.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			ctx := cmd.Context()
			rt, _, err := openRuntime(ctx, f, dir, stderr)
			if err != nil {
				return err
			}
			defer rt.Close()
			server := newMCPServer(rt, dir)
			if addr == "" {
				if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
					return failed(fmt.Errorf("mcp: %w", err))
				}
				return nil
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return failed(err)
			}
			mux := http.NewServeMux()
			mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(stderr, "ganglion: serving %s's agents over MCP at http://%s/mcp\n", dir, l.Addr())
			go func() {
				<-ctx.Done()
				srv.Close()
			}()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return failed(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.data, "data", "", "data directory (default: the config's data:, else .ganglion/data next to ganglion.yaml)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	cmd.Flags().StringVar(&addr, "http", "", "serve streamable HTTP at this address (host:port) instead of stdio")
	return cmd
}

// mcpArgs are a tool call's arguments: the message, and the instance.
type mcpArgs struct {
	Message  string `json:"message" jsonschema:"what to ask the agent: everything it needs, in plain words"`
	Instance string `json:"instance,omitempty" jsonschema:"the conversation to continue (default mcp): the same key resumes the same history"`
}

// newMCPServer returns an MCP server whose tools are rt's agents; dir is
// the config directory the answering commands name.
func newMCPServer(rt *runtime.Runtime, dir string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ganglion", Version: buildVersion()}, nil)
	agents, _ := rt.Describe()
	for _, a := range agents {
		if a.Unavailable != "" {
			continue
		}
		desc := a.Description
		if desc == "" {
			desc = "The Ganglion agent " + a.Name + "."
		}
		desc += " Send it a message; it answers once its work, delegations included, is done."
		mcp.AddTool(s, &mcp.Tool{Name: a.Name, Description: desc}, func(ctx context.Context, _ *mcp.CallToolRequest, args mcpArgs) (*mcp.CallToolResult, any, error) {
			return askAgent(ctx, rt, dir, a.Name, args), nil, nil
		})
	}
	return s
}

// askAgent runs one tool call: the agent's answer, or what it waits for.
func askAgent(ctx context.Context, rt *runtime.Runtime, dir, agent string, args mcpArgs) *mcp.CallToolResult {
	if strings.TrimSpace(args.Message) == "" {
		return toolError("message is empty: say what to ask the agent")
	}
	key := args.Instance
	if key == "" {
		key = "mcp"
	}
	rep, err := rt.Ask(ctx, agent, key, args.Message)
	switch {
	case errors.Is(err, runtime.ErrPaused):
		return pausedResult(ctx, rt, dir, agent, key)
	case err != nil:
		return toolError(err.Error())
	case rep.Error != "":
		return toolError(rep.Error)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: rep.Response}}}
}

// pausedResult says what a paused instance waits for, and how to answer.
func pausedResult(ctx context.Context, rt *runtime.Runtime, dir, agent, key string) *mcp.CallToolResult {
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil {
		return toolError(err.Error())
	}
	var b strings.Builder
	b.WriteString("The agent paused: it waits for a human. Answer, then call it again with the same instance (" + strconv.Quote(key) + ").\n")
	type pendingItem struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Agent   string `json:"agent"`
		Request any    `json:"request"`
	}
	var open []pendingItem
	for _, it := range items {
		fmt.Fprintf(&b, "- %s (%s of agent %s): %s\n  answer: ganglion %s %s %s ...\n", it.ID, it.Kind, it.Agent, pendingSummary(it), answerVerb(it.Kind), dir, it.ID)
		open = append(open, pendingItem{ID: it.ID, Kind: it.Kind, Agent: it.Agent, Request: it.Request})
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"status": "paused", "agent": agent, "instance": key, "pending": open}}
}

// pendingSummary is an item's question or request, on one line.
func pendingSummary(it ledger.Item) string {
	s := strings.Join(strings.Fields(string(it.Request)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// answerVerb is the command that resolves an item of kind.
func answerVerb(kind string) string {
	if kind == "dependency" {
		return "provide"
	}
	return "answer"
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

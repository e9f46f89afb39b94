package mcpsrc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain makes the test binary an MCP server on stdio when
// MCPSRC_TEST_SERVER is set, for the stdio benchmark.
func TestMain(m *testing.M) {
	if os.Getenv("MCPSRC_TEST_SERVER") == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkMCPToolCall is the cost of one MCP tool call through a Source,
// arguments in and text out: what an MCP tool adds to a tool call over a
// Go tool, whose own cost is a function call.
//
//   - memory: the SDK's in-memory transport (the protocol's cost alone);
//   - stdio: a server process on pipes (this test binary, re-executed).
func BenchmarkMCPToolCall(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	bench := func(b *testing.B, s *Source) {
		defer s.Close()
		if _, err := s.Call(b.Context(), "echo", args); err != nil { // connect outside the timer
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := s.Call(b.Context(), "echo", args)
			if err != nil || r.Text != "echo: hello" {
				b.Fatalf("%+v, %v", r, err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) {
		ts := newTestServer(&testing.T{})
		bench(b, New("srv", ts.connect, 0))
	})
	b.Run("stdio", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		bench(b, New("srv", func(context.Context) (mcp.Transport, error) {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "MCPSRC_TEST_SERVER=1")
			return &mcp.CommandTransport{Command: cmd}, nil
		}, 0))
	})
}

// Package mcp_test runs the MCP example: an agent whose tools come from
// an MCP server the example builds itself (notes-server, with go run).
package mcp_test

import (
	"context"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
	// A program that runs a config with mcp_servers links MCP, as the
	// ganglion command does.
	_ "github.com/ganglion-dev/ganglion/runtime/mcp"
)

func TestMCPExample(t *testing.T) {
	rt, err := runtime.New(context.Background(), runtime.WithConfigFile("ganglion.yaml"), runtime.WithMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(t.Context(), "assistant", "default", runtime.UserMessage("What is the state of the launch?"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "From the team's notes: Launch is on Friday. Open items: write the README, record the benchmarks, tag v0.1."
	if res.Response.Content != want {
		t.Errorf("answer %q, want %q", res.Response.Content, want)
	}
}

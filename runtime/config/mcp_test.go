package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestAgentMCPForms: an agent's mcp_servers entry is a server's name, the
// short form, or a mapping with the server and the tools it takes.
func TestAgentMCPForms(t *testing.T) {
	tests := []struct {
		name, agent string
		want        []config.AgentMCP
	}{
		{"names", `[calc, files]`, []config.AgentMCP{{Server: "calc"}, {Server: "files"}}},
		{"mappings", `[{server: calc}, {server: files, tools: [read]}]`, []config.AgentMCP{{Server: "calc"}, {Server: "files", Tools: []string{"read"}}}},
		{"both", "\n      - calc\n      - server: files\n        tools: [read]", []config.AgentMCP{{Server: "calc"}, {Server: "files", Tools: []string{"read"}}}},
		{"a quoted name", `["calc"]`, []config.AgentMCP{{Server: "calc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model: {provider: scripted, script: s.yaml}\nmcp_servers: [{name: calc, command: [calc]}, {name: files, command: [files]}]\nagents:\n  - name: assistant\n    mcp_servers: " + tt.agent + "\n"
			f, err := config.Parse("ganglion.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := f.Agents[0].MCPServers; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("MCPServers = %+v, want %+v", got, tt.want)
			}
			if err := f.Validate(known); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestAgentMCPShapes: an entry of another shape is refused where it is.
func TestAgentMCPShapes(t *testing.T) {
	tests := []struct{ name, agent, want string }{
		{"a list", `[[calc]]`, `ganglion.yaml:5:19: agent "assistant": mcp_servers[0]: expected an MCP server's name or a mapping (server, tools), found a list`},
		{"a number", `[1]`, `ganglion.yaml:5:19: agent "assistant": mcp_servers[0]: expected an MCP server's name or a mapping (server, tools), found integer 1 (quote it to use it as text)`},
		{"not a list", `calc`, `ganglion.yaml:5:18: agent "assistant": mcp_servers: expected a list, found string "calc"`},
		{"an unknown field", `[{server: calc, tool: x}]`, `ganglion.yaml:5:34: agent "assistant": mcp_servers[0]: unknown field "tool" (known: server, tools)`},
		{"a server that is not a name", `[{server: [calc]}]`, `ganglion.yaml:5:28: agent "assistant": mcp_servers[0].server: expected a string, found a list`},
		{"an empty name", `[""]`, `ganglion.yaml:5:19: agent "assistant": mcp_servers[0]: server is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model: {provider: scripted, script: s.yaml}\nmcp_servers: [{name: calc, command: [calc]}]\nagents:\n  - name: assistant\n    mcp_servers: " + tt.agent + "\n"
			f, err := config.Parse("ganglion.yaml", []byte(src))
			if err == nil {
				err = f.Validate(known)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if got := firstLines(errorList(t, err)); strings.Join(got, "\n") != tt.want {
				t.Errorf("error = %q\nwant    %q", got, tt.want)
			}
		})
	}
}

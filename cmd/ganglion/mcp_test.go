package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// mcpClient serves dir's agents as newMCPServer does and returns a
// client session of the SDK's on it, over in-memory transports.
func mcpClient(t *testing.T, dir string) *mcp.ClientSession {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	must(t, err)
	rt, err := runtime.New(t.Context(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	must(t, err)
	t.Cleanup(func() { rt.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(rt, dir).Connect(t.Context(), st, nil)
	must(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	must(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	must(t, err)
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}

// TestMCPServesAgents: each agent is a tool that takes a message and an
// instance and returns the agent's answer; the instance keeps the
// conversation.
func TestMCPServesAgents(t *testing.T) {
	dir := project(t, testConfig)
	cs := mcpClient(t, dir)
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		must(t, err)
		names = append(names, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"message"`) || !strings.Contains(string(schema), `"instance"`) {
			t.Errorf("%s's schema: %s", tool.Name, schema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"helper", "second"}) {
		t.Fatalf("tools %v", names)
	}
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper: %q (error %v)", text, res.IsError)
	}
	if text, res := callText(t, cs, "second", map[string]any{"message": "hi", "instance": "k2"}); res.IsError || text != "second here" {
		t.Errorf("second: %q (error %v)", text, res.IsError)
	}
	if text, res := callText(t, cs, "helper", map[string]any{"message": "  "}); !res.IsError || text != "message is empty: say what to ask the agent" {
		t.Errorf("an empty message: %q (error %v)", text, res.IsError)
	}
}

// TestMCPPausedTurn: a turn that pauses returns what it waits for, with
// the pending item's ID and the command that answers it.
func TestMCPPausedTurn(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents:\n  - name: asker\n    extensions: [{name: protocol}]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  asker:
    fallback:
      steps:
        - text: |
            [USER_QUESTION]
            category: clarification
            question: Which file?
            required: true
            [/USER_QUESTION]
`), 0o644))
	cs := mcpClient(t, dir)
	text, res := callText(t, cs, "asker", map[string]any{"message": "read something"})
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	id := regexp.MustCompile(`p-[0-9a-f]{12}`).FindString(text)
	want := "The agent paused: it waits for a human. Answer, then call it again with the same instance (\"mcp\").\n- " + id +
		" (question of agent asker): {\"category\":\"clarification\",\"question\":\"Which file?\",\"required\":true}\n  answer: ganglion answer " + dir + " " + id + " ...\n"
	if id == "" || text != want {
		t.Errorf("paused result:\n%s\nwant:\n%s", text, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(sc), `"status":"paused"`) || !strings.Contains(string(sc), `"id":"`+id+`"`) {
		t.Errorf("structured content: %s", sc)
	}
}

// TestMCPOverStdio: `ganglion mcp DIR`, a real process, answers an MCP
// client on its standard input and output, and exits when it closes.
func TestMCPOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	cmd := exec.Command(cliBinary(t), "mcp", dir)
	cmd.Env = childEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"})
	if res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over stdio: %q (error %v)\nstderr: %s", text, res.IsError, stderr.String())
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\nstderr: %s", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("the server process: %v\nstderr: %s", cmd.ProcessState, stderr.String())
	}
}

// TestMCPOverHTTP: `ganglion mcp --http` serves the agents over
// streamable HTTP at the address it prints.
func TestMCPOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	dir := project(t, testConfig)
	cmd := exec.Command(cliBinary(t), "mcp", "--http", "127.0.0.1:0", dir)
	cmd.Env = childEnv()
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	must(t, err)
	url := regexp.MustCompile(`http://\S+/mcp`).FindString(line)
	if url == "" {
		t.Fatalf("no address in %q", line)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer cs.Close()
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over HTTP: %q (error %v)", text, res.IsError)
	}
}

// bearerTransport adds the server's token to each request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCP: ganglion serve also serves the agents as MCP tools at
// /mcp, behind its token.
func TestServeMCP(t *testing.T) {
	dir := project(t, testConfig)
	addr, token, stop := startServe(t, dir)
	defer stop()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport(token)}}, nil)
	must(t, err)
	defer cs.Close()
	if text, res := callText(t, cs, "helper", map[string]any{"message": "read the file"}); res.IsError || text != "It says: hello world\n" {
		t.Errorf("helper over serve's /mcp: %q (error %v)", text, res.IsError)
	}
}

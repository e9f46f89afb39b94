package runtime_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
)

// TestMain makes the test binary an MCP server on its standard input and
// output when GANGLION_TEST_MCP_SERVER is set: the real stdio subprocess
// the MCP tests start.
func TestMain(m *testing.M) {
	if os.Getenv("GANGLION_TEST_MCP_SERVER") == "1" {
		serveTestMCP()
		os.Exit(0)
	}
	if cfg := os.Getenv(clusterNodeEnv); cfg != "" {
		runClusterNode(cfg) // never returns: the test kills it
	}
	if cfg := os.Getenv(clusterAskerEnv); cfg != "" {
		runAskingNode(cfg) // never returns: the test kills it
	}
	if cfg := os.Getenv(clusterStallEnv); cfg != "" {
		runStalledNode(cfg) // never returns
	}
	if cfg := os.Getenv("GANGLION_TEST_MCP_HOST"); cfg != "" {
		hostTestMCP(cfg) // never returns: the test kills it
	}
	code := m.Run()
	scaleGuests.Close()
	os.Exit(code)
}

func serveTestMCP() {
	if f := os.Getenv("GANGLION_TEST_MCP_STARTED"); f != "" {
		os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644) // tells the test it started
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	type lookupArgs struct {
		Word string `json:"word" jsonschema:"the word to define"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Define a word."}, func(_ context.Context, _ *mcp.CallToolRequest, a lookupArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: a mass of nerve cells (pid %d)", a.Word, os.Getpid())}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Die."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Take a minute."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		marks := os.Getenv("GANGLION_TEST_MCP_MARKS") // a directory: say when the call begins and when it is cancelled
		if marks != "" {
			os.WriteFile(marks+"/began", nil, 0o644)
		}
		select {
		case <-ctx.Done():
			if marks != "" {
				os.WriteFile(marks+"/cancelled", []byte(context.Cause(ctx).Error()), 0o644)
			}
		case <-time.After(time.Minute):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done at last"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "token", Description: "Show the token the server was started with."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		tok := os.Getenv("DICT_TOKEN")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("token %s (pid %d)\nraw: %s", tokenHash(tok), os.Getpid(), tok)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool grown."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		// The server tells its clients that its tools changed.
		mcp.AddTool(s, &mcp.Tool{Name: "grown", Description: "A tool added at run time."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown, and called"}}}, nil, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grew a tool"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test MCP server:", err)
	}
}

// tokenHash names a token without showing it.
func tokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:6])
}

// mcpConfig is an agent taking three tools of the test binary's MCP server.
func mcpConfig(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return `
mcp_servers:
  - name: dict
    command: [` + strconv.Quote(exe) + `]
    env: {GANGLION_TEST_MCP_SERVER: "1"}
    timeout: 300ms
agents:
  - name: a
    mcp_servers: [{server: dict, tools: [lookup, crash, slow]}]
`
}

const mcpScript = `
agents:
  a:
    turns:
      - match: "^define"
        steps:
          - tool_calls: [{name: dict__lookup, id: c1, args: {word: ganglion}}]
          - text: "{{ .LastMessage }}"
      - match: "^wrong"
        steps:
          - tool_calls: [{name: dict__lookup, id: c1, args: {term: ganglion}}]
          - text: "{{ .LastMessage }}"
      - match: "^crash"
        steps:
          - tool_calls: [{name: dict__crash, id: c1}]
          - text: "{{ .LastMessage }}"
      - match: "^slow"
        steps:
          - tool_calls: [{name: dict__slow, id: c1}]
          - text: "{{ .LastMessage }}"
`

// TestMCPServerTools: a stdio MCP server's tools are offered, named
// <server>__<tool>, of category mcp, with their schema, which is checked
// before a call; a call's result reaches the model; a crashed server is a
// clear tool error and is started again; a call past the timeout is an
// error, not a hung turn.
func TestMCPServerTools(t *testing.T) {
	catalog := new([]pipeline.Tool)
	h := newHarness(t, strings.Replace(mcpConfig(t), "    mcp_servers:", "    extensions: [{name: catalog}]\n    mcp_servers:", 1), mcpScript,
		runtime.WithExtension("catalog", func(extensions.Config) (extensions.Extension, error) {
			return extensions.Func(func(api *extensions.API) error {
				api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
					*catalog = s.Tools().Tools()
					return s.Next(ctx)
				})
				return nil
			}), nil
		}))
	res := h.mustSend("a", "k", "define it")
	if !strings.HasPrefix(res.Response.Content, "ganglion: a mass of nerve cells (pid ") {
		t.Fatalf("answer %q", res.Response.Content)
	}
	pid := res.Response.Content
	if got := strings.Join(h.rec.requests()[0].Tools, " "); got != "dict__crash dict__lookup dict__slow" {
		t.Errorf("offered %s; want the three tools the agent may use", got)
	}
	for _, tool := range *catalog {
		if tool.Category != pipeline.CategoryMCP || tool.Name == "dict__lookup" && !strings.Contains(string(tool.Parameters), `"word"`) {
			t.Errorf("tool %s: category %s, schema %s", tool.Name, tool.Category, tool.Parameters)
		}
	}

	res = h.mustSend("a", "k", "wrong arguments")
	if !strings.Contains(res.Response.Content, `tool "dict__lookup":`) || !strings.Contains(res.Response.Content, "word") {
		t.Errorf("a call against the schema: %q", res.Response.Content)
	}

	res = h.mustSend("a", "k", "crash it")
	if !strings.Contains(res.Response.Content, `tool "dict__crash" failed: MCP server "dict"`) {
		t.Errorf("a call that kills the server: %q", res.Response.Content)
	}
	time.Sleep(700 * time.Millisecond) // the first backoff
	res = h.mustSend("a", "k", "define it again")
	if !strings.HasPrefix(res.Response.Content, "ganglion: a mass of nerve cells (pid ") || res.Response.Content == pid {
		t.Errorf("after the crash, a new server should answer: %q (before: %q)", res.Response.Content, pid)
	}

	start := time.Now()
	res = h.mustSend("a", "k", "slow one")
	if want := `tool "dict__slow" failed: MCP server "dict": tool "slow" did not answer within 300ms`; res.Response.Content != want {
		t.Errorf("a call past its timeout: %q, want %q", res.Response.Content, want)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the turn took %s", d)
	}
	if res.FinishReason != pipeline.FinishText {
		t.Errorf("finish %s", res.FinishReason)
	}
}

// TestMCPToolListChanged: a server that says its tools changed
// (tools/list_changed) has them listed again, and the new ones offered, at
// a following step.
func TestMCPToolListChanged(t *testing.T) {
	h := newHarness(t, strings.Replace(mcpConfig(t), "{server: dict, tools: [lookup, crash, slow]}", "{server: dict}", 1), `
agents:
  a:
    turns:
      - match: "^grow"
        steps:
          - tool_calls: [{name: dict__grow, id: c1}]
          - text: "{{ .LastMessage }}"
      - match: "^call"
        steps:
          - tool_calls: [{name: dict__grown, id: c1}]
          - text: "{{ .LastMessage }}"
    fallback:
      steps: [{text: "looked"}]
`)
	offered := func() string { reqs := h.rec.requests(); return strings.Join(reqs[len(reqs)-1].Tools, " ") }
	if res := h.mustSend("a", "k", "grow"); res.Response.Content != "grew a tool" {
		t.Fatalf("answer %q", res.Response.Content)
	}
	for _, req := range h.rec.requests() {
		if slices.Contains(req.Tools, "dict__grown") {
			t.Errorf("dict__grown offered before it existed: %s", req.Tools)
		}
	}
	// The server says so 10 ms after the change (it gathers changes),
	// and the client hears it on its own: a following step sees it.
	deadline := time.Now().Add(10 * time.Second)
	for h.mustSend("a", "k", "look"); !strings.Contains(offered(), "dict__grown"); h.mustSend("a", "k", "look") {
		if time.Now().After(deadline) {
			t.Fatalf("dict__grown never offered; the last step offered %s", offered())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if res := h.mustSend("a", "k", "call it"); res.Response.Content != "grown, and called" {
		t.Errorf("the new tool's call: %q", res.Response.Content)
	}
}

// TestMCPCallCancelledWithItsTurn: cancelling a turn cancels its MCP
// call at the server, whatever the call's timeout, and the server goes on
// serving the next turn.
func TestMCPCallCancelledWithItsTurn(t *testing.T) {
	marks := t.TempDir()
	cfg := strings.Replace(mcpConfig(t), `env: {GANGLION_TEST_MCP_SERVER: "1"}`, `env: {GANGLION_TEST_MCP_SERVER: "1", GANGLION_TEST_MCP_MARKS: `+strconv.Quote(marks)+`}`, 1)
	h := newHarness(t, strings.Replace(cfg, "timeout: 300ms", "timeout: 10m", 1), mcpScript)
	pid := h.mustSend("a", "k", "define it").Response.Content
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFile(t, marks+"/began")
		cancel()
	}()
	res, err := h.rt.Send(ctx, "a", "k", runtime.UserMessage("slow one"))
	if !errors.Is(err, context.Canceled) || res == nil || res.FinishReason != pipeline.FinishAborted {
		t.Fatalf("the cancelled turn: %+v, %v; want aborted with the cancellation", res, err)
	}
	waitFile(t, marks+"/cancelled") // the server's handler saw it
	if res := h.mustSend("a", "k", "define it"); res.Response.Content != pid {
		t.Errorf("after the cancelled call: %q, want the same server's answer %q", res.Response.Content, pid)
	}
}

// waitFile waits for file path to exist.
func waitFile(t *testing.T, path string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s never appeared", path)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMCPServerThatCannotStart: a server whose command does not exist
// offers no tools, says why in the log, and fails no turn.
func TestMCPServerThatCannotStart(t *testing.T) {
	h := newHarness(t, `
mcp_servers: [{name: gone, command: [/nonexistent/mcp-server]}]
agents:
  - name: a
    mcp_servers: [{server: gone}]
`, "agents: {a: {fallback: {steps: [{text: fine}]}}}\n")
	res := h.mustSend("a", "k", "hello")
	if res.Response.Content != "fine" {
		t.Fatalf("turn %+v", res)
	}
	if n := len(h.rec.requests()[0].Tools); n != 0 {
		t.Errorf("%d tools offered from a server that never started", n)
	}
}

// TestMCPServerOverHTTP: a streamable-HTTP server's tools, with its
// headers taken from the environment.
func TestMCPServerOverHTTP(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	type args struct {
		Q string `json:"q"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "search"}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "results for " + a.Q}}}, nil, nil
	})
	var auth atomic.Value
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the runtime's Close, which ends the client's event stream
	t.Setenv("MCP_TEST_TOKEN", "tok-5b1d")
	hr := newHarness(t, `
mcp_servers: [{name: web, url: "`+srv.URL+`", headers: {Authorization: "Bearer ${MCP_TEST_TOKEN}"}}]
agents:
  - name: a
    mcp_servers: [{server: web}]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: web__search, id: c1, args: {q: ganglia}}]
        - text: "{{ .LastMessage }}"
`)
	if res := hr.mustSend("a", "k", "search"); res.Response.Content != "results for ganglia" {
		t.Errorf("answer %q", res.Response.Content)
	}
	if got, _ := auth.Load().(string); got != "Bearer tok-5b1d" {
		t.Errorf("Authorization %q, want the header with the environment's token", got)
	}
}

// TestMCPCallsThroughApproval: approval rules decide MCP calls by their
// category, server and tool: a denied call never reaches the server, an
// asked one pauses until a human approves, an approved one runs.
func TestMCPCallsThroughApproval(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/rules.yaml", `default: approve
rules:
  - name: no crashing
    when: tool.category == "mcp" && tool.server == "dict" && tool.serverTool == "crash"
    decision: deny
  - name: slow needs a look
    when: tool.serverTool == "slow"
    decision: ask
`)
	writeFile(t, dir+"/script.yaml", mcpScript+`      - match: "approved"
        steps: [{text: "resumed: {{ .LastMessage }}"}]
`)
	cfg := parseConfig(t, dir, modelLine+strings.Replace(mcpConfig(t), "    mcp_servers:", "    extensions: [{name: approval, config: {rules: rules.yaml}}]\n    mcp_servers:", 1))
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	send := func(text string) *pipeline.TurnResult {
		t.Helper()
		res, err := rt.Send(ctx, "a", "k", runtime.UserMessage(text))
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return res
	}
	if res := send("define it"); !strings.HasPrefix(res.Response.Content, "ganglion: a mass of nerve cells") {
		t.Errorf("an approved call: %q", res.Response.Content)
	}
	if res := send("crash it"); !strings.Contains(res.Response.Content, `rule "no crashing" decides deny`) {
		t.Errorf("a denied call: %q", res.Response.Content)
	}
	if res := send("define it again"); !strings.HasPrefix(res.Response.Content, "ganglion: a mass of nerve cells") {
		t.Errorf("after the denied crash, the server still runs: %q", res.Response.Content)
	}
	res := send("slow one")
	if res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("an asked call: %+v", res)
	}
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 1 || !strings.Contains(string(items[0].Request), `"tool":"dict__slow"`) {
		t.Fatalf("pending %+v, %v", items, err)
	}
	res, err = rt.Answer(ctx, items[0].ID, "approve")
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "resumed: A human approved the call of dict__slow; it ran." {
		t.Errorf("the resume turn: %q", res.Response.Content)
	}
	// The approved call ran when the turn resumed: its result is the
	// server's timeout, not the pause's placeholder.
	msgs, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	var slow string
	for _, m := range msgs {
		if m.Role == pipeline.RoleTool && m.Name == "dict__slow" {
			slow = m.Content
		}
	}
	if want := `tool "dict__slow" failed: MCP server "dict": tool "slow" did not answer within 300ms`; slow != want {
		t.Errorf("the approved call's result: %q, want %q", slow, want)
	}
}

// TestMCPSessionReplaysWithoutTheServer: a session that called an MCP
// server replays from its cassette with the server gone: the listing and
// the results come from the recording.
func TestMCPSessionReplaysWithoutTheServer(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/script.yaml", mcpScript)
	cfg := parseConfig(t, dir, modelLine+mcpConfig(t))
	inputs := []cassette.Input{{Op: "send", Agent: "a", Instance: "k", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "define it"}}}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	live, err := cassettetest.Record(context.Background(), rec, inputs, cassettetest.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(live.Transcript, "ganglion: a mass of nerve cells") {
		t.Fatalf("the live session:\n%s", live.Transcript)
	}
	gone := parseConfig(t, dir, modelLine+strings.Replace(mcpConfig(t), "command: [", "command: [\"/nonexistent/server\", ", 1))
	c, err := cassette.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cassettetest.Replay(context.Background(), c, cassettetest.Options{Config: gone})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) > 0 || res.Transcript != live.Transcript {
		t.Errorf("the replay without the server: %v\n%s", res.Divergences, res.Transcript)
	}
}

// TestMCPEagerStart: an eager server starts with the runtime, before any
// turn; a lazy one at the first step of an agent that uses it.
func TestMCPEagerStart(t *testing.T) {
	for _, start := range []string{"eager", "lazy"} {
		t.Run(start, func(t *testing.T) {
			dir := t.TempDir()
			started := dir + "/started"
			writeFile(t, dir+"/script.yaml", mcpScript)
			cfg := parseConfig(t, dir, modelLine+strings.Replace(mcpConfig(t), `env: {GANGLION_TEST_MCP_SERVER: "1"}`,
				`env: {GANGLION_TEST_MCP_SERVER: "1", GANGLION_TEST_MCP_STARTED: `+strconv.Quote(started)+`}
    start: `+start, 1))
			rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			_, err = os.Stat(started)
			if (err == nil) != (start == "eager") {
				t.Errorf("%s: the server has started after New: %v", start, err == nil)
			}
			if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("define it")); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(started); err != nil {
				t.Errorf("%s: the server has not started after a turn", start)
			}
		})
	}
}

// hostTestMCP is a process that runs a runtime on the config at path, with
// its eager MCP server, until it is killed.
func hostTestMCP(path string) {
	rt, err := runtime.New(context.Background(), runtime.WithConfigFile(path), runtime.WithMemoryStore())
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
	_ = rt
	select {}
}

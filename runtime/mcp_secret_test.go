//go:build unix

package runtime_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/internal/secret/secrettest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// mcpSecretScript calls the server's token tool on "use" and after a
// dependency is provided, and asks for the token on "need".
const mcpSecretScript = `
agents:
  a:
    turns:
      - match: "^use"
        steps:
          - tool_calls: [{name: vault__token, id: c1}]
          - text: "{{ .LastMessage }}"
      - match: "^need"
        steps:
          - text: |
              [DEPENDENCY_REQUEST]
              type: api_key
              name: DICT_TOKEN
              description: the dictionary's token
              required: true
              [/DEPENDENCY_REQUEST]
      - match: "was provided"
        steps:
          - tool_calls: [{name: vault__token, id: c1}]
          - text: "{{ .LastMessage }}"
`

// vaultConfig is agent a with the protocols and the test binary's MCP
// server, which takes the provided secret DICT_TOKEN.
func vaultConfig(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return `
mcp_servers:
  - name: vault
    command: [` + strconv.Quote(exe) + `]
    env: {GANGLION_TEST_MCP_SERVER: "1", DICT_TOKEN: "${secret:DICT_TOKEN}"}
agents:
  - name: a
    extensions: [{name: protocol}]
    mcp_servers: [{server: vault}]
`
}

// tokenAnswer is the token tool's result as the model sees it: the
// server's token named by its hash, the token itself masked.
var tokenAnswer = regexp.MustCompile(`^token ([0-9a-f]{12}) \(pid (\d+)\)\nraw: \[secret DICT_TOKEN\]$`)

// TestMCPServerTakesAProvidedSecret: a server whose env takes a secret
// provided to the instance (${secret:NAME}) offers no tools until the
// instance has it, then runs once per instance with that instance's
// value, restarts when the value is provided anew, and ends with the
// runtime. The value reaches the server and nothing else: not the model,
// the history or the logs.
func TestMCPServerTakesAProvidedSecret(t *testing.T) {
	var logs logtest.Buffer
	h := newHarness(t, vaultConfig(t), mcpSecretScript, runtime.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := context.Background()
	tokens := map[string]string{}
	for _, name := range []string{"k1", "j", "k2"} {
		var b [12]byte
		rand.Read(b[:])
		tokens[name] = "tok-canary-" + hex.EncodeToString(b[:])
	}
	// provide asks instance key for the token, provides tok, and returns
	// the pid of the server that answered the resumed call.
	provide := func(key, tok string) int {
		t.Helper()
		if res := h.mustSend("a", key, "need a token"); res.FinishReason != pipeline.FinishPaused {
			t.Fatalf("%s: %+v, want paused", key, res)
		}
		items := openItems(t, h.rt, key)
		if len(items) != 1 {
			t.Fatalf("%s: open items %+v", key, items)
		}
		res, err := h.rt.Provide(ctx, items[0].ID, tok)
		if err != nil {
			t.Fatal(err)
		}
		return checkToken(t, res.Response.Content, tok)
	}

	for range 2 {
		res := h.mustSend("a", "k", "use the tool")
		if !strings.Contains(res.Response.Content, `unknown tool "vault__token"`) {
			t.Errorf("before the secret: %q", res.Response.Content)
		}
	}
	if n := len(h.rec.requests()[0].Tools); n != 0 {
		t.Errorf("%d tools offered before the instance has the secret", n)
	}
	want := `MCP server \"vault\" takes the provided secret DICT_TOKEN, which instance \"k\" has not been given yet`
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Errorf("the missing secret is logged %d times over two turns, want once:\n%s", n, cutText(logs.String()))
	}

	pidK := provide("k", tokens["k1"])
	pidJ := provide("j", tokens["j"])
	if pidJ == pidK {
		t.Errorf("instances k and j share the server %d; each has its own secret", pidK)
	}
	if res := h.mustSend("a", "k", "use the tool"); checkToken(t, res.Response.Content, tokens["k1"]) != pidK {
		t.Errorf("k's server was started again with the same secret: %q", res.Response.Content)
	}
	pidK2 := provide("k", tokens["k2"])
	if pidK2 == pidK {
		t.Errorf("k's server %d kept running with the old secret", pidK)
	}
	waitExit(t, pidK, "k's server with the old secret")

	var all []string
	for _, tok := range tokens {
		all = append(all, tok)
	}
	secrettest.Check(t, "the logs at debug level", logs.String(), all)
	for _, key := range []string{"k", "j"} {
		msgs, err := h.rt.History(ctx, "a", key)
		if err != nil {
			t.Fatal(err)
		}
		secrettest.Check(t, "the history of "+key, msgs, all)
	}
	for _, req := range h.rec.requests() {
		secrettest.Check(t, "a model request", req, all)
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pidJ, "j's server, after Close")
	waitExit(t, pidK2, "k's server, after Close")
}

// checkToken checks that a result shows the server started with tok,
// masked, and returns the server's pid.
func checkToken(t *testing.T, content, tok string) int {
	t.Helper()
	m := tokenAnswer.FindStringSubmatch(content)
	if m == nil {
		t.Fatalf("answer %q, want %s", content, tokenAnswer)
	}
	if m[1] != tokenHash(tok) {
		t.Errorf("the server has the token %s, want %s", m[1], tokenHash(tok))
	}
	pid, _ := strconv.Atoi(m[2])
	return pid
}

// waitExit waits for the child process pid to end.
func waitExit(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMCPInstanceServerEndsWithTheInstance: an instance's own server ends
// when the instance leaves the cache, and starts again when it is next
// used.
func TestMCPInstanceServerEndsWithTheInstance(t *testing.T) {
	h := newHarness(t, vaultConfig(t), mcpSecretScript, runtime.WithInstanceCache(1))
	h.mustSend("a", "k", "need a token")
	res, err := h.rt.Provide(context.Background(), openItems(t, h.rt, "k")[0].ID, "tok-11111111")
	if err != nil {
		t.Fatal(err)
	}
	pid := checkToken(t, res.Response.Content, "tok-11111111")
	h.mustSend("a", "other", "use the tool") // k leaves the cache
	waitExit(t, pid, "the server of an instance no longer cached")
	res = h.mustSend("a", "k", "use the tool")
	if again := checkToken(t, res.Response.Content, "tok-11111111"); again == pid {
		t.Errorf("k's server %d answered after it ended", pid)
	}
}

// TestMCPHeaderTakesAProvidedSecret: a streamable-HTTP server's header may
// take a provided secret; each instance's requests carry its own.
func TestMCPHeaderTakesAProvidedSecret(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "token"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tok := strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "token " + tokenHash(tok) + " (pid 1)\nraw: " + tok}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close) // after the runtime's Close, which ends the clients' event streams
	h := newHarness(t, `
mcp_servers: [{name: vault, url: "`+srv.URL+`", headers: {Authorization: "Bearer ${secret:DICT_TOKEN}"}}]
agents:
  - name: a
    extensions: [{name: protocol}]
    mcp_servers: [{server: vault}]
`, mcpSecretScript)
	for _, key := range []string{"k", "j"} {
		h.mustSend("a", key, "need a token")
		res, err := h.rt.Provide(context.Background(), openItems(t, h.rt, key)[0].ID, "tok-key-"+key)
		if err != nil {
			t.Fatal(err)
		}
		checkToken(t, res.Response.Content, "tok-key-"+key)
	}
}

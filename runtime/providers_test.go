package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	_ "github.com/ganglion-dev/ganglion/runtime/model/anthropic" // registers "anthropic"
	_ "github.com/ganglion-dev/ganglion/runtime/model/openai"    // registers "openai"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

const canaryKey = "sk-canary-7f3a9c2e51d04b86"

// sse writes an OpenAI-style event stream of the JSON events.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// allEvents records every event of a bus as JSON.
type allEvents struct {
	mu   sync.Mutex
	json []string
	evs  []events.Event
}

func (a *allEvents) add(ev events.Event) {
	b, _ := json.Marshal(ev)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.json = append(a.json, string(b))
	a.evs = append(a.evs, ev)
}

func (a *allEvents) topic(t string) []events.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []events.Event
	for _, e := range a.evs {
		if e.Topic == t {
			out = append(out, e)
		}
	}
	return out
}

// TestOpenAIProviderTurn: a turn on the openai provider against a local
// server: a 429 is retried after its Retry-After (a model.retry event), a
// tool call runs, the answer comes back with its usage; the key reaches
// the server and nothing else.
func TestOpenAIProviderTurn(t *testing.T) {
	t.Setenv("TEST_OPENAI_KEY", canaryKey)
	var mu sync.Mutex
	var calls int
	var auths, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls++
		n := calls
		auths = append(auths, r.Header.Get("Authorization"))
		bodies = append(bodies, string(body))
		mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"error":{"message":"Rate limit reached (key %s)","type":"requests","code":"rate_limit_exceeded"}}`, canaryKey)
		case 2:
			sse(w,
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check. "}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ganglion\"}"}}]}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":20}}}`)
		default:
			sse(w,
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":"It is a runtime."}}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":80,"completion_tokens":5}}`)
		}
	}))
	defer srv.Close()
	lookup := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "lookup", Description: "Looks a word up.", Category: pipeline.CategoryRead,
		Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "found: " + string(c.Arguments())}, nil
		}}
	dir := t.TempDir()
	cfg := parseConfig(t, dir, `
model: {provider: openai, name: gpt-test, base_url: `+srv.URL+`, api_key_env: TEST_OPENAI_KEY}
agents:
  - name: a
    tools: [lookup]
`)
	bus := events.NewBus()
	all := &allEvents{}
	bus.Subscribe("*", all.add)
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithTool(lookup), runtime.WithEvents(bus))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("what is ganglion?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "It is a runtime." || res.Steps != 2 {
		t.Errorf("result = %+v", res)
	}
	if want := (pipeline.Usage{InputTokens: 30 + 80, OutputTokens: 15, CacheReadTokens: 20}); res.Usage != want {
		t.Errorf("usage = %+v, want %+v", res.Usage, want)
	}
	if calls != 3 {
		t.Fatalf("%d calls, want 3 (a 429, then two steps)", calls)
	}
	for i, a := range auths {
		if a != "Bearer "+canaryKey {
			t.Errorf("call %d: Authorization %q", i+1, a)
		}
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(bodies[2]), &req); err != nil {
		t.Fatal(err)
	}
	if req.Model != "gpt-test" || len(req.Messages) != 3 || req.Messages[2].Role != "tool" || req.Messages[2].ToolCallID != "call_1" ||
		req.Messages[2].Content != `found: {"q":"ganglion"}` {
		t.Errorf("second step's request = %s", bodies[2])
	}
	retries := all.topic(events.ModelRetry)
	if len(retries) != 1 {
		t.Fatalf("%d model.retry events, want 1", len(retries))
	}
	d := evData(retries[0])
	if d["attempt"] != 1 || d["kind"] != "rate limited" || d["retry_after"] != true || d["delay_ms"] != 1 {
		t.Errorf("model.retry = %v", d)
	}
	if !strings.Contains(d["error"].(string), "openai: rate limited (HTTP 429): Rate limit reached (key [secret TEST_OPENAI_KEY])") {
		t.Errorf("retry error = %q", d["error"])
	}
	for _, e := range all.json {
		if strings.Contains(e, canaryKey) {
			t.Errorf("an event holds the key: %s", e)
		}
	}
	if u, _ := rt.Usage(context.Background(), "a", "k"); u != res.Usage {
		t.Errorf("instance usage = %+v", u)
	}
}

// TestProviderErrors: errors that retrying cannot cure fail the turn at
// once with the provider's classified error.
func TestProviderErrors(t *testing.T) {
	tests := []struct {
		name, provider string
		status         int
		body           string
		is             error
		want           string
	}{
		{"openai 401", "openai", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
			model.ErrAuth, `model: openai: authentication failed (HTTP 401): Incorrect API key provided`},
		{"openai context window", "openai", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			model.ErrContextWindow, `model: openai: context window exceeded (HTTP 400): This model's maximum context length is 8192 tokens.`},
		{"anthropic 401", "anthropic", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			model.ErrAuth, `model: anthropic: authentication failed (HTTP 401): invalid x-api-key`},
		{"anthropic prompt too long", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			model.ErrContextWindow, `model: anthropic: context window exceeded (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TEST_KEY", canaryKey)
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits++
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			cfg := parseConfig(t, t.TempDir(), `
model: {provider: `+tt.provider+`, name: m, base_url: `+srv.URL+`, api_key_env: TEST_KEY}
agents: [{name: a}]
`)
			rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("hi"))
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) || res.FinishReason != pipeline.FinishError {
				t.Fatalf("err = %v (%s)\nwant %v containing %q", err, res.FinishReason, tt.is, tt.want)
			}
			if hits != 1 {
				t.Errorf("%d hits, want 1: not retried", hits)
			}
			if strings.Contains(err.Error(), canaryKey) {
				t.Errorf("the error holds the key")
			}
		})
	}
}

// keyProbe records what req.Secret gives for a name, then streams the
// scripted model.
type keyProbe struct {
	model.Provider
	mu   sync.Mutex
	seen []string
}

func (k *keyProbe) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	v, ok := req.Secret("OPENAI_API_KEY")
	k.mu.Lock()
	k.seen = append(k.seen, fmt.Sprint(ok, ":", v))
	k.mu.Unlock()
	return k.Provider.Stream(ctx, req)
}

// TestModelKeyFromProvidedSecret: a key a human provided through a
// DEPENDENCY_REQUEST reaches the model request's Secret, for the
// provider to use when the environment has none.
func TestModelKeyFromProvidedSecret(t *testing.T) {
	sc, err := scripted.Parse("script.yaml", []byte(pauseScript))
	if err != nil {
		t.Fatal(err)
	}
	probe := &keyProbe{Provider: sc}
	h := newHarness(t, pauseConfig, pauseScript, runtime.WithModel(probe), runtime.WithoutExpiryTimer(),
		runtime.WithSecretKey([]byte(strings.Repeat("k", 32))))
	ctx := context.Background()
	if res := h.mustSend("a", "k", "need a key"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("turn = %+v", res)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 2 {
		t.Fatalf("pending = %v, %v", items, err)
	}
	for _, it := range items {
		if it.Kind == protocol.ItemQuestion {
			_, err = h.rt.Skip(ctx, it.ID)
		} else {
			_, err = h.rt.Provide(ctx, it.ID, canaryKey)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if len(probe.seen) < 2 || probe.seen[0] != "false:" || probe.seen[len(probe.seen)-1] != "true:"+canaryKey {
		t.Errorf("Secret(OPENAI_API_KEY) per model call = %q", probe.seen)
	}
}

// TestXMLToolProtocol: with tool_protocol: xml, the model is shown the
// tools in its system prompt rather than as tools, and a call written as
// XML in its text runs.
func TestXMLToolProtocol(t *testing.T) {
	dir := t.TempDir()
	sc, err := scripted.Parse(dir+"/script.yaml", []byte(`
agents:
  a:
    fallback:
      steps:
        - text: "Looking. <lookup><q>ganglion</q></lookup>"
        - text: "It says {{ .LastMessage }}"
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{p: sc}
	lookup := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "lookup", Description: "Looks a word up.", Category: pipeline.CategoryRead,
		Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "found " + string(c.Arguments())}, nil
		}}
	cfg := parseConfig(t, dir, "model: {provider: recorded, tool_protocol: xml}\nagents:\n  - name: a\n    tools: [lookup]\n")
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithTool(lookup),
		runtime.WithProvider("recorded", func(config.Model) (model.Provider, error) { return rec, nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("what is ganglion?"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Response.Content, `It says [lookup result]`) || !strings.Contains(res.Response.Content, `found {"q":"ganglion"}`) {
		t.Errorf("response = %q", res.Response.Content)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.seen) != 2 || len(rec.seen[0].Tools) != 0 || !strings.Contains(rec.seen[0].System, "lookup") {
		t.Errorf("the model was offered tools %v; system prompt %q", rec.seen[0].Tools, rec.seen[0].System)
	}
}

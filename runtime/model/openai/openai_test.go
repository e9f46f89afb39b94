package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Chunk constructors for expected sequences.

func text(s string) model.Chunk      { return model.Chunk{Kind: model.KindText, Text: s} }
func reasoning(s string) model.Chunk { return model.Chunk{Kind: model.KindReasoning, Text: s} }
func start(id, name string) model.Chunk {
	return model.Chunk{Kind: model.KindToolCallStart, ToolCallID: id, ToolName: name}
}
func delta(id, args string) model.Chunk {
	return model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: id, ArgumentsDelta: args}
}
func end(id string) model.Chunk { return model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: id} }
func usage(in, out, cached int64) model.Chunk {
	return model.Chunk{Kind: model.KindUsage, Usage: pipeline.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cached}}
}
func failure(kind model.ErrorKind, status int, msg string) model.Chunk {
	return model.Chunk{Kind: model.KindError, Err: &model.Error{Kind: kind, Provider: "openai", Status: status, Message: msg}}
}

// modelError returns the *model.Error err wraps, without its cause, for
// comparisons.
func modelError(t *testing.T, err error) model.Error {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	c := *e
	c.Err = nil
	return c
}

func checkChunks(t *testing.T, got, want []model.Chunk) {
	t.Helper()
	n := max(len(got), len(want))
	for i := range n {
		var g, w model.Chunk
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		ge, we := g.Err, w.Err
		g.Err, w.Err = nil, nil
		same := reflect.DeepEqual(g, w)
		if same && (ge != nil || we != nil) {
			same = ge != nil && we != nil && reflect.DeepEqual(modelError(t, ge), modelError(t, we))
		}
		if !same {
			t.Errorf("chunk %d:\n got %s\nwant %s", i, show(got, i), show(want, i))
		}
	}
}

func show(cs []model.Chunk, i int) string {
	if i >= len(cs) {
		return "(none)"
	}
	c := cs[i]
	s := fmt.Sprintf("%s text=%q id=%q name=%q args=%q usage=%+v", c.Kind, c.Text, c.ToolCallID, c.ToolName, c.ArgumentsDelta, c.Usage)
	if c.Err != nil {
		var e *model.Error
		if errors.As(c.Err, &e) {
			s += fmt.Sprintf(" err={kind=%q status=%d retry=%v msg=%q}", e.Kind, e.Status, e.RetryAfter, e.Message)
		} else {
			s += fmt.Sprintf(" err=%v", c.Err)
		}
	}
	return s
}

// collect receives every chunk of s, then closes it.
func collect(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	defer s.Close()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Recv after %d chunks: %v", len(out), err)
		}
		out = append(out, c)
	}
}

func readRecording(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeSSE streams data event by event, flushing after each.
func writeSSE(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, part := range bytes.SplitAfter(data, []byte("\n\n")) {
		w.Write(part)
		if f != nil {
			f.Flush()
		}
	}
}

// sse builds a stream from event data; an element starting with "event:"
// or ":" is written as it is.
func sse(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		if strings.HasPrefix(e, "event:") || strings.HasPrefix(e, ":") {
			b.WriteString(e)
		} else {
			b.WriteString("data: " + e)
		}
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// replay answers each request with the next of its answers (the last one
// repeats) and records what it received.
type replay struct {
	answers []http.HandlerFunc
	hits    atomic.Int32
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n := int(r.hits.Add(1)) - 1
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	r.answers[min(n, len(r.answers)-1)](w, req)
}

func streaming(data []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeSSE(w, data) }
}

func recording(t testing.TB, name string) http.HandlerFunc { return streaming(readRecording(t, name)) }

func status(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ct := "application/json"
		if strings.HasPrefix(body, "<") {
			ct = "text/html"
		}
		w.Header().Set("Content-Type", ct)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// serve starts a server with the answers and a provider for it.
func serve(t *testing.T, cfg Config, answers ...http.HandlerFunc) (*Provider, *replay) {
	t.Helper()
	r := &replay{answers: answers}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	cfg.HTTPClient = srv.Client()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

func userRequest(text string) *model.Request {
	return &model.Request{Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: text}}}
}

func TestRecordings(t *testing.T) {
	t.Parallel()
	const (
		a = "call_read_8RbsKmV0"
		b = "call_write_3JqVw2Lq"
	)
	cases := []struct {
		file string
		req  *model.Request
		want []model.Chunk
	}{
		{"text.sse", userRequest("hi"), []model.Chunk{
			text("Hello"), text("!"), text(" Café"), text(" ☕"), text(` "quoted"`), text("\nnew line"), text(` \ back`), text(" emoji 😀"),
			usage(19, 10, 0),
		}},
		{"usage_cached.sse", userRequest("hi"), []model.Chunk{
			text("Cached."),
			usage(2006-1920, 300, 1920),
		}},
		{"reasoning_content.sse", userRequest("9.11 or 9.8?"), []model.Chunk{
			reasoning("Okay"), reasoning(", the user"), reasoning(" asks 9.11 vs 9.8."),
			text("9.8"), text(" is larger."),
			usage(18, 120, 0),
		}},
		{"tool_call.sse", userRequest("weather?"), []model.Chunk{
			start("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather"),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `{"`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `location`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `":"`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `Paris`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `,`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", ` France`),
			delta("call_DdmO9pD3xa9XTPNJ32zg2hcA", `"}`),
			end("call_DdmO9pD3xa9XTPNJ32zg2hcA"),
			usage(81, 17, 0),
		}},
		{"tool_calls_interleaved.sse", userRequest("edit"), []model.Chunk{
			start(a, "read_file"),
			start(b, "write_file"),
			delta(a, `{"path": "notes`),
			delta(b, `{"path"`),
			delta(b, ` : "say \`),
			delta(a, `/todo.txt"}`),
			delta(b, `"hi\"", "text": "`+"\xe2\x82"),
			delta(b, "\xac"+` 5"}`),
			end(a), end(b),
			usage(140-128, 58, 128),
		}},
		{"tool_call_no_id.sse", &model.Request{TurnID: "turn-7", Step: 2, Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: "search"}}}, []model.Chunk{
			start("turn-7-call-2-1", "search"),
			delta("turn-7-call-2-1", `{"q":`),
			delta("turn-7-call-2-1", `"go"}`),
			end("turn-7-call-2-1"),
		}},
		{"midstream_error.sse", userRequest("hi"), []model.Chunk{
			text("Partial"), text(" answer"),
			failure(model.ErrorTransient, 0, "The server had an error while processing your request. Sorry about that!"),
		}},
		{"first_event_error.sse", userRequest("hi"), []model.Chunk{
			failure(model.ErrorTransient, 0, "The engine is currently overloaded, please try again later."),
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			p, _ := serve(t, Config{}, recording(t, c.file))
			s, err := p.Stream(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, collect(t, s), c.want)
		})
	}
}

// TestInterleavedArguments checks that the pieces of each call concatenate
// to the exact arguments, although they were cut inside a string, an
// escape, between a key and its colon and inside a UTF-8 character.
func TestInterleavedArguments(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, recording(t, "tool_calls_interleaved.sse"))
	s, err := p.Stream(context.Background(), userRequest("edit"))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, c := range collect(t, s) {
		if c.Kind == model.KindToolCallDelta {
			args[c.ToolCallID] += c.ArgumentsDelta
		}
	}
	want := map[string]string{
		"call_read_8RbsKmV0":  `{"path": "notes/todo.txt"}`,
		"call_write_3JqVw2Lq": `{"path" : "say \"hi\"", "text": "€ 5"}`,
	}
	if !reflect.DeepEqual(args, want) {
		t.Fatalf("arguments = %q, want %q", args, want)
	}
	var v struct{ Path, Text string }
	if err := json.Unmarshal([]byte(args["call_write_3JqVw2Lq"]), &v); err != nil || v.Path != `say "hi"` || v.Text != "€ 5" {
		t.Fatalf("decoded %+v, %v", v, err)
	}
}

func TestGeneratedCallIDWithoutTurn(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, recording(t, "tool_call_no_id.sse"))
	ids := map[string]bool{}
	for range 2 {
		s, err := p.Stream(context.Background(), userRequest("search"))
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, s)
		if len(got) != 4 {
			t.Fatalf("got %d chunks, want 4", len(got))
		}
		id := got[0].ToolCallID
		if !strings.HasPrefix(id, "call_") || len(id) != len("call_")+24 {
			t.Fatalf("generated id %q", id)
		}
		for _, c := range got {
			if c.ToolCallID != id {
				t.Fatalf("chunk %s has id %q, want %q", c.Kind, c.ToolCallID, id)
			}
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Fatalf("two responses got the same generated id: %v", ids)
	}
}

// ev is a chunk event around a delta.
func ev(delta string) string {
	return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

func finish(reason string) string {
	return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

func TestStreamEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		data []byte
		want []model.Chunk
	}{
		{"empty answer", sse("[DONE]"), nil},
		{"reasoning field (OpenRouter, Ollama)", sse(ev(`{"role":"assistant","content":"","reasoning":"Think."}`), ev(`{"content":"Done.","reasoning":null}`), finish("stop"), "[DONE]"),
			[]model.Chunk{reasoning("Think."), text("Done.")}},
		{"both reasoning fields: read once", sse(ev(`{"reasoning_content":"A","reasoning":"A"}`), finish("stop"), "[DONE]"),
			[]model.Chunk{reasoning("A")}},
		{"refusal is text", sse(ev(`{"content":null,"refusal":"I can't help with that."}`), finish("stop"), "[DONE]"),
			[]model.Chunk{text("I can't help with that.")}},
		{"SSE comments and keep-alives", sse(": OPENROUTER PROCESSING", ev(`{"content":"a"}`), ": ping", finish("stop"), "[DONE]"),
			[]model.Chunk{text("a")}},
		{"lone surrogate escape", sse(ev(`{"content":"x\ud83dy \u00e9\u20AC"}`), finish("stop"), "[DONE]"),
			[]model.Chunk{text("x\uFFFDy é€")}},
		{"escaped key", sse(ev(`{"c\u006fntent":"k"}`), finish("stop"), "[DONE]"),
			[]model.Chunk{text("k")}},
		{"arguments before the name", sse(
			ev(`{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{\"a\":"}}]}`),
			ev(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"1}"}}]}`),
			finish("tool_calls"), "[DONE]"),
			[]model.Chunk{start("c1", "f"), delta("c1", `{"a":`), delta("c1", "1}"), end("c1")}},
		{"a call that never gets a name", sse(ev(`{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"{}"}}]}`), finish("tool_calls"), "[DONE]"),
			[]model.Chunk{start("c1", ""), delta("c1", "{}"), end("c1")}},
		{"whole calls without index (Gemini)", sse(
			ev(`{"tool_calls":[{"id":"g1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"g2","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}]}`),
			finish("tool_calls"), "[DONE]"),
			[]model.Chunk{start("g1", "a"), delta("g1", "{}"), start("g2", "b"), delta("g2", `{"x":1}`), end("g1"), end("g2")}},
		{"arguments as an object", sse(ev(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":{"a": [1, "x"]}}}]}`), finish("tool_calls"), "[DONE]"),
			[]model.Chunk{start("c1", "f"), delta("c1", `{"a": [1, "x"]}`), end("c1")}},
		{"calls end at the stream's end without finish_reason", sse(ev(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}`), "[DONE]"),
			[]model.Chunk{start("c1", "f"), delta("c1", "{}"), end("c1")}},
		{"a delta after its call ended is dropped", sse(ev(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}`), finish("tool_calls"),
			ev(`{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}`), "[DONE]"),
			[]model.Chunk{start("c1", "f"), delta("c1", "{}"), end("c1")}},
		{"other choices are ignored", sse(`{"choices":[{"index":1,"delta":{"content":"no","tool_calls":[{"index":0,"id":"z","function":{"name":"z"}}]}},{"delta":{"content":"yes"},"index":0}]}`, finish("stop"), "[DONE]"),
			[]model.Chunk{text("yes")}},
		{"error null is no error", sse(`{"choices":[{"index":0,"delta":{"content":"ok"}}],"error":null}`, finish("stop"), "[DONE]"),
			[]model.Chunk{text("ok")}},
		{"running usage: the last one counts", sse(
			`{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
			`{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`,
			"[DONE]"),
			[]model.Chunk{text("a"), text("b"), usage(10, 2, 0)}},
		{"DeepSeek cache hits", sse(finish("stop"), `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`, "[DONE]"),
			[]model.Chunk{usage(36, 5, 64)}},
		{"no [DONE] after the finish", sse(ev(`{"content":"a"}`), finish("stop")),
			[]model.Chunk{text("a")}},
		{"no [DONE] and no finish", sse(ev(`{"content":"a"}`)),
			[]model.Chunk{text("a"), failure(model.ErrorTransient, 0, "the stream ended before the answer was complete")}},
		{"usage comes before an error", sse(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":0}}`, `{"error":{"message":"boom","type":"server_error"}}`),
			[]model.Chunk{usage(7, 0, 0), failure(model.ErrorTransient, 0, "boom")}},
		{"malformed event", sse(ev(`{"content":"a"}`), `{"choices":[{"index":0,"delta":{"content":"b"`),
			[]model.Chunk{text("a"), failure(model.ErrorOther, 0, "malformed stream event: unexpected end at offset 45")}},
		{"not an object", sse(`"hello"`),
			[]model.Chunk{failure(model.ErrorOther, 0, "malformed stream event: event is not a JSON object at offset 0")}},
		{"SSE error event", sse("event: error\ndata: {\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"),
			[]model.Chunk{failure(model.ErrorTransient, 0, "Overloaded")}},
		{"SSE error event with text", sse("event: error\ndata: upstream timed out"),
			[]model.Chunk{failure(model.ErrorOther, 0, "upstream timed out")}},
		{"vLLM error with a numeric code", sse(`{"error":{"object":"error","message":"bad thing","type":"BadRequestError","param":null,"code":400}}`),
			[]model.Chunk{failure(model.ErrorInvalidRequest, 400, "bad thing")}},
		{"context window error mid-stream", sse(`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`),
			[]model.Chunk{failure(model.ErrorContextWindow, 0, "This model's maximum context length is 8192 tokens.")}},
		{"rate limit mid-stream", sse(`{"error":{"message":"Rate limit reached.","type":"requests","code":"rate_limit_exceeded"}}`),
			[]model.Chunk{failure(model.ErrorRateLimit, 0, "Rate limit reached.")}},
		{"error as a string", sse(ev(`{"content":"a"}`), `{"error":"something broke"}`),
			[]model.Chunk{text("a"), failure(model.ErrorOther, 0, "something broke")}},
		{"OpenRouter error with finish_reason error", sse(ev(`{"content":"a"}`),
			`{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","provider":"X","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
			[]model.Chunk{text("a"), failure(model.ErrorTransient, 502, "Provider returned error")}},
		{"finish_reason error alone", sse(ev(`{"content":"a"}`), finish("error")),
			[]model.Chunk{text("a"), failure(model.ErrorTransient, 0, "the server ended the answer with an error")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, _ := serve(t, Config{}, streaming(c.data))
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, collect(t, s), c.want)
		})
	}
}

const (
	contextWindowBody = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	rateLimitBody     = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	serverErrorBody   = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	authBody          = `{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
)

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer http.HandlerFunc
		want   model.Error
		is     error
	}{
		{"429 with Retry-After", status(429, map[string]string{"Retry-After": "7"}, rateLimitBody),
			model.Error{Kind: model.ErrorRateLimit, Status: 429, RetryAfter: 7 * time.Second, Message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1."}, model.ErrRateLimited},
		{"429 out of quota: waiting does not help", status(429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			model.Error{Kind: model.ErrorAuth, Status: 429, Message: "You exceeded your current quota, please check your plan and billing details."}, model.ErrAuth},
		{"429 with retry-after-ms", status(429, map[string]string{"retry-after-ms": "250"}, rateLimitBody),
			model.Error{Kind: model.ErrorRateLimit, Status: 429, RetryAfter: 250 * time.Millisecond, Message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1."}, model.ErrRateLimited},
		{"500", status(500, nil, serverErrorBody),
			model.Error{Kind: model.ErrorTransient, Status: 500, Message: "The server had an error while processing your request. Sorry about that!"}, model.ErrTransient},
		{"502 with an HTML page", status(502, nil, "<html><body>Bad gateway</body></html>"),
			model.Error{Kind: model.ErrorTransient, Status: 502, Message: "Bad Gateway"}, model.ErrTransient},
		{"401", status(401, nil, authBody),
			model.Error{Kind: model.ErrorAuth, Status: 401, Message: "Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys."}, model.ErrAuth},
		{"403", status(403, nil, `{"error":{"message":"Project does not have access to model gpt-5","type":"invalid_request_error","code":"model_not_found"}}`),
			model.Error{Kind: model.ErrorAuth, Status: 403, Message: "Project does not have access to model gpt-5"}, model.ErrAuth},
		{"404", status(404, nil, `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 404, Message: "The model 'gpt-9' does not exist or you do not have access to it."}, model.ErrInvalidRequest},
		{"400 context window (OpenAI)", status(400, nil, contextWindowBody),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages."}, model.ErrContextWindow},
		{"400 context window (vLLM, top-level)", status(400, nil, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."}, model.ErrContextWindow},
		{"400 context window by code only", status(400, nil, `{"error":{"message":"Too long.","type":"invalid_request_error","code":"context_length_exceeded"}}`),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "Too long."}, model.ErrContextWindow},
		{"400 error as a string", status(400, nil, `{"error":"invalid tool name \"x y\""}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 400, Message: `invalid tool name "x y"`}, model.ErrInvalidRequest},
		{"422 FastAPI detail", status(422, nil, `{"detail":"messages: field required"}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 422, Message: "messages: field required"}, model.ErrInvalidRequest},
		{"200 with a JSON error", status(200, nil, `{"error":{"message":"upstream failed","code":502}}`),
			model.Error{Kind: model.ErrorTransient, Status: 502, Message: "upstream failed"}, model.ErrTransient},
		{"200 with a whole completion", status(200, nil, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`),
			model.Error{Kind: model.ErrorOther, Message: "the server answered in JSON, not with an event stream: does it support streaming?"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, _ := serve(t, Config{}, c.answer)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err == nil {
				s.Close()
				t.Fatal("Stream succeeded")
			}
			c.want.Provider = "openai"
			if got := modelError(t, err); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("error\n got %+v\nwant %+v", got, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("errors.Is(%v, %v) is false", err, c.is)
			}
		})
	}
}

// noSleep is a retry policy that records its waits instead of waiting.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (n *noSleep) policy() model.RetryPolicy {
	return model.RetryPolicy{
		Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.delays = append(n.delays, d)
			return ctx.Err()
		},
	}
}

func TestWithRetry(t *testing.T) {
	t.Parallel()
	textChunks := []model.Chunk{
		text("Hello"), text("!"), text(" Café"), text(" ☕"), text(` "quoted"`), text("\nnew line"), text(` \ back`), text(" emoji 😀"),
		usage(19, 10, 0),
	}
	cases := []struct {
		name    string
		answers []http.HandlerFunc
		hits    int
		delays  []time.Duration
		wantErr model.ErrorKind // when the call fails
		fails   bool
	}{
		{"429 then success", []http.HandlerFunc{status(429, map[string]string{"Retry-After": "3"}, rateLimitBody), recording(t, "text.sse")},
			2, []time.Duration{3 * time.Second}, 0, false},
		{"500 then success", []http.HandlerFunc{status(500, nil, serverErrorBody), recording(t, "text.sse")},
			2, []time.Duration{500 * time.Millisecond}, 0, false},
		{"error event first then success", []http.HandlerFunc{recording(t, "first_event_error.sse"), recording(t, "text.sse")},
			2, []time.Duration{500 * time.Millisecond}, 0, false},
		{"401 is not retried", []http.HandlerFunc{status(401, nil, authBody), recording(t, "text.sse")},
			1, nil, model.ErrorAuth, true},
		{"context window is not retried", []http.HandlerFunc{status(400, nil, contextWindowBody), recording(t, "text.sse")},
			1, nil, model.ErrorContextWindow, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, r := serve(t, Config{}, c.answers...)
			var ns noSleep
			rp := model.WithRetry(p, ns.policy())
			s, err := rp.Stream(context.Background(), userRequest("hi"))
			if c.fails {
				if err == nil {
					s.Close()
					t.Fatal("Stream succeeded")
				}
				if k := model.KindOf(err); k != c.wantErr {
					t.Fatalf("kind %v, want %v (%v)", k, c.wantErr, err)
				}
				if c.wantErr == model.ErrorContextWindow && !errors.Is(err, model.ErrContextWindow) {
					t.Fatalf("errors.Is(%v, ErrContextWindow) is false", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				checkChunks(t, collect(t, s), textChunks)
			}
			if n := int(r.hits.Load()); n != c.hits {
				t.Errorf("server hit %d times, want %d", n, c.hits)
			}
			if !reflect.DeepEqual(ns.delays, c.delays) {
				t.Errorf("waits %v, want %v", ns.delays, c.delays)
			}
		})
	}
}

func TestRequestBody(t *testing.T) {
	t.Parallel()
	req := &model.Request{
		Model:           "gpt-4o-mini",
		System:          "You are helpful.",
		MaxOutputTokens: 256,
		Messages: pipeline.MessageSlice{
			{Role: pipeline.RoleUser, Content: "What's in notes/todo.txt?"},
			{Role: pipeline.RoleAssistant, Content: "Let me look.", Reasoning: "private thoughts", ToolCalls: []pipeline.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"notes/todo.txt"}`)},
				{ID: "call_2", Name: "list_dir"},
			}},
			{Role: pipeline.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "buy milk"},
			{Role: pipeline.RoleTool, ToolCallID: "call_2", Name: "list_dir", Content: "todo.txt"},
			{Role: pipeline.RoleSystem, Content: "Reminder: be brief.", Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: "reminder"}},
			{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{{ID: "call_3", Name: "read_file", Arguments: json.RawMessage(`{"path":`)}}},
			{Role: pipeline.RoleTool, ToolCallID: "call_3", Content: `tool "read_file" failed: bad arguments`, IsError: true},
			{Role: pipeline.RoleUser, Content: "Thanks"},
		},
		Tools: []pipeline.Tool{
			{ToolSpec: pipeline.ToolSpec{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string", "description": "File path", "maxLength": 1e3}}, "required": ["path"]}`)}},
			{ToolSpec: pipeline.ToolSpec{Name: "list_dir"}},
		},
	}
	want := `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You are helpful."},
			{"role": "user", "content": "What's in notes/todo.txt?"},
			{"role": "assistant", "content": "Let me look.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes/todo.txt\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "buy milk"},
			{"role": "tool", "tool_call_id": "call_2", "content": "todo.txt"},
			{"role": "system", "content": "Reminder: be brief."},
			{"role": "assistant", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}
			]},
			{"role": "tool", "tool_call_id": "call_3", "content": "tool \"read_file\" failed: bad arguments"},
			{"role": "user", "content": "Thanks"}
		],
		"tools": [
			{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
				"parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "File path", "maxLength": 1e3}}, "required": ["path"]}}},
			{"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object", "properties": {}}}}
		],
		"MAXFIELD": 256,
		"stream": true,
		"stream_options": {"include_usage": true}
	}`
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"other servers get max_tokens", Config{APIKeyEnv: "GANGLION_TEST_OPENAI_KEY_BODY"}, "max_tokens"},
		{"max_completion_tokens on demand", Config{APIKeyEnv: "GANGLION_TEST_OPENAI_KEY_BODY", MaxTokensField: MaxCompletionTokens}, "max_completion_tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, r := serve(t, c.cfg, recording(t, "text.sse"))
			rq := *req
			rq.Secret = func(name string) (string, bool) {
				if name == "GANGLION_TEST_OPENAI_KEY_BODY" {
					return "sk-test-123", true
				}
				return "", false
			}
			s, err := p.Stream(context.Background(), &rq)
			if err != nil {
				t.Fatal(err)
			}
			collect(t, s)
			var got, exp map[string]any
			if err := json.Unmarshal(r.bodies[0], &got); err != nil {
				t.Fatalf("body %s: %v", r.bodies[0], err)
			}
			if err := json.Unmarshal([]byte(strings.Replace(want, "MAXFIELD", c.field, 1)), &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				g, _ := json.MarshalIndent(got, "", "  ")
				e, _ := json.MarshalIndent(exp, "", "  ")
				t.Errorf("request body\n got %s\nwant %s", g, e)
			}
			// Below its top level, a schema goes out byte for byte.
			if sub := `{"path": {"type": "string", "description": "File path", "maxLength": 1e3}}`; !bytes.Contains(r.bodies[0], []byte(sub)) {
				t.Errorf("the schema's properties were re-encoded: %s", r.bodies[0])
			}
			h := r.headers[0]
			if got := h.Get("Authorization"); got != "Bearer sk-test-123" {
				t.Errorf("Authorization = %q", got)
			}
			if got := h.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := r.paths[0]; got != "POST /v1/chat/completions" {
				t.Errorf("request %q", got)
			}
		})
	}
}

func TestModelAndBoundDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		req  *model.Request
		want map[string]any // fields of the body; nil value: absent
	}{
		{"config model and bound", Config{Model: "llama3.2", MaxOutputTokens: 100}, userRequest("hi"),
			map[string]any{"model": "llama3.2", "max_tokens": 100.0, "max_completion_tokens": nil}},
		{"the request's win", Config{Model: "llama3.2", MaxOutputTokens: 100}, &model.Request{Model: "qwen3", MaxOutputTokens: 7},
			map[string]any{"model": "qwen3", "max_tokens": 7.0}},
		{"no bound", Config{Model: "llama3.2"}, userRequest("hi"),
			map[string]any{"max_tokens": nil, "max_completion_tokens": nil, "tools": nil}},
		{"no system prompt, no history", Config{Model: "m"}, &model.Request{},
			map[string]any{"messages": []any{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, r := serve(t, c.cfg, recording(t, "text.sse"))
			s, err := p.Stream(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			collect(t, s)
			var got map[string]any
			if err := json.Unmarshal(r.bodies[0], &got); err != nil {
				t.Fatal(err)
			}
			for k, w := range c.want {
				g, ok := got[k]
				if w == nil {
					if ok {
						t.Errorf("%s = %v, want none", k, g)
					}
					continue
				}
				if k == "messages" && g == nil {
					g = []any{}
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s = %#v, want %#v", k, g, w)
				}
			}
			if h := r.headers[0].Get("Authorization"); h != "" {
				t.Errorf("Authorization %q sent without a key configured", h)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	p, r := serve(t, Config{Model: ""}, recording(t, "text.sse"))
	p.cfg.Model = ""
	cases := []struct {
		name string
		req  *model.Request
		want model.Error
	}{
		{"no model", userRequest("hi"), model.Error{Kind: model.ErrorInvalidRequest, Provider: "openai", Message: "no model: the request and the provider's config name none"}},
		{"schema not an object", &model.Request{Model: "m", Tools: []pipeline.Tool{{ToolSpec: pipeline.ToolSpec{Name: "t", Parameters: json.RawMessage(`[1]`)}}}},
			model.Error{Kind: model.ErrorInvalidRequest, Provider: "openai", Message: `tool "t": parameters schema is not a JSON object`}},
		{"unknown role", &model.Request{Model: "m", Messages: pipeline.MessageSlice{{Role: "robot"}}},
			model.Error{Kind: model.ErrorInvalidRequest, Provider: "openai", Message: `message 0: unknown role "robot"`}},
	}
	for _, c := range cases {
		_, err := p.Stream(context.Background(), c.req)
		if err == nil {
			t.Fatalf("%s: Stream succeeded", c.name)
		}
		if got := modelError(t, err); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	if n := r.hits.Load(); n != 0 {
		t.Fatalf("server hit %d times", n)
	}
}

// TestAPIKey is not parallel: it sets environment variables.
func TestAPIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-must-not-be-sent")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/must-not-be-used")
	t.Setenv("GANGLION_TEST_OPENAI_KEY_ENV", "sk-from-env")
	t.Setenv("GANGLION_TEST_OPENAI_KEY_EMPTY", "")
	secret := func(name string) (string, bool) {
		if name == "GANGLION_TEST_OPENAI_KEY_EMPTY" {
			return "sk-from-secret", true
		}
		return "", false
	}
	cases := []struct {
		name   string
		env    string
		secret func(string) (string, bool)
		auth   string
		err    string
	}{
		{"from the environment", "GANGLION_TEST_OPENAI_KEY_ENV", secret, "Bearer sk-from-env", ""},
		{"from the secret", "GANGLION_TEST_OPENAI_KEY_EMPTY", secret, "Bearer sk-from-secret", ""},
		{"none needed", "", secret, "", ""},
		{"missing", "GANGLION_TEST_OPENAI_KEY_UNSET", secret, "", "openai: authentication failed: no API key: set GANGLION_TEST_OPENAI_KEY_UNSET or provide it"},
		{"missing, no secret function", "GANGLION_TEST_OPENAI_KEY_UNSET", nil, "", "openai: authentication failed: no API key: set GANGLION_TEST_OPENAI_KEY_UNSET or provide it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, r := serve(t, Config{APIKeyEnv: c.env}, recording(t, "text.sse"))
			req := userRequest("hi")
			req.Secret = c.secret
			s, err := p.Stream(context.Background(), req)
			if c.err != "" {
				if err == nil || err.Error() != c.err || !errors.Is(err, model.ErrAuth) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				if n := r.hits.Load(); n != 0 {
					t.Fatalf("server hit %d times", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			collect(t, s)
			h := r.headers[0]
			if got := h.Get("Authorization"); got != c.auth {
				t.Fatalf("Authorization = %q, want %q", got, c.auth)
			}
		})
	}
}

// TestKeyNeverInErrors triggers every error path with a canary key, from
// servers that echo the key back, and checks that no error text holds it.
func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const canary = "sk-canary-5f0c2a9e7b41d3"
	echo := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (%s)","type":"invalid_request_error","code":"%s"}}`, key, strings.TrimPrefix(key, "Bearer "), strings.TrimPrefix(key, "Bearer "))
		}
	}
	echoStream := func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		writeSSE(w, sse(ev(`{"content":"a"}`), `{"error":{"message":"failed for key `+key+`","type":"server_error","code":"`+key+`"}}`))
	}
	echoEvent := func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, []byte("event: error\ndata: "+r.Header.Get("Authorization")+"\n\n"))
	}
	echoJSON := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":"%s","code":502}}`, r.Header.Get("Authorization"))
	}
	drop := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	handlers := map[string]http.HandlerFunc{
		"401": echo(401), "429": echo(429), "500": echo(500), "400": echo(400), "413": echo(413),
		"400 context window": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"object":"error","message":"maximum context length exceeded for %s","code":400}`, r.Header.Get("Authorization"))
		},
		"mid-stream error": echoStream, "SSE error event": echoEvent, "200 JSON error": echoJSON, "connection drop": drop,
	}
	var paths []string
	var errs []error
	var mu sync.Mutex
	keyEnv := "GANGLION_TEST_OPENAI_CANARY"
	secret := func(name string) (string, bool) { return canary, name == keyEnv }
	var wg sync.WaitGroup
	for name, h := range handlers {
		wg.Add(1)
		p, r := serve(t, Config{APIKeyEnv: keyEnv}, h)
		go func() {
			defer wg.Done()
			req := userRequest("hi")
			req.Secret = secret
			var err error
			s, serr := p.Stream(context.Background(), req)
			if serr != nil {
				err = serr
			} else {
				for {
					c, rerr := s.Recv()
					if rerr != nil {
						if rerr != io.EOF {
							err = rerr
						}
						break
					}
					if c.Kind == model.KindError {
						err = c.Err
					}
				}
				s.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			paths = append(paths, name)
			errs = append(errs, err)
			if auth := r.headers[0].Get("Authorization"); auth != "Bearer "+canary {
				t.Errorf("%s: the canary key was not sent (Authorization %q)", name, auth)
			}
		}()
	}
	// A refused connection.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := New(Config{BaseURL: "http://" + addr + "/v1", Model: "m", APIKeyEnv: keyEnv})
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("hi")
	req.Secret = secret
	_, rerr := p.Stream(context.Background(), req)
	if model.KindOf(rerr) != model.ErrorTransient {
		t.Errorf("refused connection: %v is not transient", rerr)
	}
	wg.Wait()
	paths = append(paths, "refused connection")
	errs = append(errs, rerr)

	for i, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", paths[i])
			continue
		}
		t.Logf("%s: %v", paths[i], err)
		for e := err; e != nil; e = errors.Unwrap(e) {
			for _, text := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
				if strings.Contains(text, canary) {
					t.Errorf("%s: the key is in the error: %s", paths[i], text)
				}
			}
		}
		if me := modelError(t, err); !strings.Contains(me.Message, "[redacted]") && paths[i] != "connection drop" && paths[i] != "refused connection" {
			t.Errorf("%s: message %q does not show the redaction", paths[i], me.Message)
		}
	}
}

func TestConnectionDrop(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cut the connection, mid-stream
	})
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != 2 || got[0] != text("a") || got[1].Kind != model.KindError {
		t.Fatalf("chunks %v", got)
	}
	e := modelError(t, got[1].Err)
	if e.Kind != model.ErrorTransient || !strings.HasPrefix(e.Message, "stream interrupted: ") {
		t.Fatalf("error %+v", e)
	}
}

func TestConnectionDropAfterFinish(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\ndata: "+finish("stop")+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, collect(t, s), []model.Chunk{text("a")})
}

func TestRefusedConnection(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := New(Config{BaseURL: "http://" + addr + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), userRequest("hi"))
	e := modelError(t, err)
	if e.Kind != model.ErrorTransient || e.Status != 0 || !strings.HasPrefix(e.Message, "connecting to the server: ") || !strings.Contains(e.Message, "refused") {
		t.Fatalf("error %+v", e)
	}
	if strings.Contains(e.Message, "http://") {
		t.Fatalf("the message holds the URL: %q", e.Message)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	t.Run("done before the call", func(t *testing.T) {
		t.Parallel()
		p, r := serve(t, Config{}, recording(t, "text.sse"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := p.Stream(ctx, userRequest("hi")); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v", err)
		}
		if r.hits.Load() != 0 {
			t.Fatal("the server was called")
		}
	})
	t.Run("cancelled while waiting for headers", func(t *testing.T) {
		t.Parallel()
		p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) || model.KindOf(err) != model.ErrorOther {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("caller's deadline", func(t *testing.T) {
		t.Parallel()
		p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.DeadlineExceeded) || model.KindOf(err) != model.ErrorOther {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("request timeout is transient", func(t *testing.T) {
		t.Parallel()
		p, _ := serve(t, Config{RequestTimeout: 50 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		_, err := p.Stream(context.Background(), userRequest("hi"))
		if e := modelError(t, err); e.Kind != model.ErrorTransient || e.Message != "connecting to the server: request timed out" {
			t.Fatalf("error %+v", e)
		}
	})
	t.Run("cancelled mid-stream", func(t *testing.T) {
		t.Parallel()
		p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := p.Stream(ctx, userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if c, err := s.Recv(); err != nil || c != text("a") {
			t.Fatalf("first chunk %v, %v", c, err)
		}
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = s.Recv()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv error %v", err)
		}
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	released := make(chan struct{})
	p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(released)
	})
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Recv(); err != nil || c != text("a") {
		t.Fatalf("first chunk %v, %v", c, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the connection")
	}
	for range 2 {
		if _, err := s.Recv(); err == nil {
			t.Fatal("Recv after Close succeeded")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Close at once, and after the end.
	p2, _ := serve(t, Config{}, recording(t, "text.sse"))
	for _, reads := range []int{0, 100} {
		s, err := p2.Stream(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		for range reads {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
		s.Close()
		if _, err := s.Recv(); err == nil {
			t.Fatal("Recv after Close succeeded")
		}
	}
}

func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, recording(t, "tool_calls_interleaved.sse"))
	var wg sync.WaitGroup
	var count atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 5 {
				s, err := p.Stream(context.Background(), userRequest("edit"))
				if err != nil {
					t.Error(err)
					return
				}
				got := collect(t, s)
				if len(got) != 11 || got[len(got)-1].Kind != model.KindUsage {
					t.Errorf("got %d chunks", len(got))
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if count.Load() != 40 {
		t.Fatalf("%d streams", count.Load())
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{BaseURL: "localhost:11434/v1"}, `openai: base URL "localhost:11434/v1" is not an absolute http or https URL`},
		{Config{BaseURL: "ftp://x/v1"}, `openai: base URL "ftp://x/v1" is not an absolute http or https URL`},
		{Config{BaseURL: "https://user:sk-secret@example.com/v1"}, "openai: base URL must not hold credentials: give the key through api_key_env"},
		{Config{MaxTokensField: "max"}, `openai: unknown max tokens field "max" (want "max_completion_tokens" or "max_tokens")`},
		{Config{MaxOutputTokens: -1}, "openai: max output tokens -1 is negative"},
		{Config{Headers: map[string]string{"authorization": "Bearer x"}}, "openai: the Authorization header comes from api_key_env, not from headers"},
	} {
		_, err := New(c.cfg)
		if err == nil || err.Error() != c.err {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.err)
		}
	}
	for _, c := range []struct {
		cfg        Config
		completion bool
	}{
		{Config{}, true},
		{Config{BaseURL: "https://api.openai.com/v1/"}, true},
		{Config{BaseURL: "http://localhost:11434/v1"}, false},
		{Config{BaseURL: "http://localhost:11434/v1", MaxTokensField: MaxCompletionTokens}, true},
		{Config{MaxTokensField: MaxTokens}, false},
	} {
		p, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.completion != c.completion {
			t.Errorf("New(%+v): max_completion_tokens %v, want %v", c.cfg, p.completion, c.completion)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	p, r := serve(t, Config{Headers: map[string]string{"HTTP-Referer": "https://ganglion.dev", "X-Title": "Ganglion"}}, recording(t, "text.sse"))
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	if h := r.headers[0]; h.Get("HTTP-Referer") != "https://ganglion.dev" || h.Get("X-Title") != "Ganglion" {
		t.Fatalf("headers %v", h)
	}
}

// TestBenchStream checks that the benchmark's stream decodes to what it
// holds.
func TestBenchStream(t *testing.T) {
	t.Parallel()
	data := benchStream(64 << 10)
	p, err := New(Config{BaseURL: "http://bench.invalid/v1", Model: "m", HTTPClient: &http.Client{Transport: memTransport{data}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Stream(context.Background(), benchReq)
	if err != nil {
		t.Fatal(err)
	}
	var txt, args strings.Builder
	var kinds [8]int
	for _, c := range collect(t, s) {
		kinds[c.Kind]++
		txt.WriteString(c.Text)
		args.WriteString(c.ArgumentsDelta)
	}
	if kinds[model.KindToolCallStart] != 1 || kinds[model.KindToolCallEnd] != 1 || kinds[model.KindUsage] != 1 || kinds[model.KindError] != 0 {
		t.Fatalf("chunk kinds %v", kinds)
	}
	if !strings.HasPrefix(txt.String(), ` the model streams tokens, one at a time. Ünïcödé "quoted"`+"\n") {
		t.Fatalf("text %q", txt.String()[:80])
	}
	if !strings.HasPrefix(args.String(), `{"path": "notes/1.txt", {"path": "notes/2.txt", `) {
		t.Fatalf("arguments %q", args.String()[:80])
	}
}

// FuzzParser checks that the scanner never panics nor loops on any input,
// and that it decodes strings as encoding/json does.
func FuzzParser(f *testing.F) {
	for _, name := range []string{"text.sse", "tool_calls_interleaved.sse", "reasoning_content.sse", "midstream_error.sse"} {
		for _, line := range bytes.Split(readRecording(f, name), []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				f.Add(d)
			}
		}
	}
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t"}}]}`))
	f.Add([]byte(`{"error":{"message":"x","code":429}}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"\ud83d"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p parser
		var ev wireEvent
		p.reset(data)
		p.event(&ev)
		var w wireError
		p.reset(data)
		p.errorBody(&w)
		// Strings: what the scanner reads is what encoding/json reads, for
		// valid UTF-8 (encoding/json replaces invalid bytes; the scanner
		// keeps them).
		if !utf8.Valid(data) {
			return
		}
		var want string
		if json.Unmarshal(data, &want) != nil || !json.Valid(data) {
			return
		}
		p.reset(data)
		got := p.str()
		if p.err != nil || got != want {
			t.Fatalf("str(%q) = %q (%v), want %q", data, got, p.err, want)
		}
	})
}

// TestParser runs the scanner on odd and malformed events.
func TestParser(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want wireEvent
		err  string
	}{
		{in: ` { "choices" : [ { "delta" : { "content" : "a" } , "index" : 0 } ] } `, want: wireEvent{content: "a"}},
		{in: `{"x":[1,-2.5e+3,true,false,null,{"y":"}]\"{"},[[]]],"choices":null,"usage":null,"error":null}`},
		{in: `{"choices":[{"index":1e0,"delta":{"content":"one"}}]}`},
		{in: `{"choices":[{"index":-1,"delta":{"content":"neg"}}]}`},
		{in: `{"choices":[{"index":"0","delta":{"content":"str index"}}]}`, want: wireEvent{content: "str index"}},
		{in: `{"choices":[{"delta":{"content":5,"reasoning":{"x":1},"tool_calls":{"a":1}}}]}`},
		{in: `{"choices":[{"delta":{"tool_calls":[{"index":null,"id":"a","function":{"name":"n","arguments":null,"x":1},"type":"function"},5]}}]}`,
			want: wireEvent{calls: []callDelta{{id: "a", name: "n"}, {}}}},
		{in: `{"choices":[],"usage":{"prompt_tokens":12345678901234567890,"completion_tokens":3.0,"prompt_tokens_details":null,"x":[]}}`,
			want: wireEvent{hasUsage: true, usage: wireUsage{prompt: math.MaxInt64, completion: 3}}},
		{in: `{"error":{"message":{"text":"m"},"code":"x","type":"t","status":"503","param":null}}`,
			want: wireEvent{err: wireError{present: true, message: `{"text":"m"}`, code: "x", typ: "t", status: 503}}},
		{in: `{"error":{"status":429}}`, want: wireEvent{err: wireError{present: true, status: 429}}},
		{in: `{"error":42}`, want: wireEvent{err: wireError{present: true}}},
		{in: `{"error":[]}`, want: wireEvent{err: wireError{present: true}}},
		{in: ``, err: "event is not a JSON object at offset 0"},
		{in: `{`, err: "unexpected end at offset 1"},
		{in: `{"a" 1}`, err: "expected ':' at offset 5"},
		{in: `{"a":1 "b":2}`, err: "expected ',' or '}' at offset 7"},
		{in: `{"a":1}x`, err: "data after the event at offset 7"},
		{in: `{"a":"b`, err: "unterminated string at offset 5"},
		{in: `{"a":"b\"`, err: "unterminated string at offset 5"},
		{in: `{"a":tru}`, err: "bad literal at offset 5"},
		{in: `{"a":[1,2`, err: "unterminated value at offset 9"},
		{in: `{"a":[1,2}`, err: "unexpected end at offset 10"},
		{in: `{"a":@}`, err: "unexpected character at offset 5"},
		{in: `{1:2}`, err: "expected a string at offset 1"},
		{in: `{"choices":[{"delta":{"content":"\x"}}]}`, err: "bad escape at offset 36"},
		{in: `{"choices":[{"delta":{"content":"\u12"}}]}`, err: "bad \\u escape at offset 38"},
		{in: `{"choices":[{"delta":{"content":"\uzzzz"}}]}`, err: "bad \\u escape at offset 40"},
		{in: `{"usage":{"prompt_tokens":1.2.3}}`, err: "bad number at offset 31"},
		{in: `{"usage":{"prompt_tokens":-1e999}}`, want: wireEvent{hasUsage: true, usage: wireUsage{prompt: math.MinInt64}}},
	}
	for _, c := range cases {
		var p parser
		var ev wireEvent
		p.reset([]byte(c.in))
		p.event(&ev)
		if c.err != "" {
			if p.err == nil || p.err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.in, p.err, c.err)
			}
			continue
		}
		if p.err != nil {
			t.Errorf("%s: %v", c.in, p.err)
			continue
		}
		if len(ev.calls) == 0 {
			ev.calls = nil
		}
		if !reflect.DeepEqual(ev, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.in, ev, c.want)
		}
	}
}

func TestCleanMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000) // 4000 bytes
	got := clean("  "+long+"  ", "")
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > maxMessage+len("…") {
		t.Fatalf("clean cut %d bytes to %d: %q…", len(long), len(got), got[:20])
	}
	if got := clean("key abcd in abcd", "abcd"); got != "key [redacted] in [redacted]" {
		t.Fatalf("redacted %q", got)
	}
	if got := clean("a b c", "a"); got != "a b c" {
		t.Fatalf("a one-letter key garbled the message: %q", got)
	}
}

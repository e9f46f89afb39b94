package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of the stream: recorded answers, tool call assembly, edge cases,
// cancellation and Close.

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
			`{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","provider":"X","error":{"code":502,"message":"provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
			[]model.Chunk{text("a"), failure(model.ErrorTransient, 502, "provider returned error")}},
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

// TestBenchStream checks that the benchmark's stream decodes to what it
// holds.
func TestBenchStream(t *testing.T) {
	t.Parallel()
	data := benchStream(64 << 10)
	p, err := build(Config{BaseURL: "http://bench.invalid/v1", Model: "m", HTTPClient: &http.Client{Transport: memTransport{data}}})
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

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/server"
)

const testConfig = `model: {provider: scripted, script: script.yaml}
workspace: workspace
agents:
  - name: a
    tools: [execute_command]
    extensions: [{name: protocol}]
  - name: b
`

const testScript = `
agents:
  a:
    turns:
      - match: "ask me"
        steps:
          - text: "[USER_QUESTION]\ncategory: choice\nquestion: Which way?\noptions: [Left, Right]\nrequired: true\n[/USER_QUESTION]"
      - match: "go slow"
        steps:
          - text: "[USER_QUESTION]\ncategory: choice\nquestion: Slow or fast?\noptions: [Slow, Fast]\nrequired: true\n[/USER_QUESTION]"
      - match: "Slow or fast.*Slow"
        steps:
          - tool_calls: [{name: execute_command, id: s1, args: {command: 'sleep 1'}}]
          - text: "slowly done"
      - match: "Answer to your question"
        steps: [{text: "You chose {{ .Input }}"}]
      - match: "need a key"
        steps:
          - text: "[DEPENDENCY_REQUEST]\ntype: api_key\nname: SERVICE_TOKEN\ndescription: for the service\nrequired: true\n[/DEPENDENCY_REQUEST]"
      - match: "SERVICE_TOKEN"
        steps:
          - tool_calls: [{name: execute_command, id: c1, args: {command: 'printf "%s bytes" "${#SERVICE_TOKEN}"'}}]
          - text: "The tool says: {{ .LastMessage }}"
    fallback:
      steps: [{text: "echo {{ .Input }}"}]
  b:
    fallback:
      steps: [{text: "b here"}]
`

// harness is a runtime and its API, over HTTP on loopback.
type harness struct {
	t   *testing.T
	rt  *runtime.Runtime
	srv *server.Server
	ts  *httptest.Server
}

const token = "test-token"

func newHarness(t *testing.T, opts ...server.Option) *harness {
	t.Helper()
	return newHarnessOn(t, []runtime.Option{runtime.WithMemoryStore()}, opts...)
}

// newHarnessOn is newHarness with the runtime's store options.
func newHarnessOn(t *testing.T, storeOpts []runtime.Option, opts ...server.Option) *harness {
	t.Helper()
	return newHarnessConfig(t, testConfig, storeOpts, opts...)
}

// newHarnessConfig is newHarnessOn with a config of its own.
func newHarnessConfig(t *testing.T, cfg string, storeOpts []runtime.Option, opts ...server.Option) *harness {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(testScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(c), runtime.WithoutExpiryTimer(),
		runtime.WithSecretKey(bytes.Repeat([]byte{7}, 32))}, storeOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(rt, append([]server.Option{server.WithToken(token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		rt.Close()
	})
	return &harness{t: t, rt: rt, srv: srv, ts: ts}
}

// call makes an API call with the token and returns the status and body.
func (h *harness) call(method, path, body string, header ...string) (int, string) {
	h.t.Helper()
	req := h.request(method, path, body)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, b := h.do(req)
	return res.StatusCode, b
}

// request is an API call with the token.
func (h *harness) request(method, path, body string) *http.Request {
	h.t.Helper()
	req, err := http.NewRequest(method, h.ts.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// do makes req and returns the answer, its body read and closed.
func (h *harness) do(req *http.Request) (*http.Response, string) {
	h.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// stream opens an event stream of path with the token, from after the
// event lastID if it is not "". A stream that never shows what a test
// waits for fails it within 20 s rather than hang: cancel ends it sooner.
func (h *harness) stream(path, lastID string) (*http.Response, context.CancelFunc) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	return res, cancel
}

// decode decodes body into v, failing the test on error.
func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
}

type item struct {
	ID, Kind, Status string
	Open             bool
	Answer           string
	Request          json.RawMessage
}

// TestAPI: a message gets the turn's result; a question pauses the turn,
// shows in the pending items and is answered over the API, which resumes
// the turn; the history, usage, instances and agents read back.
func TestAPI(t *testing.T) {
	h := newHarness(t)
	code, body := h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "hello"}`)
	var sent struct {
		Result struct {
			FinishReason string `json:"finish_reason"`
			Response     struct{ Content string }
		}
	}
	decode(t, body, &sent)
	if code != 200 || sent.Result.FinishReason != "text_response" || sent.Result.Response.Content != "echo hello" {
		t.Fatalf("message = %d %s", code, body)
	}

	code, body = h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "ask me"}`)
	decode(t, body, &sent)
	if code != 200 || sent.Result.FinishReason != "paused" {
		t.Fatalf("question = %d %s", code, body)
	}
	code, body = h.call("GET", "/v1/pending", "")
	var list struct{ Items []item }
	decode(t, body, &list)
	if code != 200 || len(list.Items) != 1 || list.Items[0].Kind != "question" || !list.Items[0].Open || !strings.Contains(string(list.Items[0].Request), "Which way?") {
		t.Fatalf("pending = %d %s", code, body)
	}
	id := list.Items[0].ID

	// A message to the paused instance is refused, with what to do.
	code, body = h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "hello?"}`)
	if code != 409 || !strings.Contains(body, `"code":"paused"`) || !strings.Contains(body, id) {
		t.Errorf("message to a paused instance = %d %s", code, body)
	}
	// A wrong answer is refused and changes nothing.
	code, body = h.call("POST", "/v1/pending/"+id+"/answer", `{"answer": "Up"}`)
	if code != 400 || !strings.Contains(body, `"code":"invalid_action"`) || !strings.Contains(body, "Left") {
		t.Errorf("wrong answer = %d %s", code, body)
	}
	code, body = h.call("POST", "/v1/pending/"+id+"/answer", `{"answer": "left"}`)
	var acted struct {
		Item   item
		Result struct{ Response struct{ Content string } }
	}
	decode(t, body, &acted)
	if code != 200 || acted.Item.Status != "answered" || acted.Item.Open || !strings.Contains(acted.Result.Response.Content, "Left") {
		t.Fatalf("answer = %d %s", code, body)
	}
	code, body = h.call("POST", "/v1/pending/"+id+"/answer", `{"answer": "left"}`)
	if code != 409 || !strings.Contains(body, `"code":"already_resolved"`) {
		t.Errorf("second answer = %d %s", code, body)
	}

	code, body = h.call("GET", "/v1/agents/a/instances/k/history", "")
	var hist struct {
		Messages []struct{ Role, Content string }
	}
	decode(t, body, &hist)
	if code != 200 || len(hist.Messages) != 6 || hist.Messages[0].Content != "hello" || !strings.Contains(hist.Messages[5].Content, "You chose") {
		t.Errorf("history = %d %s", code, body)
	}
	for path, want := range map[string]string{
		"/v1/agents/a/instances/k/history?effective=true": `"messages":[`,
		"/v1/agents/a/instances/k/usage":                  `"usage":{`,
		"/v1/agents/a/instances":                          `{"instances":["k"]}`,
		"/v1/agents":                                      `{"agents":[{"name":"a","tools":["execute_command"]},{"name":"b","tools":[]}],"teams":[]}`,
		"/v1/tasks":                                       `{"tasks":[]}`,
		"/v1/pending/" + id:                               `"status":"answered"`,
		"/v1/pending?all=true&agent=a":                    `"id":"` + id + `"`,
	} {
		if code, body := h.call("GET", path, ""); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %s, want it to contain %s", path, code, body, want)
		}
	}
}

// TestAPIErrors: each refusal has its code, status and a message that
// says what to do.
func TestAPIErrors(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name, method, path, body string
		noToken                  bool
		status                   int
		code, msg                string
	}{
		{"no token", "GET", "/v1/agents", "", true, 401, "unauthorized", "Authorization: Bearer TOKEN"},
		{"health needs no token", "GET", "/v1/health", "", true, 200, "", `{"status":"ok"}`},
		{"readiness needs no token", "GET", "/v1/ready", "", true, 200, "", `{"status":"ready"}`},
		{"unknown agent", "POST", "/v1/agents/zed/instances/k/messages", `{"text": "hi"}`, false, 404, "unknown_agent", `unknown agent \"zed\" (agents: a, b)`},
		{"empty text", "POST", "/v1/agents/a/instances/k/messages", `{"text": " "}`, false, 400, "invalid_request", `"text\" is empty`},
		{"unknown field", "POST", "/v1/agents/a/instances/k/messages", `{"txt": "hi"}`, false, 400, "invalid_request", `unknown field \"txt\"`},
		{"not JSON", "POST", "/v1/agents/a/instances/k/messages", `hi`, false, 400, "invalid_request", "not the JSON this call takes"},
		{"a second value", "POST", "/v1/agents/b/instances/k/messages", `{"text":"x"} {"text":"y"}`, false, 400, "invalid_request",
			`the request's body has more after its JSON value, at offset 13: send one JSON object`},
		{"trailing garbage", "POST", "/v1/agents/b/instances/k/messages", "{\"text\":\"x\"}\n\tx", false, 400, "invalid_request",
			`the request's body has more after its JSON value, at offset 14: send one JSON object`},
		{"a second value on an action", "POST", "/v1/pending/q_nope/answer", `{"answer": "x"}{}`, false, 400, "invalid_request",
			`the request's body has more after its JSON value, at offset 15: send one JSON object`},
		{"a value in pieces", "POST", "/v1/agents/b/instances/k/messages", `{"text":"x"}]`, false, 400, "invalid_request",
			`the request's body has more after its JSON value, at offset 12: send one JSON object`},
		{"too large", "POST", "/v1/agents/a/instances/k/messages", `{"text": "` + strings.Repeat("x", 1<<20) + `"}`, false, 413, "too_large", "over 1048576 bytes"},
		{"newline in a key", "POST", "/v1/agents/a/instances/k%0Aadmin/messages", `{"text": "hi"}`, false, 400, "invalid_name",
			`store: invalid instance key \"k\\nadmin\": control character \"\\n\" at offset 1 not allowed`},
		{"NATS wildcard in a key", "POST", "/v1/agents/a/instances/a%3Eb/messages", `{"text": "hi"}`, false, 400, "invalid_name",
			`store: invalid instance key \"a>b\": character \">\" at offset 1 not allowed`},
		{"unknown item", "POST", "/v1/pending/q_nope/answer", `{"answer": "x"}`, false, 404, "not_found", "q_nope"},
		{"unknown action", "POST", "/v1/pending/q_nope/shout", `{}`, false, 404, "not_found", "answer, skip, provide, reject or edit"},
		{"edit without arguments", "POST", "/v1/pending/q_nope/edit", `{}`, false, 400, "invalid_request", `an edit needs \"arguments\"`},
		{"unknown call", "GET", "/v1/nothing", "", false, 404, "not_found", "no such API call: GET /v1/nothing"},
		{"stale event ID", "GET", "/v1/events?last_event_id=abc-12", "", false, 400, "unknown_event_id", "was not given by this server process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.ts.URL+tt.path, strings.NewReader(tt.body))
			if !tt.noToken {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			body := string(b)
			if res.StatusCode != tt.status || !strings.Contains(body, tt.msg) || tt.code != "" && !strings.Contains(body, `"code":"`+tt.code+`"`) {
				t.Errorf("%s %s = %d %s\nwant %d %s containing %q", tt.method, tt.path, res.StatusCode, body, tt.status, tt.code, tt.msg)
			}
			if res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q", res.Header.Get("Content-Type"))
			}
		})
	}
	// A wrong token is no token.
	req, _ := http.NewRequest("GET", h.ts.URL+"/v1/agents", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 401 {
		t.Errorf("wrong token = %v, %v", res, err)
	}
}

// TestUnauthorized: a call without the token is told what it needs, and
// where the token is when the server was told (WithTokenHint); a handler
// behind Guard answers the same, and is reached with the token.
func TestUnauthorized(t *testing.T) {
	tests := []struct {
		name string
		opts []server.Option
		want string
	}{
		{"no hint", nil,
			`{"error":{"code":"unauthorized","status":401,"message":"this call needs the server's token: Authorization: Bearer TOKEN"}}` + "\n"},
		{"a hint", []server.Option{server.WithTokenHint("it is kept in .ganglion/data.token, beside ganglion.yaml")},
			`{"error":{"code":"unauthorized","status":401,"message":"this call needs the server's token: Authorization: Bearer TOKEN (it is kept in .ganglion/data.token, beside ganglion.yaml)"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			mux := http.NewServeMux()
			mux.Handle("/mine", h.srv.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mine") })))
			mux.Handle("/", h.srv)
			ts := httptest.NewServer(mux)
			defer ts.Close()
			for _, path := range []string{"/v1/agents", "/mine"} {
				for _, auth := range []string{"", "Bearer wrong", "Basic " + token, "Bearer " + token + "x"} {
					req, _ := http.NewRequest("GET", ts.URL+path, nil)
					if auth != "" {
						req.Header.Set("Authorization", auth)
					}
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 401 || string(b) != tt.want || res.Header.Get("WWW-Authenticate") != `Bearer realm="ganglion"` {
						t.Errorf("%s with %q: %s %s\nwant 401 %s", path, auth, res.Status, b, tt.want)
					}
				}
			}
			req, _ := http.NewRequest("GET", ts.URL+"/mine", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || string(b) != "mine" {
				t.Errorf("/mine with the token: %s %s", res.Status, b)
			}
		})
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, name, data string }

// readSSE reads events from r until stop says so or the stream ends.
func readSSE(t *testing.T, r io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				out = append(out, cur)
				if stop(cur) {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[6:]
		}
	}
	return out
}

// TestStreamedMessage: with Accept: text/event-stream, the turn's events
// stream, then its result.
func TestStreamedMessage(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a missing result fails, not hangs
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.ts.URL+"/v1/agents/a/instances/k/messages", strings.NewReader(`{"text": "stream this"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type = %q", res.Header.Get("Content-Type"))
	}
	evs := readSSE(t, res.Body, func(e sseEvent) bool { return e.name == "result" || e.name == "error" })
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, "turn.started ") || !strings.Contains(got, "model.delta") || !strings.HasSuffix(got, "turn.finished result") {
		t.Errorf("events: %s", got)
	}
	last := evs[len(evs)-1]
	if !strings.Contains(last.data, `"content":"echo stream this"`) || last.id != "" {
		t.Errorf("result event = %+v", last)
	}
	for _, e := range evs[:len(evs)-1] {
		if e.id == "" || !strings.Contains(e.data, `"instance":"k"`) {
			t.Errorf("event without its ID or instance: %+v", e)
		}
	}
}

// TestEventStreamResumes: a client that reconnects with the last ID it
// saw gets every event it missed, and only those.
func TestEventStreamResumes(t *testing.T) {
	h := newHarness(t)
	res, cancel := h.stream("/v1/events?topic=turn.finished", "")
	defer cancel()
	got := make(chan []sseEvent, 1)
	go func() { got <- readSSE(t, res.Body, func(sseEvent) bool { return true }) }()
	time.Sleep(50 * time.Millisecond) // the stream is open before the turn
	h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "one"}`)
	first := <-got
	cancel()
	res.Body.Close()
	if len(first) != 1 || first[0].name != "turn.finished" || !strings.Contains(first[0].data, "echo one") {
		t.Fatalf("first connection saw %+v", first)
	}
	// Away: two turns happen.
	h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "two"}`)
	h.call("POST", "/v1/agents/b/instances/k/messages", `{"text": "three"}`)

	res, cancel = h.stream("/v1/events?topic=turn.finished", first[0].id)
	defer cancel()
	defer res.Body.Close()
	missed := readSSE(t, res.Body, func(e sseEvent) bool { return strings.Contains(e.data, "b here") })
	if len(missed) != 2 || !strings.Contains(missed[0].data, "echo two") || !strings.Contains(missed[1].data, "b here") {
		t.Errorf("after reconnecting: %+v", missed)
	}

	// The instance's stream shows only its own events.
	res2, cancel2 := h.stream("/v1/agents/b/instances/k/events", first[0].id)
	defer cancel2()
	defer res2.Body.Close()
	own := readSSE(t, res2.Body, func(e sseEvent) bool { return e.name == "turn.finished" })
	for _, e := range own {
		if !strings.Contains(e.data, `"agent":"b"`) {
			t.Errorf("b's stream shows %+v", e)
		}
	}
}

// TestEventStreamGap: a client that fell behind the backlog is told so.
func TestEventStreamGap(t *testing.T) {
	h := newHarness(t, server.WithBacklog(4))
	res, cancel := h.stream("/v1/events", "")
	defer cancel()
	got := make(chan []sseEvent, 1)
	go func() { got <- readSSE(t, res.Body, func(e sseEvent) bool { return e.id != "" }) }()
	time.Sleep(50 * time.Millisecond)
	h.call("POST", "/v1/agents/b/instances/k/messages", `{"text": "one"}`)
	seen := <-got
	res.Body.Close()
	last := seen[len(seen)-1]
	for range 3 { // a turn publishes more than 4 events
		h.call("POST", "/v1/agents/b/instances/k/messages", `{"text": "more"}`)
	}
	res, cancel = h.stream("/v1/events", last.id)
	defer cancel()
	defer res.Body.Close()
	evs := readSSE(t, res.Body, func(e sseEvent) bool { return true })
	if len(evs) != 1 || evs[0].name != "gap" || !strings.Contains(evs[0].data, "fell behind") {
		t.Errorf("after falling behind: %+v", evs)
	}
}

// TestProvideSecret: a provided value reaches the tool, and no answer,
// event or stored message holds it.
func TestProvideSecret(t *testing.T) {
	h := newHarness(t)
	res, cancel := h.stream("/v1/events", "")
	defer cancel()
	events := make(chan []sseEvent, 1)
	go func() {
		events <- readSSE(t, res.Body, func(e sseEvent) bool {
			return e.name == "turn.finished" && strings.Contains(e.data, "The tool says")
		})
	}()
	time.Sleep(50 * time.Millisecond)

	_, body := h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "need a key"}`)
	if !strings.Contains(body, `"finish_reason":"paused"`) {
		t.Fatalf("dependency request = %s", body)
	}
	_, body = h.call("GET", "/v1/pending", "")
	var list struct{ Items []item }
	decode(t, body, &list)
	const secret = "s3cr3t-Value-4242-abcdef"
	code, body := h.call("POST", "/v1/pending/"+list.Items[0].ID+"/provide", `{"value": "`+secret+`"}`)
	if code != 200 || !strings.Contains(body, "24 bytes") {
		t.Fatalf("provide = %d %s", code, body)
	}
	var all []string
	all = append(all, body)
	for _, e := range <-events {
		all = append(all, e.data)
	}
	for _, path := range []string{"/v1/pending?all=true", "/v1/agents/a/instances/k/history", "/v1/agents/a/instances/k/history?effective=true"} {
		_, b := h.call("GET", path, "")
		all = append(all, b)
	}
	for _, s := range all {
		if strings.Contains(s, secret) {
			t.Errorf("the secret is in %s", s)
		}
	}
}

// TestRejectRequired: rejecting a required dependency is taken, and fails
// the task it was for: task_failed, with the item rejected.
func TestRejectRequired(t *testing.T) {
	h := newHarness(t)
	h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "need a key"}`)
	_, body := h.call("GET", "/v1/pending", "")
	var list struct{ Items []item }
	decode(t, body, &list)
	if len(list.Items) != 1 {
		t.Fatalf("pending = %s", body)
	}
	code, body := h.call("POST", "/v1/pending/"+list.Items[0].ID+"/reject", `{"reason": "not today"}`)
	if code != 409 || !strings.Contains(body, `"code":"task_failed"`) || !strings.Contains(body, "not today") {
		t.Errorf("reject = %d %s", code, body)
	}
	if _, body := h.call("GET", "/v1/pending/"+list.Items[0].ID, ""); !strings.Contains(body, `"status":"rejected"`) {
		t.Errorf("the item after the reject: %s", body)
	}
}

// TestReady: ready while the runtime serves, 503 once it closed; health
// answers either way.
func TestReady(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.call("GET", "/v1/ready", ""); code != 200 {
		t.Fatalf("ready = %d", code)
	}
	h.rt.Close()
	if code, body := h.call("GET", "/v1/ready", ""); code != 503 || !strings.Contains(body, `"code":"not_ready"`) || !strings.Contains(body, "closed") {
		t.Errorf("ready after Close = %d %s", code, body)
	}
	if code, _ := h.call("GET", "/v1/health", ""); code != 200 {
		t.Errorf("health after Close = %d", code)
	}
}

// TestReservedMetadataRefused: a client cannot hide its own message from
// the model with the metadata the runtime gives meaning to: a message that
// sets such a key is refused, 400, naming the key, and nothing is stored;
// the same message without it reaches the model.
func TestReservedMetadataRefused(t *testing.T) {
	h := newHarness(t)
	if code, body := h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "hello"}`); code != 200 {
		t.Fatalf("first message = %d %s", code, body)
	}
	const rule = `; name your own keys with a prefix, such as \"myapp.%s\"`
	tests := []struct {
		name, metadata, key, why string
	}{
		{"truncated", `{"truncated": true}`, "truncated", "it leaves the message out of what the model sees"},
		{"summary", `{"summary": true}`, "summary", "it marks a summary, which the model sees in place of the messages it condenses"},
		{"condensed_by", `{"condensed_by": "msg-1"}`, "condensed_by", "it shows a summary in place of the message"},
		{"pinned", `{"pinned": true}`, "pinned", "it keeps the message in every context window, whatever it costs"},
		{"task ID", `{"taskId": "task_x"}`, "taskId", "it names the delegation task a turn works on"},
		{"caller", `{"callerAgent": "boss"}`, "callerAgent", "it names the agent that called, which the orchestrator adds"},
		{"one reserved key among others", `{"channel": "api", "myapp.note": 1, "turn_id": "turn-9"}`, "turn_id", "it names the turn a message belongs to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "What is in notes.txt?", "metadata": `+tt.metadata+`}`)
			want := `"code":"invalid_request","status":400,"message":"agent \"a\" instance \"k\": metadata key \"` + tt.key +
				`\" is reserved by the runtime: the input's metadata may not set it (` + tt.why + `)` + fmt.Sprintf(rule, tt.key) + `"`
			if code != 400 || !strings.Contains(body, want) {
				t.Errorf("message with %s = %d %s\nwant 400 with %s", tt.metadata, code, body, want)
			}
		})
	}
	code, body := h.call("GET", "/v1/agents/a/instances/k/history", "")
	if code != 200 || strings.Contains(body, "notes.txt") {
		t.Errorf("a refused message was stored: %d %s", code, body)
	}
	// The client's own keys pass, and the model sees the message.
	code, body = h.call("POST", "/v1/agents/a/instances/k/messages", `{"text": "What is in notes.txt?", "metadata": {"myapp.truncated": true, "channel": "api"}}`)
	if code != 200 || !strings.Contains(body, `"content":"echo What is in notes.txt?"`) {
		t.Errorf("message with the client's own keys = %d %s", code, body)
	}
}

// TestAnswerDuringStop: an answer whose resume turn ends while the
// runtime stops is answered 200 with the turn's result, as it was applied.
// The item is read again after the action, which a stopping runtime
// refuses: that read's refusal made it 503 "closed" with a Retry-After,
// and a client that tried again was told the item was already resolved.
func TestAnswerDuringStop(t *testing.T) {
	h := newHarness(t)
	if code, body := h.call("POST", "/v1/agents/a/instances/stop/messages", `{"text": "go slow"}`); code != http.StatusOK || !strings.Contains(body, `"paused"`) {
		t.Fatalf("question = %d %s", code, body)
	}
	items, err := h.rt.Pending(context.Background(), ledger.Filter{Open: true, Agent: "a", Instance: "stop"})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %v, %v", items, err)
	}
	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		code, body := h.call("POST", "/v1/pending/"+items[0].ID+"/answer", `{"answer": "Slow"}`)
		answered <- answer{code, body}
	}()
	// Once the resume turn runs its command, stop the runtime: the stop
	// waits for the turn, and the read after it is refused.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		hist, err := h.rt.History(context.Background(), "a", "stop")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(hist); n > 0 && len(hist[n-1].ToolCalls) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resume turn did not start its command")
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.rt.Shutdown(context.Background()) }()
	got := <-answered
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if got.code != http.StatusOK || !strings.Contains(got.body, "slowly done") {
		t.Fatalf("answer during the stop = %d %s; want 200 with the resume's result", got.code, got.body)
	}
}

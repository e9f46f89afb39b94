package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// testKeyEnv names the key's variable in tests. No test sets it, so the
// key comes from Request.Secret unless a test says otherwise.
const testKeyEnv = "GANGLION_TEST_ANTHROPIC_KEY_UNSET"

const testKey = "sk-ant-test-key"

// reply is one canned HTTP response.
type reply struct {
	status int
	header map[string]string
	body   string // or file
	file   string // testdata/<file>
	// piece > 0 writes the body in pieces of that many bytes, flushing
	// each, so that reads end anywhere, also inside a UTF-8 character.
	piece int
	// hang, after the body, blocks until the client goes away.
	hang bool
	// linger, after the body, waits before ending the response.
	linger time.Duration
}

// fakeAPI is an Anthropic stand-in on loopback: it answers requests with
// its replies in turn (the last one again when they run out) and records
// what it received.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	replies []reply
	hits    int
	bodies  [][]byte
	headers []http.Header
	paths   []string
	remotes []string // the client's address of each request
}

func newFakeAPI(t *testing.T, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.remotes = append(f.remotes, r.RemoteAddr)
	rep := f.replies[min(f.hits, len(f.replies)-1)]
	f.hits++
	f.mu.Unlock()

	data := []byte(rep.body)
	if rep.file != "" {
		var err error
		if data, err = os.ReadFile("testdata/" + rep.file); err != nil {
			f.t.Errorf("fake API: %v", err)
			return
		}
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Request-Id", "req_011CTest")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	fl := w.(http.Flusher)
	if rep.piece <= 0 {
		w.Write(data)
	} else {
		for len(data) > 0 {
			n := min(rep.piece, len(data))
			w.Write(data[:n])
			fl.Flush()
			data = data[n:]
		}
	}
	fl.Flush()
	if rep.hang {
		<-r.Context().Done()
	}
	time.Sleep(rep.linger)
}

func (f *fakeAPI) hitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

func (f *fakeAPI) lastBody() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

func (f *fakeAPI) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[len(f.headers)-1]
}

func newProvider(t *testing.T, baseURL string, mod func(*Config)) *Provider {
	t.Helper()
	cfg := Config{Model: "claude-test", BaseURL: baseURL, APIKeyEnv: testKeyEnv}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func secret(key string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if name == testKeyEnv {
			return key, true
		}
		return "", false
	}
}

func userRequest(text string) *model.Request {
	return &model.Request{
		Agent:    "assistant",
		Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: text}},
		Secret:   secret(testKey),
	}
}

// show renders a chunk for comparisons.
func show(c model.Chunk) string {
	switch c.Kind {
	case model.KindText, model.KindReasoning:
		return fmt.Sprintf("%s:%q", c.Kind, c.Text)
	case model.KindToolCallStart:
		return fmt.Sprintf("start:%s:%s", c.ToolCallID, c.ToolName)
	case model.KindToolCallDelta:
		return fmt.Sprintf("delta:%s:%q", c.ToolCallID, c.ArgumentsDelta)
	case model.KindToolCallEnd:
		return "end:" + c.ToolCallID
	case model.KindUsage:
		u := c.Usage
		return fmt.Sprintf("usage:%d/%d/%d/%d", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	case model.KindError:
		return fmt.Sprintf("error:%s:%v", model.KindOf(c.Err), c.Err)
	}
	return c.Kind.String()
}

// drain reads s to its end, closing it.
func drain(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	defer s.Close()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		out = append(out, c)
		if len(out) > 1000 {
			t.Fatal("endless stream")
		}
	}
}

func shows(cs []model.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = show(c)
	}
	return out
}

func equalLines(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func TestStreamRecordings(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"text.sse", []string{
			`text:"Hello"`,
			`text:"! Ça va? 😀"`,
			`text:" Line\nbreak."`,
			`usage:25/15/0/0`,
		}},
		{"thinking.sse", []string{
			`reasoning:"The user asks 2+2."`,
			`reasoning:" That is 4."`,
			`text:"2 + 2 = 4."`,
			`usage:40/120/0/0`,
		}},
		{"tool_use.sse", []string{
			`text:"Let me read it."`,
			`start:toolu_01T1x1fJ34qAmk2tNTrN7Up6:read_file`,
			`delta:toolu_01T1x1fJ34qAmk2tNTrN7Up6:"{\"path\": \"no"`,
			`delta:toolu_01T1x1fJ34qAmk2tNTrN7Up6:"tes.txt\"}"`,
			`end:toolu_01T1x1fJ34qAmk2tNTrN7Up6`,
			`usage:472/89/0/0`,
		}},
		{"tool_use_two.sse", []string{
			`start:toolu_01A:grep`,
			`delta:toolu_01A:"{\"path\": \"src/caf"`,
			`delta:toolu_01A:"é/na"`,
			`delta:toolu_01A:"ïve.go\", \"pattern\": \"say \\"`,
			`delta:toolu_01A:"\"hi\\\"\\"`,
			`delta:toolu_01A:"n\", \"emoji\": \"\\ud8"`,
			`delta:toolu_01A:"3d\\ude00 ok\"}"`,
			`end:toolu_01A`,
			`start:toolu_01B:shell`,
			`delta:toolu_01B:"{\"cm"`,
			`delta:toolu_01B:"d\": \"echo \\u00"`,
			`delta:toolu_01B:"e9\\ud83d"`,
			`delta:toolu_01B:"\\ude00\", \"n\""`,
			`delta:toolu_01B:": 2}"`,
			`end:toolu_01B`,
			`usage:500/150/0/0`,
		}},
		{"tool_use_complete_input.sse", []string{
			`start:toolu_01C:get_weather`,
			`delta:toolu_01C:"{\"city\":\"Zürich\",\"days\":3}"`,
			`end:toolu_01C`,
			`start:toolu_01D:now`,
			`delta:toolu_01D:"{}"`,
			`end:toolu_01D`,
			`usage:30/40/0/0`,
		}},
		{"usage_cache.sse", []string{
			`text:"Cached."`,
			`usage:12/7/20480/1024`,
		}},
		{"error_midstream.sse", []string{
			`text:"Partial"`,
			`usage:25/1/0/0`,
			`error:transient error:anthropic: transient error: Overloaded`,
		}},
		{"error_first.sse", []string{
			`error:transient error:anthropic: transient error: Overloaded`,
		}},
		{"truncated.sse", []string{
			`text:"Cut"`,
			`usage:25/1/0/0`,
			`error:transient error:anthropic: transient error: stream ended before message_stop`,
		}},
	}
	for _, tt := range tests {
		for _, piece := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/piece=%d", tt.file, piece), func(t *testing.T) {
				t.Parallel()
				api := newFakeAPI(t, reply{file: tt.file, piece: piece})
				p := newProvider(t, api.srv.URL, nil)
				s, err := p.Stream(context.Background(), userRequest("hi"))
				if err != nil {
					t.Fatal(err)
				}
				got := drain(t, s)
				equalLines(t, shows(got), tt.want)
				// The deltas of each call make its arguments, valid JSON.
				args := map[string]string{}
				for _, c := range got {
					if c.Kind == model.KindToolCallDelta {
						args[c.ToolCallID] += c.ArgumentsDelta
					}
				}
				for id, a := range args {
					if !json.Valid([]byte(a)) {
						t.Errorf("arguments of %s are not JSON: %s", id, a)
					}
				}
			})
		}
	}
}

func TestToolArgumentsDecode(t *testing.T) {
	api := newFakeAPI(t, reply{file: "tool_use_two.sse"})
	p := newProvider(t, api.srv.URL, nil)
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, c := range drain(t, s) {
		args[c.ToolCallID] += c.ArgumentsDelta
	}
	var a struct{ Path, Pattern, Emoji string }
	if err := json.Unmarshal([]byte(args["toolu_01A"]), &a); err != nil {
		t.Fatal(err)
	}
	if a.Path != "src/café/naïve.go" || a.Pattern != "say \"hi\"\n" || a.Emoji != "😀 ok" {
		t.Errorf("grep arguments = %+v", a)
	}
	var b struct {
		Cmd string
		N   int
	}
	if err := json.Unmarshal([]byte(args["toolu_01B"]), &b); err != nil {
		t.Fatal(err)
	}
	if b.Cmd != "echo é😀" || b.N != 2 {
		t.Errorf("shell arguments = %+v", b)
	}
}

// canonical decodes JSON for a comparison that ignores key order and
// spacing.
func canonical(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

func equalJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	if !reflect.DeepEqual(canonical(t, got), canonical(t, []byte(want))) {
		var g, w any = canonical(t, got), canonical(t, []byte(want))
		gb, _ := json.MarshalIndent(g, "", "  ")
		wb, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("request body:\n got %s\nwant %s", gb, wb)
	}
}

// history has every kind of message: user, assistant with tool calls (one
// with malformed arguments), two tool results (one failed), an injected
// system message, then an assistant answer and a new user message.
func history() pipeline.MessageSlice {
	return pipeline.MessageSlice{
		{ID: "m1", Role: pipeline.RoleUser, Content: "Read notes.txt and list the directory."},
		{ID: "m2", Role: pipeline.RoleAssistant, Content: "Sure.", Reasoning: "dropped without signature", ToolCalls: []pipeline.ToolCall{
			{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path": "notes.txt", "z": 1, "a": [1, 2]}`)},
			{ID: "toolu_2", Name: "list_dir", Arguments: json.RawMessage(`{"path": `)},
		}},
		{ID: "m3", Role: pipeline.RoleTool, ToolCallID: "toolu_1", Name: "read_file", Content: "hello <world> & \"all\""},
		{ID: "m4", Role: pipeline.RoleTool, ToolCallID: "toolu_2", Name: "list_dir", Content: "invalid arguments: unexpected end of JSON input", IsError: true},
		{ID: "m5", Role: pipeline.RoleSystem, Content: "Reminder: be brief.", Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: "reminder"}},
		{ID: "m6", Role: pipeline.RoleAssistant, Content: "The notes say hello."},
		{ID: "m7", Role: pipeline.RoleUser, Content: "   "},
		{ID: "m8", Role: pipeline.RoleUser, Content: "Thanks. Now the weather?"},
	}
}

func tools() []pipeline.Tool {
	return []pipeline.Tool{
		{ToolSpec: pipeline.ToolSpec{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {"path": {"type": "string"}, "a_limit": {"type": "integer"}},
			"required": ["path"],
			"additionalProperties": false
		}`)}},
		{ToolSpec: pipeline.ToolSpec{Name: "list_dir", Parameters: json.RawMessage(`{"properties": {"path": {"type": "string"}}}`)}},
		{ToolSpec: pipeline.ToolSpec{Name: "now", Description: "The time."}},
	}
}

const wantHistoryBody = `{
	"model": "claude-test",
	"max_tokens": 4096,
	"stream": true,
	"system": [{"type": "text", "text": "You are terse."}],
	"messages": [
		{"role": "user", "content": [{"type": "text", "text": "Read notes.txt and list the directory."}]},
		{"role": "assistant", "content": [
			{"type": "text", "text": "Sure."},
			{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt", "z": 1, "a": [1, 2]}},
			{"type": "tool_use", "id": "toolu_2", "name": "list_dir", "input": {}}
		]},
		{"role": "user", "content": [
			{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "hello <world> & \"all\""}]},
			{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [{"type": "text", "text": "invalid arguments: unexpected end of JSON input"}]},
			{"type": "text", "text": "[system] Reminder: be brief."}
		]},
		{"role": "assistant", "content": [{"type": "text", "text": "The notes say hello."}]},
		{"role": "user", "content": [{"type": "text", "text": "Thanks. Now the weather?"}]}
	],
	"tools": [
		{"name": "read_file", "description": "Read a file.", "input_schema": {
			"type": "object",
			"properties": {"path": {"type": "string"}, "a_limit": {"type": "integer"}},
			"required": ["path"],
			"additionalProperties": false
		}},
		{"name": "list_dir", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
		{"name": "now", "description": "The time.", "input_schema": {"type": "object", "properties": {}}}
	]
}`

func TestRequestBody(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})
	p := newProvider(t, api.srv.URL, nil)
	req := &model.Request{
		Agent:    "assistant",
		System:   "You are terse.",
		Messages: history(),
		Tools:    tools(),
		Secret:   secret(testKey),
	}
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)

	body := api.lastBody()
	equalJSON(t, body, wantHistoryBody)
	// Byte for byte where order matters: the arguments and the schema's
	// properties keep their order, so the prompt prefix is stable.
	for _, sub := range []string{
		`{"path":"notes.txt","z":1,"a":[1,2]}`,
		`"properties":{"path":{"type":"string"},"a_limit":{"type":"integer"}}`,
		`{"type":"object","properties":{"path":{"type":"string"}}}`,
	} {
		if !strings.Contains(string(body), sub) {
			t.Errorf("body lacks %s:\n%s", sub, body)
		}
	}
	if got := api.paths[0]; got != "POST /v1/messages" {
		t.Errorf("request = %s", got)
	}
	h := api.lastHeader()
	for k, want := range map[string]string{
		"X-Api-Key":         testKey,
		"Anthropic-Version": "2023-06-01",
		"Content-Type":      "application/json",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if h.Get("Authorization") != "" {
		t.Errorf("Authorization header sent: %q", h.Get("Authorization"))
	}
	if got := h.Get("X-Stainless-Retry-Count"); got != "0" {
		t.Errorf("X-Stainless-Retry-Count = %q", got)
	}
}

func TestMaxTokensAndModel(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		reqTokens int
		reqModel  string
		want      string
	}{
		{"default", Config{}, 0, "", `"max_tokens":4096,"model":"claude-test"`},
		{"config", Config{MaxOutputTokens: 1000}, 0, "", `"max_tokens":1000`},
		{"request wins", Config{MaxOutputTokens: 1000}, 500, "", `"max_tokens":500`},
		{"request model wins", Config{}, 0, "claude-other", `"model":"claude-other"`},
		{"thinking adds its budget", Config{MaxOutputTokens: 1000, Thinking: 2048}, 0, "", `"max_tokens":3048`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, reply{file: "text.sse"})
			p := newProvider(t, api.srv.URL, func(c *Config) {
				c.MaxOutputTokens, c.Thinking = tt.cfg.MaxOutputTokens, tt.cfg.Thinking
			})
			req := userRequest("hi")
			req.MaxOutputTokens, req.Model = tt.reqTokens, tt.reqModel
			s, err := p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			drain(t, s)
			body := string(api.lastBody())
			for want := range strings.SplitSeq(tt.want, ",") {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %s: %s", want, body)
				}
			}
			if thinking := strings.Contains(body, `"thinking":{"budget_tokens":2048,"type":"enabled"}`); thinking != (tt.cfg.Thinking > 0) {
				t.Errorf("thinking in body = %v: %s", thinking, body)
			}
		})
	}
}

func TestPromptCache(t *testing.T) {
	for _, msgs := range []pipeline.MessageSlice{
		history()[:4], // ends with tool results
		history(),     // ends with user text
		history()[:2], // ends with a tool call
	} {
		api := newFakeAPI(t, reply{file: "text.sse"})
		p := newProvider(t, api.srv.URL, func(c *Config) { c.PromptCache = true })
		req := &model.Request{System: "Be terse.", Messages: msgs, Secret: secret(testKey)}
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		var body struct {
			System   []map[string]any `json:"system"`
			Messages []struct {
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(api.lastBody(), &body); err != nil {
			t.Fatal(err)
		}
		eph := map[string]any{"type": "ephemeral"}
		if got := body.System[0]["cache_control"]; !reflect.DeepEqual(got, eph) {
			t.Errorf("system cache_control = %v", got)
		}
		marked := 0
		for i, m := range body.Messages {
			for j, c := range m.Content {
				if c["cache_control"] != nil {
					marked++
					if i != len(body.Messages)-1 || j != len(m.Content)-1 || !reflect.DeepEqual(c["cache_control"], eph) {
						t.Errorf("cache_control on message %d block %d: %v", i, j, c)
					}
				}
			}
		}
		if marked != 1 {
			t.Errorf("%d blocks marked, want the last one", marked)
		}
	}
}

// TestThinkingRoundTrip: the signed thinking blocks of a response that
// called tools go back in front of its tool call in the next request; when
// the provider does not have them, that request goes without thinking.
func TestThinkingRoundTrip(t *testing.T) {
	api := newFakeAPI(t, reply{file: "thinking_tool.sse"}, reply{file: "text.sse"})
	p := newProvider(t, api.srv.URL, func(c *Config) { c.Thinking = 1024 })

	s, err := p.Stream(context.Background(), userRequest("read a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, shows(drain(t, s)), []string{
		`reasoning:"I should look at the file."`,
		`start:toolu_think1:read_file`,
		`delta:toolu_think1:"{\"path\":\"a.txt\"}"`,
		`end:toolu_think1`,
		`usage:80/60/0/0`,
	})

	loop := func(callID string) *model.Request {
		return &model.Request{Secret: secret(testKey), Messages: pipeline.MessageSlice{
			{Role: pipeline.RoleUser, Content: "read a.txt"},
			{Role: pipeline.RoleAssistant, Reasoning: "I should look at the file.", ToolCalls: []pipeline.ToolCall{
				{ID: callID, Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			}},
			{Role: pipeline.RoleTool, ToolCallID: callID, Content: "A"},
		}}
	}
	s, err = p.Stream(context.Background(), loop("toolu_think1"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	equalJSON(t, api.lastBody(), `{
		"model": "claude-test", "max_tokens": 5120, "stream": true,
		"thinking": {"type": "enabled", "budget_tokens": 1024},
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "read a.txt"}]},
			{"role": "assistant", "content": [
				{"type": "thinking", "thinking": "I should look at the file.", "signature": "EqQBCgIYAhIMsig1"},
				{"type": "redacted_thinking", "data": "EmwKAhgBredacted1"},
				{"type": "tool_use", "id": "toolu_think1", "name": "read_file", "input": {"path": "a.txt"}}
			]},
			{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_think1", "content": [{"type": "text", "text": "A"}]}]}
		]
	}`)

	// A tool loop whose thinking the provider never saw: no thinking.
	s, err = p.Stream(context.Background(), loop("toolu_unknown"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	equalJSON(t, api.lastBody(), `{
		"model": "claude-test", "max_tokens": 4096, "stream": true,
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "read a.txt"}]},
			{"role": "assistant", "content": [
				{"type": "tool_use", "id": "toolu_unknown", "name": "read_file", "input": {"path": "a.txt"}}
			]},
			{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_unknown", "content": [{"type": "text", "text": "A"}]}]}
		]
	}`)
}

func TestThinkingCacheBounded(t *testing.T) {
	var c thinkingCache
	for i := range thinkingCacheSize + 10 {
		c.put(fmt.Sprint("id", i), []thinkingBlock{{thinking: "t", signature: "s"}})
	}
	c.put("id1020", []thinkingBlock{{thinking: "again", signature: "s"}}) // an update evicts nothing
	if len(c.m) != thinkingCacheSize {
		t.Errorf("cache holds %d entries, want %d", len(c.m), thinkingCacheSize)
	}
	if _, ok := c.get("id9"); ok {
		t.Error("oldest entries kept")
	}
	if _, ok := c.get("id10"); !ok {
		t.Error("entry 10 evicted")
	}
	if b, _ := c.get("id1020"); b[0].thinking != "again" {
		t.Error("update lost")
	}
}

const (
	body429      = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	body529      = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	body500      = `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	body401      = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
	body403      = `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`
	body400      = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`
	body400Ctx   = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`
	body404      = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`
	body502Proxy = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>"
)

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      reply
		kind       model.ErrorKind
		sentinel   error
		retryAfter time.Duration
		text       string
	}{
		{"429", reply{status: 429, body: body429, header: map[string]string{"Retry-After": "7"}},
			model.ErrorRateLimit, model.ErrRateLimited, 7 * time.Second,
			"anthropic: rate limited (HTTP 429): Number of request tokens has exceeded your per-minute rate limit"},
		{"529 overloaded", reply{status: 529, body: body529},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 529): Overloaded"},
		{"500", reply{status: 500, body: body500},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 500): Internal server error"},
		{"502 from a proxy", reply{status: 502, body: body502Proxy},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 502): <html> <head><title>502 Bad Gateway</title></head> <body>nginx</body> </html>"},
		{"401", reply{status: 401, body: body401},
			model.ErrorAuth, model.ErrAuth, 0, "anthropic: authentication failed (HTTP 401): invalid x-api-key"},
		{"403", reply{status: 403, body: body403},
			model.ErrorAuth, model.ErrAuth, 0, "anthropic: authentication failed (HTTP 403): Your API key does not have permission to use the specified resource."},
		{"400", reply{status: 400, body: body400},
			model.ErrorInvalidRequest, model.ErrInvalidRequest, 0, "anthropic: invalid request (HTTP 400): messages: text content blocks must be non-empty"},
		{"400 context window", reply{status: 400, body: body400Ctx},
			model.ErrorContextWindow, model.ErrContextWindow, 0, "anthropic: context window exceeded (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum"},
		{"404", reply{status: 404, body: body404},
			model.ErrorInvalidRequest, model.ErrInvalidRequest, 0, "anthropic: invalid request (HTTP 404): model: claude-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, tt.reply)
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if s != nil {
				t.Fatalf("stream returned with error %v", err)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %T %v is not a *model.Error", err, err)
			}
			if me.Kind != tt.kind || !errors.Is(err, tt.sentinel) {
				t.Errorf("kind = %v, want %v", me.Kind, tt.kind)
			}
			if me.Status != tt.reply.status {
				t.Errorf("status = %d", me.Status)
			}
			if me.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", me.RetryAfter, tt.retryAfter)
			}
			if err.Error() != tt.text {
				t.Errorf("error = %q\n want %q", err, tt.text)
			}
			if n := api.hitCount(); n != 1 {
				t.Errorf("%d requests, want 1: the provider must not retry", n)
			}
		})
	}
}

// retryPolicy retries without waiting and records the waits.
func retryPolicy(waits *[]time.Duration) model.RetryPolicy {
	return model.RetryPolicy{
		MaxRetries: 3,
		Sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return nil
		},
		Rand: func() float64 { return 0 },
	}
}

func TestWithRetry(t *testing.T) {
	text := []string{`text:"Hello"`, `text:"! Ça va? 😀"`, `text:" Line\nbreak."`, `usage:25/15/0/0`}
	tests := []struct {
		name    string
		replies []reply
		hits    int
		waits   []time.Duration
		want    []string
		openErr error // the error Stream returns instead
	}{
		{"429 then success",
			[]reply{{status: 429, body: body429, header: map[string]string{"Retry-After": "7"}}, {file: "text.sse"}},
			2, []time.Duration{7 * time.Second}, text, nil},
		{"529 then success",
			[]reply{{status: 529, body: body529}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"500 then success",
			[]reply{{status: 500, body: body500}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"error event before content then success",
			[]reply{{file: "error_first.sse"}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"error event after content is not retried",
			[]reply{{file: "error_midstream.sse"}, {file: "text.sse"}},
			1, nil, []string{`text:"Partial"`, `usage:25/1/0/0`, `error:transient error:anthropic: transient error: Overloaded`}, nil},
		{"401 is hit once",
			[]reply{{status: 401, body: body401}, {file: "text.sse"}},
			1, nil, nil, model.ErrAuth},
		{"context window is not retried",
			[]reply{{status: 400, body: body400Ctx}, {file: "text.sse"}},
			1, nil, nil, model.ErrContextWindow},
		{"retries run out",
			[]reply{{status: 529, body: body529}},
			4, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}, nil, model.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, tt.replies...)
			var waits []time.Duration
			p := model.WithRetry(newProvider(t, api.srv.URL, nil), retryPolicy(&waits))
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if tt.openErr != nil {
				if !errors.Is(err, tt.openErr) {
					t.Errorf("error = %v, want %v", err, tt.openErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				equalLines(t, shows(drain(t, s)), tt.want)
			}
			if n := api.hitCount(); n != tt.hits {
				t.Errorf("%d requests, want %d", n, tt.hits)
			}
			if !reflect.DeepEqual(waits, tt.waits) {
				t.Errorf("waits = %v, want %v", waits, tt.waits)
			}
		})
	}
}

// refusedURL is the address of a port that nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestConnectionRefused(t *testing.T) {
	p := newProvider(t, refusedURL(t), nil)
	_, err := p.Stream(context.Background(), userRequest("hi"))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrorTransient || me.Status != 0 {
		t.Fatalf("error = %v, want a transient *model.Error", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error = %v", err)
	}
}

// TestKeyNeverLeaks makes every path fail with a canary key, the server
// echoing the key where it can, and looks for the key in every error.
func TestKeyNeverLeaks(t *testing.T) {
	const canary = "sk-ant-CANARY-7f3a9c1e5b"
	echo := func(s string) string { return strings.ReplaceAll(s, "KEY", canary) }
	midstream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"
	tests := []struct {
		name  string
		reply *reply // nil: connection refused
	}{
		{"401", &reply{status: 401, body: echo(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key KEY"}}`)}},
		{"429", &reply{status: 429, body: echo(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down, KEY"}}`), header: map[string]string{"Retry-After": "1"}}},
		{"529", &reply{status: 529, body: echo(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded KEY"}}`)}},
		{"400", &reply{status: 400, body: echo(`{"type":"error","error":{"type":"invalid_request_error","message":"bad request from KEY"}}`)}},
		{"400 context window", &reply{status: 400, body: echo(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long (KEY)"}}`)}},
		{"502 not JSON", &reply{status: 502, body: echo(`<html>x-api-key: KEY</html>`)}},
		{"error event", &reply{body: midstream + echo("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded KEY\"}}\n\n")}},
		{"error event not JSON", &reply{body: midstream + echo("event: error\ndata: KEY\n\n")}},
		{"cut stream", &reply{body: midstream}},
		{"connection refused", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := refusedURL(t)
			if tt.reply != nil {
				url = newFakeAPI(t, *tt.reply).srv.URL
			}
			var waits []time.Duration
			p := model.WithRetry(newProvider(t, url, nil), retryPolicy(&waits))
			req := userRequest("hi")
			req.Secret = secret(canary)
			var errs []error
			s, err := p.Stream(context.Background(), req)
			if err != nil {
				errs = append(errs, err)
			} else {
				for _, c := range drain(t, s) {
					if strings.Contains(show(c), canary) {
						t.Errorf("chunk %s holds the key", show(c))
					}
					if c.Err != nil {
						errs = append(errs, c.Err)
					}
				}
			}
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			for _, err := range errs {
				for e := err; e != nil; e = errors.Unwrap(e) {
					for _, text := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
						if strings.Contains(text, canary) {
							t.Errorf("error holds the key: %s", text)
						}
					}
				}
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})

	t.Run("missing", func(t *testing.T) {
		p := newProvider(t, api.srv.URL, nil)
		req := userRequest("hi")
		req.Secret = nil
		_, err := p.Stream(context.Background(), req)
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.ErrorAuth {
			t.Fatalf("error = %v, want an auth *model.Error", err)
		}
		want := "anthropic: authentication failed: no API key: set " + testKeyEnv + " or provide it"
		if err.Error() != want {
			t.Errorf("error = %q\n want %q", err, want)
		}
		req.Secret = func(string) (string, bool) { return "", false }
		if _, err := p.Stream(context.Background(), req); !errors.Is(err, model.ErrAuth) {
			t.Errorf("error = %v with an unknown secret", err)
		}
		if n := api.hitCount(); n != 0 {
			t.Errorf("%d requests without a key", n)
		}
	})

	t.Run("environment first", func(t *testing.T) {
		const env = "GANGLION_TEST_ANTHROPIC_KEY_SET"
		t.Setenv(env, "sk-from-env")
		p := newProvider(t, api.srv.URL, func(c *Config) { c.APIKeyEnv = env })
		req := userRequest("hi")
		req.Secret = func(string) (string, bool) { return "sk-from-secret", true }
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if got := api.lastHeader().Get("X-Api-Key"); got != "sk-from-env" {
			t.Errorf("x-api-key = %q", got)
		}
	})

	t.Run("secret", func(t *testing.T) {
		p := newProvider(t, api.srv.URL, nil)
		var asked string
		req := userRequest("hi")
		req.Secret = func(name string) (string, bool) { asked = name; return "sk-from-secret", true }
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if got := api.lastHeader().Get("X-Api-Key"); got != "sk-from-secret" || asked != testKeyEnv {
			t.Errorf("x-api-key = %q, secret asked: %q", got, asked)
		}
	})

	t.Run("default variable", func(t *testing.T) {
		p, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if p.cfg.APIKeyEnv != "ANTHROPIC_API_KEY" || p.cfg.BaseURL != "https://api.anthropic.com" {
			t.Errorf("defaults: %+v", p.cfg)
		}
	})
}

func TestCancel(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		api := newFakeAPI(t, reply{file: "text.sse"})
		p := newProvider(t, api.srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v", err)
		}
		if model.KindOf(err).Retryable() {
			t.Errorf("kind %v is retryable", model.KindOf(err))
		}
	})

	t.Run("while waiting for headers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that the server sees the client go
			cancel()
			<-r.Context().Done()
		}))
		defer srv.Close()
		p := newProvider(t, srv.URL, nil)
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v", err)
		}
	})

	t.Run("mid-stream", func(t *testing.T) {
		data, err := os.ReadFile("testdata/truncated.sse")
		if err != nil {
			t.Fatal(err)
		}
		api := newFakeAPI(t, reply{body: string(data), hang: true})
		p := newProvider(t, api.srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := p.Stream(ctx, userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c, err := s.Recv()
		if err != nil || show(c) != `text:"Cut"` {
			t.Fatalf("first chunk %s, %v", show(c), err)
		}
		time.AfterFunc(20*time.Millisecond, cancel)
		var last model.Chunk
		for {
			c, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			last = c
		}
		if last.Kind != model.KindError || !errors.Is(last.Err, context.Canceled) {
			t.Errorf("last chunk %s, want an error matching context.Canceled", show(last))
		}
	})

	t.Run("through WithRetry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that the server sees the client go
			cancel()
			<-r.Context().Done()
		}))
		defer srv.Close()
		var waits []time.Duration
		p := model.WithRetry(newProvider(t, srv.URL, nil), retryPolicy(&waits))
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) || len(waits) != 0 {
			t.Errorf("error = %v after %d retries", err, len(waits))
		}
	})
}

func TestClose(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})
	p := newProvider(t, api.srv.URL, nil)

	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := s.Recv(); err == nil {
		t.Error("Recv after Close returned no error")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s, err = p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Recv(); err != nil || c.Kind != model.KindText {
		t.Fatalf("Recv = %s, %v", show(c), err)
	}
	s.Close()
	for range 3 {
		if _, err := s.Recv(); err == nil {
			t.Error("Recv after Close returned no error")
		}
	}

	s, err = p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	for range 2 {
		if _, err := s.Recv(); err == nil {
			t.Error("Recv after the end and Close returned no error")
		}
	}
}

func TestRequestErrors(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})
	tests := []struct {
		name string
		cfg  func(*Config)
		req  func(*model.Request)
		want string
	}{
		{"no model", func(c *Config) { c.Model = "" }, nil,
			"anthropic: invalid request: no model: set the agent's model or the provider's"},
		{"unknown role", nil, func(r *model.Request) {
			r.Messages = pipeline.MessageSlice{{ID: "m1", Role: "narrator", Content: "x"}}
		}, `anthropic: invalid request: message 0 (m1) has unknown role "narrator"`},
		{"schema not an object", nil, func(r *model.Request) {
			r.Tools = []pipeline.Tool{{ToolSpec: pipeline.ToolSpec{Name: "t", Parameters: json.RawMessage(`[1]`)}}}
		}, `anthropic: invalid request: tool "t": parameters schema is not a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, api.srv.URL, tt.cfg)
			req := userRequest("hi")
			if tt.req != nil {
				tt.req(req)
			}
			_, err := p.Stream(context.Background(), req)
			if !errors.Is(err, model.ErrInvalidRequest) || err.Error() != tt.want {
				t.Errorf("error = %v\n want %s", err, tt.want)
			}
		})
	}
	if _, err := newProvider(t, api.srv.URL, nil).Stream(context.Background(), nil); !errors.Is(err, model.ErrInvalidRequest) {
		t.Errorf("nil request: %v", err)
	}
	if n := api.hitCount(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "api.anthropic.com"},
		{BaseURL: "ftp://x"},
		{BaseURL: "http://"},
		{Thinking: 1000},
		{Thinking: -1},
		{MaxOutputTokens: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `{"type":"object","properties":{}}`},
		{`null`, `{"type":"object","properties":{}}`},
		{`{}`, `{"type":"object"}`},
		{` {"properties":{"b":{},"a":{}}} `, `{"type":"object","properties":{"b":{},"a":{}}}`},
		{`{"type":"object","required":["x"]}`, `{"type":"object","required":["x"]}`},
	}
	for _, tt := range tests {
		got, err := inputSchema(json.RawMessage(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("inputSchema(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestToolInput(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{` {"a":1} `, `{"a":1}`},
		{``, `{}`},
		{`{"a":`, `{}`},
		{`[1]`, `{}`},
		{`"s"`, `{}`},
		{`null`, `{}`},
	}
	for _, tt := range tests {
		if got := toolInput(json.RawMessage(tt.in)); string(got) != tt.want {
			t.Errorf("toolInput(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// sse builds a stream body from (event, data) pairs.
func sse(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
	}
	return b.String()
}

const messageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`

func TestErrorEvents(t *testing.T) {
	tests := []struct {
		typ, msg string
		kind     model.ErrorKind
		text     string
	}{
		{"overloaded_error", "Overloaded", model.ErrorTransient, "anthropic: transient error: Overloaded"},
		{"api_error", "Internal server error", model.ErrorTransient, "anthropic: transient error: Internal server error"},
		{"rate_limit_error", "Rate limited", model.ErrorRateLimit, "anthropic: rate limited: Rate limited"},
		{"invalid_request_error", "tool_use ids must be unique", model.ErrorInvalidRequest, "anthropic: invalid request: tool_use ids must be unique"},
		{"invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", model.ErrorContextWindow, "anthropic: context window exceeded: prompt is too long: 210000 tokens > 200000 maximum"},
		{"authentication_error", "invalid x-api-key", model.ErrorAuth, "anthropic: authentication failed: invalid x-api-key"},
		{"permission_error", "not allowed", model.ErrorAuth, "anthropic: authentication failed: not allowed"},
		{"brand_new_error", "", model.ErrorOther, "anthropic: error: brand_new_error"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.msg, func(t *testing.T) {
			t.Parallel()
			data := fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, tt.typ, tt.msg)
			api := newFakeAPI(t, reply{body: sse("message_start", messageStart, "error", data)})
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, s)
			if len(got) != 1 || got[0].Kind != model.KindError {
				t.Fatalf("chunks %v, want one error", shows(got))
			}
			if k := model.KindOf(got[0].Err); k != tt.kind || got[0].Err.Error() != tt.text {
				t.Errorf("error %v (%v), want %s (%v)", got[0].Err, k, tt.text, tt.kind)
			}
		})
	}
}

// TestStreamEdges covers what the recordings do not: cumulative counts in
// message_delta, text in content_block_start, blocks left open at
// message_stop, and protocol errors.
func TestStreamEdges(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"cumulative usage in message_delta", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":12,"cache_read_input_tokens":5,"cache_creation_input_tokens":3,"output_tokens":9}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`text:"Hi"`, `usage:12/9/5/3`}},
		{"null counts in message_delta", sse(
			"message_start", messageStart,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":null,"output_tokens":4}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`usage:10/4/0/0`}},
		{"tool block open at message_stop", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_X","name":"t","input":{}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`start:toolu_X:t`, `delta:toolu_X:"{\"a\":"`, `end:toolu_X`, `usage:10/1/0/0`}},
		{"thinking text in content_block_start", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"Hmm.","signature":"sig"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`reasoning:"Hmm."`, `usage:10/1/0/0`}},
		{"input_json_delta for no tool block", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`error:error:anthropic: error: input_json_delta for content block 0, which is not an open tool_use block`}},
		{"malformed event", sse(
			"message_start", messageStart,
			"content_block_delta", `{"type":"content_block_delta",`,
		), []string{`error:transient error:anthropic: transient error: unexpected end of JSON input`}},
		{"empty body", "", []string{`error:transient error:anthropic: transient error: stream ended before message_stop`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, reply{body: tt.body})
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, shows(drain(t, s)), tt.want)
		})
	}
}

// TestConnectionReuse: a stream read to its end leaves its connection to
// the next call.
func TestConnectionReuse(t *testing.T) {
	api := newFakeAPI(t, reply{file: "tool_use.sse", linger: 20 * time.Millisecond})
	p := newProvider(t, api.srv.URL, nil)
	for range 3 {
		s, err := p.Stream(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.remotes[0] != api.remotes[1] || api.remotes[1] != api.remotes[2] {
		t.Errorf("connections: %v, want one", api.remotes)
	}
}

// TestConcurrent runs tool loops with thinking at once, for the race
// detector.
func TestConcurrent(t *testing.T) {
	api := newFakeAPI(t, reply{file: "thinking_tool.sse", piece: 100})
	p := newProvider(t, api.srv.URL, func(c *Config) { c.Thinking = 1024 })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				req := userRequest("hi")
				req.Messages = pipeline.MessageSlice{
					{Role: pipeline.RoleUser, Content: "read a.txt"},
					{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{{ID: "toolu_think1", Name: "read_file", Arguments: json.RawMessage(`{}`)}}},
					{Role: pipeline.RoleTool, ToolCallID: "toolu_think1", Content: "A"},
				}
				s, err := p.Stream(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				if got := drain(t, s); len(got) != 5 {
					t.Errorf("chunks: %v", shows(got))
				}
			}
		})
	}
	wg.Wait()
}

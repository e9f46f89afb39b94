package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of building the request: the body, defaults, prompt caching,
// thinking blocks carried across turns, tool schemas and inputs.

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
		Secret:   secretOf(testKey),
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
		req := &model.Request{System: "Be terse.", Messages: msgs, Secret: secretOf(testKey)}
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
		return &model.Request{Secret: secretOf(testKey), Messages: pipeline.MessageSlice{
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

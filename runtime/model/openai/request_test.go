package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of building the request body.

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
		{"max_completion_tokens on demand", Config{APIKeyEnv: "GANGLION_TEST_OPENAI_KEY_BODY", MaxTokensField: maxCompletionTokens}, "max_completion_tokens"},
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

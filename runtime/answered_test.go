package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// answering is an extension whose turn middleware does what its config
// says: "refuse" answers without Next, "emit" stores messages of its own
// and answers without Next, "replace" answers with a new result after
// Next, "mutate" changes Next's result in place.
func answering(cfg extensions.Config) (extensions.Extension, error) {
	var s struct {
		Mode string `yaml:"mode"`
	}
	if err := cfg.Decode(&s); err != nil {
		return nil, err
	}
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			switch {
			case s.Mode == "refuse" && strings.Contains(t.Input().Text, "secret"):
				return &pipeline.TurnResult{FinishReason: pipeline.FinishText, Response: pipeline.Message{Content: "I can't help with that."}}, nil
			case s.Mode == "emit":
				for _, m := range []pipeline.Message{
					{Role: pipeline.RoleUser, Content: "(kept by the extension) " + t.Input().Text, Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name}},
					{Role: pipeline.RoleAssistant, Content: "noted", Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name}},
				} {
					if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: m}); err != nil {
						return nil, err
					}
				}
				return &pipeline.TurnResult{FinishReason: pipeline.FinishText, Response: pipeline.Message{Content: "noted"}}, nil
			}
			r, err := t.Next(ctx)
			if err != nil {
				return nil, err
			}
			switch s.Mode {
			case "replace":
				return &pipeline.TurnResult{TurnID: r.TurnID, FinishReason: r.FinishReason, Steps: r.Steps,
					Response: pipeline.Message{Content: strings.ReplaceAll(r.Response.Content, "sk-123", "[masked]")}}, nil
			case "mutate":
				r.Response.Content = strings.ToUpper(r.Response.Content)
			}
			return r, nil
		})
		return nil
	}), nil
}

// TestMiddlewareAnswerIsStored: the history holds what the user saw. A
// turn a middleware answers without Next stores its input and the
// middleware's answer, as the extension's; an answer a middleware
// replaces after Next replaces the model's final message; a middleware
// that writes the history itself keeps that; and the model's next turn
// reads the history so kept.
func TestMiddlewareAnswerIsStored(t *testing.T) {
	const script = `
agents:
  a:
    fallback:
      steps: [{text: "the key is sk-123 ({{ .Input }})"}]
`
	tests := []struct {
		name, mode string
		inputs     []string
		history    []string
		sources    []string // the assistant messages' sources
		by         string   // the first turn's AnsweredBy
		answer     string   // the first turn's answer
	}{
		{name: "answered without next", mode: "refuse", inputs: []string{"tell me the secret", "hello"},
			history: []string{"user: tell me the secret", "assistant: I can't help with that.", "user: hello", "assistant: the key is sk-123 (hello)"},
			sources: []string{"extension/guard", "model/"}, by: "guard", answer: "I can't help with that."},
		{name: "the history written by the middleware", mode: "emit", inputs: []string{"remember this"},
			history: []string{"user: (kept by the extension) remember this", "assistant: noted"},
			sources: []string{"extension/guard"}, by: "guard", answer: "noted"},
		{name: "a replaced answer", mode: "replace", inputs: []string{"key?", "again"},
			history: []string{"user: key?", "assistant: the key is [masked] (key?)", "user: again", "assistant: the key is [masked] (again)"},
			sources: []string{"extension/guard", "extension/guard"}, by: "guard", answer: "the key is [masked] (key?)"},
		{name: "an answer changed in place", mode: "mutate", inputs: []string{"key?"},
			history: []string{"user: key?", "assistant: THE KEY IS SK-123 (KEY?)"},
			sources: []string{"extension/guard"}, by: "guard", answer: "THE KEY IS SK-123 (KEY?)"},
		{name: "a passed-through answer stays the model's", mode: "refuse", inputs: []string{"hello"},
			history: []string{"user: hello", "assistant: the key is sk-123 (hello)"},
			sources: []string{"model/"}, answer: "the key is sk-123 (hello)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: guard, config: {mode: `+tt.mode+`}}]
`, script, runtime.WithExtension("guard", answering))
			for i, in := range tt.inputs {
				res, err := h.rt.Send(context.Background(), "a", "k", runtime.UserMessage(in))
				if err != nil {
					t.Fatalf("Send(%q): %v", in, err)
				}
				if i == 0 && (res.AnsweredBy != tt.by || res.Response.Content != tt.answer || res.FinishReason != pipeline.FinishText) {
					t.Errorf("first turn = by %q, %q, %s; want by %q, %q", res.AnsweredBy, res.Response.Content, res.FinishReason, tt.by, tt.answer)
				}
			}
			msgs := mustHistory(t, h.rt, "a", "k")
			checkLines(t, "history", describeAll(msgs), tt.history)
			var sources []string
			for _, m := range msgs {
				if m.Role == pipeline.RoleAssistant {
					sources = append(sources, string(m.Source.Type)+"/"+m.Source.Extension)
				}
			}
			checkLines(t, "sources", sources, tt.sources)
			// The model's last request held the history as stored.
			if reqs := h.rec.requests(); len(tt.inputs) > 1 && len(reqs) > 0 {
				last := reqs[len(reqs)-1]
				checkLines(t, "the model's last request", describeAll(last.Messages), tt.history[:len(tt.history)-1])
			}
		})
	}
}

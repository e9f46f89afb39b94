package runtime_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// editGate is an extension that holds every tool call for a human, and
// takes edits: its Resume runs the call with the edited arguments, or
// with override if set (as if the tool's schema had changed since).
type editGate struct {
	resolved atomic.Int32 // calls of Resolve with an edit
	override string
}

type editGateApproved struct{}

func (g *editGate) factory(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		err := api.Pending.Handle(extensions.PendingKind{
			Name: "gate",
			Resolve: func(_ context.Context, _ ledger.Item, act extensions.Action) (extensions.Outcome, error) {
				if act.Kind != extensions.ActionEdit {
					return extensions.Outcome{}, extensions.ErrInvalidAction
				}
				g.resolved.Add(1)
				return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: act.Value, Message: "Edited."}}, nil
			},
			Resume: func(ctx context.Context, it ledger.Item, rc extensions.ResumeCall) error {
				args := it.Answer
				if g.override != "" {
					args = g.override
				}
				r, err := rc.RunWith(context.WithValue(ctx, editGateApproved{}, it.CallID), json.RawMessage(args))
				if err != nil {
					return err
				}
				return rc.Result(r.Content, r.IsError)
			},
		})
		if err != nil {
			return err
		}
		api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			if id, _ := ctx.Value(editGateApproved{}).(string); id == c.CallID() {
				return c.Next(ctx)
			}
			if _, err := api.Pending.PauseCall(ctx, c, ledger.Item{Kind: "gate", Required: true}, 0); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{Content: "held"}, nil
		})
		return nil
	}), nil
}

// count is a tool with an integer argument.
var count = pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "count", Description: "Counts to n.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
	Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{Content: "counted with " + string(c.Arguments())}, nil
	}}

const editScript = `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: count, id: c1, args: {n: 1}}]
          - text: "not reached"
      - steps:
          - text: "after: {{ .LastMessage }}"
`

// TestEditResumeCall: the runtime checks an edit against the call's tool
// schema before the kind's Resolve sees it; RunWith runs the call with the
// edited arguments, whose result says so in its content and metadata,
// while the model's call stays as it was. Arguments that no longer fit
// when the call runs are the call's error result, not a failed turn.
func TestEditResumeCall(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		edit     string
		override string
		err      string // the refusal, "" if accepted
		result   string
		meta     any
	}{
		{"an edit that fits runs", `{"n": 2}`, "", "",
			"called with arguments a human edited: {\"n\":2}\ncounted with {\"n\":2}", `{"n":2}`},
		{"an edit that does not fit is refused before Resolve", `{"n":"two"}`, "",
			`invalid action: the edited arguments of the count call: arguments do not match the schema: /n: got string, want integer`, "held", nil},
		{"arguments that no longer fit are the call's error", `{"n":2}`, `{"m":2}`, "",
			"called with arguments a human edited: {\"m\":2}\ntool \"count\": arguments do not match the schema: (root): missing property 'n'", `{"m":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &editGate{override: tt.override}
			h := newHarness(t, "agents:\n  - name: a\n    tools: [count]\n    extensions: [{name: gate}]\n", editScript,
				runtime.WithTool(count), runtime.WithExtension("gate", g.factory))
			if res := h.mustSend("a", "k", "go"); res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("Send = %s, want paused", res.FinishReason)
			}
			items, _ := h.rt.Pending(ctx, ledger.Filter{Open: true})
			if len(items) != 1 {
				t.Fatalf("items = %+v", items)
			}
			res, err := h.rt.Edit(ctx, items[0].ID, json.RawMessage(tt.edit))
			if tt.err != "" {
				if want := `pending item "` + items[0].ID + `": ` + tt.err; err == nil || err.Error() != want {
					t.Fatalf("Edit = %v\nwant %s", err, want)
				}
				if n := g.resolved.Load(); n != 0 {
					t.Errorf("Resolve saw %d refused edits", n)
				}
			} else if err != nil || res.Response.Content != "after: Edited." {
				t.Fatalf("Edit = %+v, %v", res, err)
			}
			msgs, err := h.rt.History(ctx, "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			var call, result string
			var meta any
			for _, m := range msgs {
				if len(m.ToolCalls) == 1 {
					call = string(m.ToolCalls[0].Arguments)
				}
				if m.Role == pipeline.RoleTool {
					result, meta = m.Content, m.Metadata["edited_arguments"]
				}
			}
			if call != `{"n":1}` {
				t.Errorf("the model's call = %s, want its own arguments", call)
			}
			if result != tt.result || meta != tt.meta {
				t.Errorf("result = %q, %s = %v\nwant %q, %v", result, "edited_arguments", meta, tt.result, tt.meta)
			}
		})
	}
}

// TestEditQuestion: an item that paused no tool call cannot be edited.
func TestEditQuestion(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "agents:\n  - name: a\n    extensions: [{name: protocol}]\n", `
agents:
  a:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: Which region?
              required: true
              [/USER_QUESTION]
`)
	if res := h.mustSend("a", "k", "go"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %s, want paused", res.FinishReason)
	}
	items, _ := h.rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 {
		t.Fatalf("items = %+v", items)
	}
	_, err := h.rt.Edit(ctx, items[0].ID, json.RawMessage(`{"region":"eu"}`))
	want := `pending item "` + items[0].ID + `": invalid action: a question item cannot be edited: only an item that holds a paused tool call can`
	if err == nil || err.Error() != want {
		t.Fatalf("Edit = %v\nwant %s", err, want)
	}
	if after, _ := h.rt.PendingItem(ctx, items[0].ID); !after.Open || after.Answer != "" || after.Status != ledger.Pending {
		t.Errorf("the item changed: %+v", after)
	}
}

// say is a tool with a string argument, which it returns.
var say = pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "say", Description: "Says text.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{Content: "said " + string(c.Arguments())}, nil
	}}

// TestEditReadsAsWritten: edited arguments with <, > and & reach the tool
// and the model as a person wrote them, also when a JSON encoder escaped
// them (as Go's does by default) on their way.
func TestEditReadsAsWritten(t *testing.T) {
	ctx := context.Background()
	const want = "called with arguments a human edited: {\"text\":\"a > b && c < d\"}\nsaid {\"text\":\"a > b && c < d\"}"
	for _, tt := range []struct{ name, edit string }{
		{"as written", `{"text": "a > b && c < d"}`},
		{"escaped on the way", `{"text":"a \u003e b \u0026\u0026 c \u003C d"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "agents:\n  - name: a\n    tools: [say]\n    extensions: [{name: gate}]\n", `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: say, id: c1, args: {text: hi}}]
      - steps:
          - text: "after: {{ .LastMessage }}"
`, runtime.WithTool(say), runtime.WithExtension("gate", (&editGate{}).factory))
			if res := h.mustSend("a", "k", "go"); res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("Send = %s, want paused", res.FinishReason)
			}
			items, _ := h.rt.Pending(ctx, ledger.Filter{Open: true})
			if len(items) != 1 {
				t.Fatalf("items = %+v", items)
			}
			if _, err := h.rt.Edit(ctx, items[0].ID, json.RawMessage(tt.edit)); err != nil {
				t.Fatal(err)
			}
			reqs := h.rec.requests()
			var got string
			for _, m := range reqs[len(reqs)-1].Messages {
				if m.Role == pipeline.RoleTool {
					got = m.Content
				}
			}
			if got != want {
				t.Errorf("the model reads the call's result as\n%s\nwant\n%s", got, want)
			}
		})
	}
}

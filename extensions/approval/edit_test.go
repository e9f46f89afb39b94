package approval_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	_ "github.com/ganglion-dev/ganglion/runtime/jsonschema" // the ship tool's enum needs the JSON Schema validator
)

// ship is a tool with a schema that records the arguments of its runs.
type ship struct {
	mu   sync.Mutex
	args []string
}

func (s *ship) tool() pipeline.Tool {
	return pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "ship", Description: "Ships to an environment.", Category: pipeline.CategoryExecute,
		Parameters: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string","enum":["dev","staging","prod"]},"force":{"type":"boolean"}},"required":["env"],"additionalProperties":false}`)},
		Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.args = append(s.args, string(c.Arguments()))
			var a struct{ Env string }
			json.Unmarshal(c.Arguments(), &a)
			return &pipeline.ToolResult{Content: "shipped to " + a.Env}, nil
		}}
}

func (s *ship) runs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.args...)
}

const shipScript = `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: ship, id: s1, args: {env: prod}}]
          - text: "not reached before the answer"
      - steps:
          - text: "after: {{ .LastMessage }}"
`

const shipAgent = `agents:
  - name: a
    tools: [ship]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`

// shipRules ask for every call and deny shipping to dev.
const shipRules = `default: ask
rules:
  - name: not dev
    when: tool.name == "ship" && args.env == "dev"
    decision: deny
    reason: dev is broken
`

// pausedShip opens a runtime on a project whose agent asks to ship to
// prod, and returns it paused on the approval.
func pausedShip(t *testing.T, s *ship, opts ...runtime.Option) (*runtime.Runtime, ledger.Item) {
	t.Helper()
	p := newProject(t, shipScript, shipRules, shipAgent)
	if len(opts) == 0 {
		opts = []runtime.Option{runtime.WithMemoryStore()}
	}
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(p.cfg), runtime.WithTool(s.tool()), runtime.WithoutExpiryTimer()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("ship it"))
	if err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v; want paused", res, err)
	}
	items, _ := rt.Pending(context.Background(), ledger.Filter{Open: true})
	if len(items) != 1 || items[0].Kind != approval.ItemApproval || items[0].CallID != "s1" {
		t.Fatalf("items = %+v", items)
	}
	return rt, items[0]
}

// TestEdit: an approval answered with an edit runs the call once with the
// edited arguments; the history keeps the model's call, and the result
// says which arguments ran, in its content and its metadata. The rules
// judge the edited call again: a deny stands.
func TestEdit(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		args   string
		runs   []string
		result string
		meta   string
		answer string
	}{
		{"edited arguments run", `{ "env": "staging",
			"force": true }`, []string{`{"env":"staging","force":true}`},
			"called with arguments a human edited: {\"env\":\"staging\",\"force\":true}\nshipped to staging",
			`{"env":"staging","force":true}`, `edit {"env":"staging","force":true}`},
		{"an edit the rules deny does not run", `{"env":"dev"}`, nil,
			"called with arguments a human edited: {\"env\":\"dev\"}\ntool call denied: rule \"not dev\" decides deny: dev is broken",
			`{"env":"dev"}`, `edit {"env":"dev"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &ship{}
			rt, it := pausedShip(t, s)
			res, err := rt.Edit(ctx, it.ID, json.RawMessage(tt.args))
			const reply = "after: A human edited the arguments of the call of ship and approved it with theirs; its result shows them."
			if err != nil || res.Response.Content != reply {
				t.Fatalf("Edit = %+v, %v\nwant reply %q", res, err, reply)
			}
			if got := s.runs(); !reflect.DeepEqual(got, tt.runs) {
				t.Errorf("ship ran with %q, want %q", got, tt.runs)
			}
			msgs, err := rt.History(ctx, "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			var call, result string
			var meta any
			for _, m := range msgs {
				for _, c := range m.ToolCalls {
					if c.ID == "s1" {
						call = string(c.Arguments)
					}
				}
				if m.Role == pipeline.RoleTool && m.ToolCallID == "s1" {
					result, meta = m.Content, m.Metadata["edited_arguments"]
				}
			}
			if call != `{"env":"prod"}` {
				t.Errorf("the model's call in the history = %s, want its own arguments", call)
			}
			if result != tt.result || meta != tt.meta {
				t.Errorf("result = %q, metadata %s = %v\nwant %q, %s", result, "edited_arguments", meta, tt.result, tt.meta)
			}
			done, err := rt.PendingItem(ctx, it.ID)
			if err != nil || done.Status != ledger.Answered || done.Answer != tt.answer {
				t.Errorf("item = %+v, %v; want answered %q", done, err, tt.answer)
			}
		})
	}
}

// TestEditRefused: an edit whose arguments do not fit the tool's schema,
// and answers that are not an edit, are refused with what is wrong and
// where; the item stays open and unchanged, and can still be approved.
func TestEditRefused(t *testing.T) {
	ctx := context.Background()
	const prefix = `pending item "$ID": invalid action: `
	tests := []struct {
		name string
		act  func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error)
		err  string
	}{
		{"not in the enum", edit(`{"env":"moon"}`),
			`the edited arguments of the ship call: arguments do not match the schema: /env: value must be one of 'dev', 'staging', 'prod'`},
		{"a required property missing", edit(`{}`),
			`the edited arguments of the ship call: arguments do not match the schema: (root): missing property 'env'`},
		{"several violations", edit(`{"env":1,"force":"yes","extra":true}`),
			"the edited arguments of the ship call: arguments do not match the schema:\n- (root): additional properties 'extra' not allowed\n- /env: got number, want string\n- /force: got string, want boolean"},
		{"not JSON", edit(`{"env":`),
			`the edited arguments of the ship call: arguments are not valid JSON: unexpected end of JSON input`},
		{"not an object", edit(`["staging"]`),
			`the edited arguments of the ship call: arguments must be a JSON object, got array`},
		{"edit as an answer without arguments", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(ctx, id, "edit")
		}, `an edit needs the call's new arguments, a JSON object`},
		{"neither approve nor deny", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(ctx, id, `edit {"env":"staging"}`)
		}, `answer approve or deny, or edit the call's arguments, not "edit {\"env\":\"staging\"}"`},
		{"skip", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) { return rt.Skip(ctx, id) },
			`answer an approval with approve or deny, edit its arguments, or reject it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &ship{}
			rt, it := pausedShip(t, s)
			_, err := tt.act(rt, it.ID)
			if want := strings.ReplaceAll(prefix+tt.err, "$ID", it.ID); err == nil || err.Error() != want {
				t.Fatalf("error = %v\nwant %s", err, want)
			}
			after, err := rt.PendingItem(ctx, it.ID)
			if err != nil || !reflect.DeepEqual(after, it) {
				t.Errorf("after the refusal the item is %+v (%v)\nwant it unchanged: %+v", after, err, it)
			}
			if got := s.runs(); len(got) != 0 {
				t.Errorf("ship ran with %q", got)
			}
			if res, err := rt.Answer(ctx, it.ID, "approve"); err != nil || res.Response.Content != "after: A human approved the call of ship; it ran." {
				t.Fatalf("approve after the refusal = %+v, %v", res, err)
			}
			if got := s.runs(); !reflect.DeepEqual(got, []string{`{"env":"prod"}`}) {
				t.Errorf("after approve, ship ran with %q", got)
			}
		})
	}
}

func edit(args string) func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
	return func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
		return rt.Edit(context.Background(), id, json.RawMessage(args))
	}
}

// TestEditNotAnApproval: an edit of an item that holds no call its kind
// runs again is refused by the runtime, whatever the arguments.
func TestEditNotAnApproval(t *testing.T) {
	ctx := context.Background()
	p := newProject(t, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: flaky, id: f1}]
          - text: "not reached"
`, approveAll, `agents:
  - name: a
    tools: [flaky]
    extensions: [{name: approval, config: {rules: rules.yaml, mistake_limit: 1}}]
`)
	flaky := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "flaky", Description: "Fails.", Category: pipeline.CategoryRead},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "it broke", IsError: true}, nil
		}}
	rt, err := runtime.New(ctx, runtime.WithConfig(p.cfg), runtime.WithMemoryStore(), runtime.WithTool(flaky), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v; want paused", res, err)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 || items[0].Kind != approval.ItemMistakes {
		t.Fatalf("items = %+v", items)
	}
	for _, args := range []string{`{}`, `not json`} {
		_, err := rt.Edit(ctx, items[0].ID, json.RawMessage(args))
		if want := `pending item "` + items[0].ID + `": invalid action: a mistakes item cannot be edited: only an item that holds a paused tool call can`; err == nil || err.Error() != want {
			t.Errorf("Edit(%s) = %v\nwant %s", args, err, want)
		}
	}
	if after, _ := rt.PendingItem(ctx, items[0].ID); !reflect.DeepEqual(after, items[0]) {
		t.Errorf("the item changed: %+v", after)
	}
}

// TestEditAcrossRestart: the edit survives the process; the resume in the
// next one runs the edited call once.
func TestEditAcrossRestart(t *testing.T) {
	ctx := context.Background()
	s := &ship{}
	p := newProject(t, shipScript, shipRules, shipAgent)
	open := func() *runtime.Runtime {
		rt, err := runtime.New(ctx, runtime.WithConfig(p.cfg), runtime.WithTool(s.tool()), runtime.WithoutExpiryTimer(), runtime.WithDataDir(filepath.Join(p.dir, "data")))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt := open()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("ship it")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	rt.Close()
	rt = open()
	defer rt.Close()
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 {
		t.Fatalf("after restart: %+v", items)
	}
	if _, err := rt.Edit(ctx, items[0].ID, json.RawMessage(`{"env":"staging"}`)); err != nil {
		t.Fatal(err)
	}
	if got := s.runs(); !reflect.DeepEqual(got, []string{`{"env":"staging"}`}) {
		t.Fatalf("ship ran with %q, want once with the edit", got)
	}
}

package extensions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// conv is a minimal Conversation.
type conv struct{ msgs []pipeline.Message }

func (c *conv) Len() int                  { return len(c.msgs) }
func (c *conv) At(i int) pipeline.Message { return c.msgs[i] }
func (c *conv) Apply(ev pipeline.MessageEvent) error {
	if ev.Type != pipeline.MessageAppend {
		return fmt.Errorf("unsupported %q", ev.Type)
	}
	c.msgs = append(c.msgs, ev.Message)
	return nil
}

// rig is one agent's pipeline, driven by hand as the runtime would: the
// turn handler runs one step, the step handler runs one call of the tool
// "t". trace records what every layer and handler did.
type rig struct {
	b     pipeline.Builder
	p     *pipeline.Pipeline
	trace []string
	skips []pipeline.Skip
}

// api returns the API of extension name on the rig's builder.
func (r *rig) api(name string, h extensions.Host) *extensions.API {
	h.Builder = &r.b
	if h.Agent == "" {
		h.Agent = "agent"
	}
	return extensions.NewAPI(name, h)
}

func (r *rig) build(t *testing.T) {
	t.Helper()
	tool := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "t", Category: pipeline.CategoryOther},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			r.trace = append(r.trace, "tool")
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: "ok"}, nil
		},
	}
	p, err := r.b.Build(pipeline.Handlers{
		Turn: func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			r.trace = append(r.trace, "turn")
			if _, err := r.p.RunStep(ctx, pipeline.NewStepContext(tc, 1, []pipeline.Tool{tool})); err != nil {
				return nil, err
			}
			return &pipeline.TurnResult{TurnID: tc.TurnID(), FinishReason: pipeline.FinishText, Steps: 1,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: "done"}}, nil
		},
		Step: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			r.trace = append(r.trace, "step")
			tl, found := s.Tools().Lookup("t")
			call := pipeline.ToolCall{ID: "c1", Name: "t", Arguments: json.RawMessage(`{}`)}
			res, err := r.p.RunToolCall(ctx, pipeline.NewToolCallContext(pipeline.ToolCallInfo{
				Agent: s.Agent(), InstanceKey: s.InstanceKey(), TurnID: s.TurnID(), Step: s.Index(),
				Call: call, Tool: tl, Found: found,
			}))
			if err != nil {
				return nil, err
			}
			return &pipeline.StepResult{ToolResults: []pipeline.ToolResult{*res}}, nil
		},
		OnSkip: func(sk pipeline.Skip) { r.skips = append(r.skips, sk) },
	})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	r.p = p
}

func (r *rig) run(ctx context.Context) (*pipeline.TurnResult, error) {
	return r.p.RunTurn(ctx, pipeline.NewTurnContext(pipeline.TurnInfo{
		Agent: "agent", InstanceKey: "i", TurnID: "turn-1",
		Input:        pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"},
		Conversation: &conv{},
	}))
}

// tracer returns middleware of all three hooks that record name around Next.
func tracer(r *rig, name string) (pipeline.TurnFunc, pipeline.StepFunc, pipeline.ToolCallFunc) {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			r.trace = append(r.trace, name+">")
			defer func() { r.trace = append(r.trace, "<"+name) }()
			return t.Next(ctx)
		}, func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			r.trace = append(r.trace, name+">")
			defer func() { r.trace = append(r.trace, "<"+name) }()
			return s.Next(ctx)
		}, func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			r.trace = append(r.trace, name+">")
			defer func() { r.trace = append(r.trace, "<"+name) }()
			return c.Next(ctx)
		}
}

func TestPipelinePriority(t *testing.T) {
	// reg is one extension's registration: its Host.Priority and, if set,
	// the explicit pipeline.Priority of its layer.
	type reg struct {
		ext      string
		host     int
		explicit *int
	}
	p := func(n int) *int { return &n }
	tests := []struct {
		name string
		regs []reg
		// order lists the layers from outermost to innermost.
		order []string
		// prios are the priorities Pipeline.Layers reports, in order.
		prios []int
	}{
		{name: "registration order at equal priority",
			regs:  []reg{{ext: "a"}, {ext: "b"}, {ext: "c"}},
			order: []string{"a", "b", "c"}, prios: []int{0, 0, 0}},
		{name: "host priority orders extensions",
			regs:  []reg{{ext: "a", host: 10}, {ext: "b", host: -5}, {ext: "c"}},
			order: []string{"b", "c", "a"}, prios: []int{-5, 0, 10}},
		{name: "explicit priority overrides the host's",
			regs:  []reg{{ext: "a", host: -10}, {ext: "b", host: -5, explicit: p(20)}, {ext: "c"}},
			order: []string{"a", "c", "b"}, prios: []int{-10, 0, 20}},
		{name: "explicit zero overrides the host's",
			regs:  []reg{{ext: "a", host: 3}, {ext: "b", host: 7, explicit: p(0)}},
			order: []string{"b", "a"}, prios: []int{0, 3}},
		{name: "explicit priority ties keep registration order",
			regs:  []reg{{ext: "a", host: 1, explicit: p(5)}, {ext: "b", host: 5}, {ext: "c", explicit: p(5)}},
			order: []string{"a", "b", "c"}, prios: []int{5, 5, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r rig
			for _, g := range tt.regs {
				api := r.api(g.ext, extensions.Host{Priority: g.host})
				var opts []pipeline.LayerOption
				if g.explicit != nil {
					opts = append(opts, pipeline.Priority(*g.explicit))
				}
				turn, step, tool := tracer(&r, g.ext)
				api.Pipeline.Turn(turn, opts...)
				api.Pipeline.Step(step, opts...)
				api.Pipeline.ToolCall(tool, opts...)
			}
			r.build(t)
			if _, err := r.run(context.Background()); err != nil {
				t.Fatalf("run: %v", err)
			}
			var want []string
			for _, hook := range []string{"turn", "step", "tool"} {
				for _, n := range tt.order {
					want = append(want, n+">")
				}
				want = append(want, hook)
			}
			// Then the tool, step and turn layers unwind, innermost first.
			for range 3 {
				for _, n := range slices.Backward(tt.order) {
					want = append(want, "<"+n)
				}
			}
			if !slices.Equal(r.trace, want) {
				t.Errorf("trace:\n got %q\nwant %q", r.trace, want)
			}
			for _, h := range []pipeline.Hook{pipeline.HookTurn, pipeline.HookStep, pipeline.HookToolCall} {
				var names []string
				var prios []int
				for _, l := range r.p.Layers(h) {
					names = append(names, l.Owner.Extension)
					prios = append(prios, l.Priority)
				}
				if !slices.Equal(names, tt.order) || !slices.Equal(prios, tt.prios) {
					t.Errorf("Layers(%s) = %q %v, want %q %v", h, names, prios, tt.order, tt.prios)
				}
			}
		})
	}
}

func TestPipelineOwner(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		hook     pipeline.Hook
		onError  pipeline.OnError
		register func(api *extensions.API)
		// want is the error of the turn; "" when it succeeds.
		want  string
		trace []string
	}{
		{name: "turn fail_closed", hook: pipeline.HookTurn,
			register: func(api *extensions.API) {
				api.Pipeline.Turn(func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, boom })
			},
			want: `extension "guard": turn middleware: boom`, trace: nil},
		{name: "step fail_closed", hook: pipeline.HookStep,
			register: func(api *extensions.API) {
				api.Pipeline.Step(func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return nil, boom })
			},
			want: `extension "guard": step middleware: boom`, trace: []string{"turn"}},
		{name: "toolCall fail_closed", hook: pipeline.HookToolCall,
			register: func(api *extensions.API) {
				api.Pipeline.ToolCall(func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) { return nil, boom })
			},
			want: `extension "guard": toolCall middleware: boom`, trace: []string{"turn", "step"}},
		{name: "toolCall panic", hook: pipeline.HookToolCall,
			register: func(api *extensions.API) {
				api.Pipeline.ToolCall(func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) { panic(boom) })
			},
			want: `extension "guard": toolCall middleware: panic: boom`, trace: []string{"turn", "step"}},
		{name: "turn fail_open", hook: pipeline.HookTurn, onError: pipeline.FailOpen,
			register: func(api *extensions.API) {
				api.Pipeline.Turn(func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, boom })
			},
			trace: []string{"turn", "step", "tool"}},
		{name: "step fail_open", hook: pipeline.HookStep, onError: pipeline.FailOpen,
			register: func(api *extensions.API) {
				api.Pipeline.Step(func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return nil, boom })
			},
			trace: []string{"turn", "step", "tool"}},
		{name: "toolCall fail_open", hook: pipeline.HookToolCall, onError: pipeline.FailOpen,
			register: func(api *extensions.API) {
				api.Pipeline.ToolCall(func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) { return nil, boom })
			},
			trace: []string{"turn", "step", "tool"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r rig
			// A passing extension around the failing one: the error passes
			// through it unchanged.
			outer := r.api("outer", extensions.Host{})
			outer.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) { return tc.Next(ctx) })
			tt.register(r.api("guard", extensions.Host{OnError: tt.onError}))
			r.build(t)
			res, err := r.run(context.Background())
			checkErr(t, err, tt.want)
			if !slices.Equal(r.trace, tt.trace) {
				t.Errorf("trace = %q, want %q", r.trace, tt.trace)
			}
			layers := r.p.Layers(tt.hook)
			if len(layers) == 0 || layers[len(layers)-1].Owner != (pipeline.Owner{Extension: "guard", OnError: tt.onError}) {
				t.Errorf("Layers(%s) = %+v, want the last owned by guard with %s", tt.hook, layers, tt.onError)
			}
			if tt.want != "" {
				var me *pipeline.MiddlewareError
				if !errors.As(err, &me) {
					t.Fatalf("errors.As(%v, *MiddlewareError) = false", err)
				}
				if me.Extension != "guard" || me.Hook != tt.hook {
					t.Errorf("MiddlewareError{Extension: %q, Hook: %s}, want {guard, %s}", me.Extension, me.Hook, tt.hook)
				}
				if !errors.Is(err, boom) {
					t.Errorf("errors.Is(%v, boom) = false", err)
				}
				if len(r.skips) != 0 {
					t.Errorf("skips = %+v, want none", r.skips)
				}
				return
			}
			if res == nil || res.Response.Content != "done" {
				t.Errorf("result = %+v, want the handler's", res)
			}
			if len(r.skips) != 1 {
				t.Fatalf("skips = %+v, want one", r.skips)
			}
			sk := r.skips[0]
			if sk.Hook != tt.hook || sk.Owner.Extension != "guard" || sk.Owner.OnError != pipeline.FailOpen ||
				sk.Agent != "agent" || sk.InstanceKey != "i" || sk.TurnID != "turn-1" {
				t.Errorf("skip = %+v", sk)
			}
			checkErr(t, sk.Err, fmt.Sprintf(`extension "guard": %s middleware: boom`, tt.hook))
		})
	}
}

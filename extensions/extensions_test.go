package extensions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// checkErr checks that err's text is want, or that err is nil when want is "".
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("err = %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("err = nil, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("err:\n got %q\nwant %q", err.Error(), want)
	}
}

// factory returns a Factory whose extension registers nothing and whose
// identity shows in the error it returns for a nil config, so that tests can
// tell factories apart (funcs are not comparable).
func factory(id string) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		if cfg == nil {
			return nil, errors.New(id)
		}
		return extensions.Func(func(*extensions.API) error { return nil }), nil
	}
}

// identify calls f with a nil config and returns the id factory gave it.
func identify(f extensions.Factory) string {
	_, err := f(nil)
	if err == nil {
		return "<no id>"
	}
	return err.Error()
}

func TestRegistryRegister(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name    string
		ext     string
		factory extensions.Factory
		want    string
	}{
		{name: "valid", ext: "audit", factory: factory("f")},
		{name: "all allowed characters", ext: "a-Z_0.9", factory: factory("f")},
		{name: "64 characters", ext: strings.Repeat("a", 64), factory: factory("f")},
		{name: "space", ext: "my ext", factory: factory("f"),
			want: `store: invalid extension name "my ext": character " " at offset 2 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "slash", ext: "a/b", factory: factory("f"),
			want: `store: invalid extension name "a/b": character "/" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "non-ASCII", ext: "héllo", factory: factory("f"),
			want: `store: invalid extension name "héllo": character "é" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "empty", ext: "", factory: factory("f"),
			want: `store: invalid extension name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "65 characters", ext: long, factory: factory("f"),
			want: `store: invalid extension name "` + long + `": 65 bytes long (want [a-zA-Z0-9_.-]{1,64})`},
		{name: "nil factory", ext: "audit", factory: nil,
			want: `extension "audit": nil factory`},
		{name: "invalid name and nil factory", ext: "", factory: nil,
			want: `store: invalid extension name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := extensions.NewRegistry()
			err := r.Register(tt.ext, tt.factory)
			checkErr(t, err, tt.want)
			_, found := r.Lookup(tt.ext)
			if found != (tt.want == "") {
				t.Errorf("Lookup(%q) found = %v after Register err = %v", tt.ext, found, err)
			}
			if tt.want != "" {
				if !slices.Equal(r.Names(), []string{}) {
					t.Errorf("Names() = %q after a refused Register, want none", r.Names())
				}
				if strings.HasPrefix(tt.want, "store:") && !errors.Is(err, store.ErrInvalidName) {
					t.Errorf("errors.Is(%v, store.ErrInvalidName) = false", err)
				}
			}
		})
	}
}

func TestRegistryDuplicate(t *testing.T) {
	r := extensions.NewRegistry()
	if err := r.Register("x", factory("first")); err != nil {
		t.Fatal(err)
	}
	checkErr(t, r.Register("x", factory("second")), `extension "x" is already registered`)
	// A nil factory under a taken name is refused for the nil factory.
	checkErr(t, r.Register("x", nil), `extension "x": nil factory`)
	f, ok := r.Lookup("x")
	if !ok {
		t.Fatal(`Lookup("x") not found`)
	}
	if got := identify(f); got != "first" {
		t.Errorf("the registered factory is %q, want the first one", got)
	}
	// Names are case-sensitive: "X" is another name.
	if err := r.Register("X", factory("upper")); err != nil {
		t.Errorf(`Register("X"): %v`, err)
	}
}

func TestRegistryLookupAndNames(t *testing.T) {
	r := extensions.NewRegistry()
	if got := r.Names(); got == nil || len(got) != 0 {
		t.Errorf("Names() of an empty registry = %#v, want an empty non-nil slice", got)
	}
	for _, n := range []string{"zeta", "audit", "Beta", "alpha.v2", "alpha", "_x", "9"} {
		if err := r.Register(n, factory(n)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"9", "Beta", "_x", "alpha", "alpha.v2", "audit", "zeta"}
	if got := r.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	// Names returns a copy.
	r.Names()[0] = "changed"
	if got := r.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() after changing a returned slice = %q, want %q", got, want)
	}

	tests := []struct {
		name, lookup string
		found        bool
	}{
		{"registered", "audit", true},
		{"registered with a dot", "alpha.v2", true},
		{"unknown", "approval", false},
		{"other case", "AUDIT", false},
		{"empty", "", false},
		{"invalid", "a b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := r.Lookup(tt.lookup)
			if ok != tt.found {
				t.Fatalf("Lookup(%q) found = %v, want %v", tt.lookup, ok, tt.found)
			}
			if !ok {
				if f != nil {
					t.Errorf("Lookup(%q) returned a factory with found = false", tt.lookup)
				}
				return
			}
			if got := identify(f); got != tt.lookup {
				t.Errorf("Lookup(%q) returned the factory of %q", tt.lookup, got)
			}
		})
	}
}

func TestRegistryMerge(t *testing.T) {
	tests := []struct {
		name  string
		r     []string // names registered in r, each with factory "r:<name>"
		other []string // names registered in other, each with factory "other:<name>"
		nil   bool     // merge a nil registry instead of other
		self  bool     // merge r into itself
		want  map[string]string
	}{
		{name: "adds new entries", r: []string{"a"}, other: []string{"b", "c"},
			want: map[string]string{"a": "r:a", "b": "other:b", "c": "other:c"}},
		{name: "keeps existing entries", r: []string{"a", "b"}, other: []string{"b", "c"},
			want: map[string]string{"a": "r:a", "b": "r:b", "c": "other:c"}},
		{name: "into empty", other: []string{"a", "b"},
			want: map[string]string{"a": "other:a", "b": "other:b"}},
		{name: "from empty", r: []string{"a"},
			want: map[string]string{"a": "r:a"}},
		{name: "nil", r: []string{"a"}, nil: true,
			want: map[string]string{"a": "r:a"}},
		{name: "itself", r: []string{"a", "b"}, self: true,
			want: map[string]string{"a": "r:a", "b": "r:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, other := extensions.NewRegistry(), extensions.NewRegistry()
			for _, n := range tt.r {
				if err := r.Register(n, factory("r:"+n)); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range tt.other {
				if err := other.Register(n, factory("other:"+n)); err != nil {
					t.Fatal(err)
				}
			}
			switch {
			case tt.nil:
				r.Merge(nil)
			case tt.self:
				r.Merge(r)
			default:
				r.Merge(other)
			}
			got := map[string]string{}
			for _, n := range r.Names() {
				f, ok := r.Lookup(n)
				if !ok {
					t.Fatalf("Lookup(%q) not found, but Names lists it", n)
				}
				got[n] = identify(f)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("after Merge: %v, want %v", got, tt.want)
			}
			// other is left as it was.
			if names := other.Names(); !slices.Equal(names, slices.Sorted(slices.Values(tt.other))) {
				t.Errorf("other.Names() = %q after Merge, want %q", names, tt.other)
			}
			// A name merged in is taken: registering it again fails.
			for n := range tt.want {
				checkErr(t, r.Register(n, factory("again")), fmt.Sprintf("extension %q is already registered", n))
			}
		})
	}
}

// TestRegistryConcurrent hammers one registry from many goroutines; run it
// with -race.
func TestRegistryConcurrent(t *testing.T) {
	const workers, perWorker = 8, 50
	r := extensions.NewRegistry()
	src := extensions.NewRegistry()
	for i := range perWorker {
		if err := src.Register("merged"+strconv.Itoa(i), factory("src")); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d.%d", w, i)
				if err := r.Register(name, factory(name)); err != nil {
					t.Errorf("Register(%q): %v", name, err)
				}
				// Every worker also races for one shared name: exactly one wins.
				_ = r.Register("shared", factory("shared"))
				if f, ok := r.Lookup(name); !ok || identify(f) != name {
					t.Errorf("Lookup(%q) right after Register: found = %v", name, ok)
				}
				r.Lookup("shared")
				r.Names()
				if i%10 == 0 {
					r.Merge(src)
				}
			}
		})
	}
	wg.Wait()
	names := r.Names()
	if want := workers*perWorker + 1 + perWorker; len(names) != want {
		t.Errorf("len(Names()) = %d, want %d", len(names), want)
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() is not sorted")
	}
	if f, ok := r.Lookup("shared"); !ok || identify(f) != "shared" {
		t.Errorf(`Lookup("shared") = %v`, ok)
	}
}

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

func TestAPIFields(t *testing.T) {
	var buf bytes.Buffer
	var b pipeline.Builder
	api := extensions.NewAPI("audit", extensions.Host{
		Agent: "assistant", Builder: &b, Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
	})
	if api.Name != "audit" || api.Agent != "assistant" {
		t.Errorf("Name, Agent = %q, %q; want audit, assistant", api.Name, api.Agent)
	}
	if api.Pipeline == nil || api.Tools == nil || api.State == nil || api.Events == nil || api.Logger == nil {
		t.Fatalf("API has a nil field: %+v", api)
	}
	api.Logger.Info("hello", "k", "v")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log record %q: %v", buf.String(), err)
	}
	delete(rec, "time")
	if got, want := fmt.Sprint(rec), fmt.Sprint(map[string]any{"level": "INFO", "msg": "hello", "agent": "assistant", "extension": "audit", "k": "v"}); got != want {
		t.Errorf("log record = %s, want %s", got, want)
	}

	// Without a logger, the API's logs go nowhere.
	quiet := extensions.NewAPI("audit", extensions.Host{Agent: "assistant", Builder: &b})
	if quiet.Logger == nil {
		t.Fatal("Logger is nil without Host.Logger")
	}
	if quiet.Logger.Enabled(context.Background(), slog.LevelError) {
		t.Error("the default logger is enabled; want a discarding one")
	}
	quiet.Logger.Error("dropped")
}

func TestTools(t *testing.T) {
	tool := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "lookup", Category: pipeline.CategoryRead}}
	errTaken := errors.New(`agent "a" already has a tool "lookup"`)
	tests := []struct {
		name    string
		addTool func(*[]string) func(pipeline.Tool) error
		want    string
		wantIs  error
		added   []string
	}{
		{name: "added", addTool: func(added *[]string) func(pipeline.Tool) error {
			return func(t pipeline.Tool) error { *added = append(*added, t.Name); return nil }
		}, added: []string{"lookup"}},
		{name: "refused", addTool: func(*[]string) func(pipeline.Tool) error {
			return func(pipeline.Tool) error { return errTaken }
		}, want: `extension "x": register tool: agent "a" already has a tool "lookup"`, wantIs: errTaken},
		{name: "validated by the host", addTool: func(*[]string) func(pipeline.Tool) error {
			return func(t pipeline.Tool) error { return t.Validate() }
		}, want: `extension "x": register tool: tool "lookup": no function`},
		{name: "no AddTool", addTool: func(*[]string) func(pipeline.Tool) error { return nil },
			want: `extension "x": tools cannot be registered here`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var added []string
			api := extensions.NewAPI("x", extensions.Host{Agent: "a", AddTool: tt.addTool(&added)})
			err := api.Tools.Register(tool)
			checkErr(t, err, tt.want)
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			if !slices.Equal(added, tt.added) {
				t.Errorf("added = %q, want %q", added, tt.added)
			}
		})
	}
}

// stateAPI returns the API of extension ext for agent on st.
func stateAPI(st store.Store, agent, ext string) *extensions.API {
	return extensions.NewAPI(ext, extensions.Host{Agent: agent, Store: st})
}

func TestStateGetSet(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	s := stateAPI(st, "a", "x").State

	got, err := s.Get(ctx, "i")
	if err != nil || got != nil {
		t.Fatalf("Get of nothing = %q, %v; want nil, nil", got, err)
	}
	for _, v := range []string{`{"n":1}`, `[1,2,3]`, `"text"`, `null`, `42`, ` { "spaced" : true } `} {
		if err := s.Set(ctx, "i", json.RawMessage(v)); err != nil {
			t.Fatalf("Set(%s): %v", v, err)
		}
		got, err := s.Get(ctx, "i")
		if err != nil || string(got) != v {
			t.Errorf("Get after Set(%s) = %q, %v", v, got, err)
		}
	}

	// The state does not alias the caller's buffer, in either direction.
	buf := []byte(`{"n":1}`)
	if err := s.Set(ctx, "i", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"n":2}`)
	got, _ = s.Get(ctx, "i")
	if string(got) != `{"n":1}` {
		t.Errorf("state changed with the caller's buffer: %s", got)
	}
	copy(got, `{"n":3}`)
	if again, _ := s.Get(ctx, "i"); string(again) != `{"n":1}` {
		t.Errorf("state changed with a returned buffer: %s", again)
	}

	// nil deletes.
	if err := s.Set(ctx, "i", nil); err != nil {
		t.Fatalf("Set(nil): %v", err)
	}
	if got, err := s.Get(ctx, "i"); err != nil || got != nil {
		t.Errorf("Get after Set(nil) = %q, %v; want nil, nil", got, err)
	}
	if keys, err := st.Instances(ctx, "a"); err != nil || len(keys) != 0 {
		t.Errorf("Instances after the state was deleted = %q, %v; want none", keys, err)
	}
	// Deleting nothing is fine.
	if err := s.Set(ctx, "never", nil); err != nil {
		t.Errorf("Set(nil) of no state: %v", err)
	}
}

func TestStateSetErrors(t *testing.T) {
	ctx := context.Background()
	atLimit := `"` + strings.Repeat("a", extensions.MaxStateSize-2) + `"`
	tests := []struct {
		name  string
		value json.RawMessage
		want  string
	}{
		{name: "at the limit", value: json.RawMessage(atLimit)},
		{name: "one byte over the limit", value: json.RawMessage(atLimit + " "),
			want: `extension "x": set state: 1048577 bytes is over the limit of 1048576`},
		{name: "invalid and over the limit", value: make(json.RawMessage, 2*extensions.MaxStateSize),
			want: `extension "x": set state: 2097152 bytes is over the limit of 1048576`},
		{name: "truncated object", value: json.RawMessage(`{"n":`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "bare word", value: json.RawMessage(`hello`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "two values", value: json.RawMessage(`{} {}`),
			want: `extension "x": set state: value is not valid JSON`},
		{name: "empty", value: json.RawMessage{},
			want: `extension "x": set state: value is not valid JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory()
			defer st.Close()
			s := stateAPI(st, "a", "x").State
			if err := s.Set(ctx, "i", json.RawMessage(`{"kept":true}`)); err != nil {
				t.Fatal(err)
			}
			checkErr(t, s.Set(ctx, "i", tt.value), tt.want)
			got, err := s.Get(ctx, "i")
			if err != nil {
				t.Fatal(err)
			}
			want := `{"kept":true}`
			if tt.want == "" {
				want = string(tt.value)
			}
			if string(got) != want {
				t.Errorf("state after Set = %.40q, want %.40q", got, want)
			}
		})
	}
}

func TestStateLoadSave(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	s := stateAPI(st, "a", "x").State

	type counts struct {
		Turns int      `json:"turns"`
		Tags  []string `json:"tags,omitempty"`
	}
	v := counts{Turns: -1}
	found, err := s.Load(ctx, "i", &v)
	if err != nil || found || v.Turns != -1 {
		t.Fatalf("Load of nothing = %v, %v, %+v; want false, nil and v untouched", found, err, v)
	}
	if err := s.Save(ctx, "i", counts{Turns: 3, Tags: []string{"a"}}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	raw, _ := s.Get(ctx, "i")
	if string(raw) != `{"turns":3,"tags":["a"]}` {
		t.Errorf("saved state = %s", raw)
	}
	var got counts
	found, err = s.Load(ctx, "i", &got)
	if err != nil || !found || got.Turns != 3 || !slices.Equal(got.Tags, []string{"a"}) {
		t.Errorf("Load = %v, %v, %+v", found, err, got)
	}
	// Set and Load meet: state written raw decodes into the struct.
	if err := s.Set(ctx, "i", json.RawMessage(`{"turns":7,"extra":1}`)); err != nil {
		t.Fatal(err)
	}
	got = counts{}
	if found, err := s.Load(ctx, "i", &got); err != nil || !found || got.Turns != 7 {
		t.Errorf("Load after Set = %v, %v, %+v", found, err, got)
	}
}

func TestStateLoadSaveErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		stored []byte // put straight through the store, bypassing Set
		do     func(s *extensions.State) error
		want   string
		found  bool
	}{
		{name: "load garbage", stored: []byte("garbage"), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: invalid character 'g' looking for beginning of value`},
		{name: "load the wrong type", stored: []byte(`{"N":"seven"}`), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: json: cannot unmarshal string into Go struct field .N of type int`},
		{name: "load empty", stored: []byte{}, found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", &v)
				return err
			},
			want: `extension "x": decode state: unexpected end of JSON input`},
		{name: "load into a non-pointer", stored: []byte(`{}`), found: true,
			do: func(s *extensions.State) error {
				var v struct{ N int }
				_, err := s.Load(ctx, "i", v)
				return err
			},
			want: `extension "x": decode state: json: Unmarshal(non-pointer struct { N int })`},
		{name: "save a channel",
			do:   func(s *extensions.State) error { return s.Save(ctx, "i", make(chan int)) },
			want: `extension "x": encode state: json: unsupported type: chan int`},
		{name: "save over the limit",
			do:   func(s *extensions.State) error { return s.Save(ctx, "i", strings.Repeat("a", extensions.MaxStateSize)) },
			want: `extension "x": set state: 1048578 bytes is over the limit of 1048576`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory()
			defer st.Close()
			if tt.stored != nil {
				if err := st.SetState(ctx, "a", "i", "x", tt.stored); err != nil {
					t.Fatal(err)
				}
			}
			s := stateAPI(st, "a", "x").State
			checkErr(t, tt.do(s), tt.want)
			// Load reports that there was state even when it cannot decode it.
			var v any
			found, _ := s.Load(ctx, "i", &v)
			if found != tt.found {
				t.Errorf("found = %v, want %v", found, tt.found)
			}
		})
	}
}

func TestStateDecodeErrorUnwraps(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	if err := st.SetState(ctx, "a", "i", "x", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	_, err := stateAPI(st, "a", "x").State.Load(ctx, "i", &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) || se.Offset != 1 {
		t.Errorf("errors.As(%v, *json.SyntaxError) = false or wrong offset", err)
	}
}

func TestStateIsolation(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	type slot struct{ agent, ext, instance string }
	slots := []slot{
		{"a", "x", "i1"},
		{"a", "x", "i2"}, // another instance
		{"a", "y", "i1"}, // another extension
		{"b", "x", "i1"}, // another agent
		{"b", "y", "i2"},
	}
	for n, sl := range slots {
		v := fmt.Sprintf(`{"slot":%d}`, n)
		if err := stateAPI(st, sl.agent, sl.ext).State.Set(ctx, sl.instance, json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	for n, sl := range slots {
		t.Run(fmt.Sprintf("%s/%s/%s", sl.agent, sl.ext, sl.instance), func(t *testing.T) {
			// A second API of the same agent and extension sees the same state.
			got, err := stateAPI(st, sl.agent, sl.ext).State.Get(ctx, sl.instance)
			if want := fmt.Sprintf(`{"slot":%d}`, n); err != nil || string(got) != want {
				t.Errorf("Get = %s, %v; want %s", got, err, want)
			}
		})
	}
	// Deleting one slot leaves the others.
	if err := stateAPI(st, "a", "x").State.Set(ctx, "i1", nil); err != nil {
		t.Fatal(err)
	}
	for n, sl := range slots {
		got, _ := stateAPI(st, sl.agent, sl.ext).State.Get(ctx, sl.instance)
		want := fmt.Sprintf(`{"slot":%d}`, n)
		if n == 0 {
			want = ""
		}
		if string(got) != want {
			t.Errorf("%v after deleting slot 0: %s, want %q", sl, got, want)
		}
	}
	// The state is the store's: the runtime reads it under the extension's name.
	if got, _ := st.GetState(ctx, "b", "i2", "y"); string(got) != `{"slot":4}` {
		t.Errorf("store.GetState = %s", got)
	}
}

func TestStateStoreErrors(t *testing.T) {
	closed := store.NewMemory()
	closed.Close()
	open := store.NewMemory()
	defer open.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.Background()

	type op struct {
		name string
		do   func(ctx context.Context, s *extensions.State, key string) error
		verb string // the prefix of the error
	}
	ops := []op{
		{"Get", func(ctx context.Context, s *extensions.State, key string) error {
			_, err := s.Get(ctx, key)
			return err
		}, "get state"},
		{"Set", func(ctx context.Context, s *extensions.State, key string) error {
			return s.Set(ctx, key, json.RawMessage(`{}`))
		}, "set state"},
		{"Set nil", func(ctx context.Context, s *extensions.State, key string) error { return s.Set(ctx, key, nil) }, "set state"},
		{"Load", func(ctx context.Context, s *extensions.State, key string) error {
			var v any
			_, err := s.Load(ctx, key, &v)
			return err
		}, "get state"},
		{"Save", func(ctx context.Context, s *extensions.State, key string) error { return s.Save(ctx, key, 1) }, "set state"},
	}
	tests := []struct {
		name   string
		st     store.Store
		ctx    context.Context
		agent  string
		ext    string
		key    string
		cause  string
		wantIs error
	}{
		{name: "closed store", st: closed, ctx: ctx, agent: "a", ext: "x", key: "i",
			cause: "store: closed", wantIs: store.ErrClosed},
		{name: "cancelled context", st: open, ctx: cancelled, agent: "a", ext: "x", key: "i",
			cause: "context canceled", wantIs: context.Canceled},
		{name: "empty instance key", st: open, ctx: ctx, agent: "a", ext: "x", key: "",
			cause:  `store: invalid instance key "": empty (want 1 to 256 bytes of UTF-8 without NUL)`,
			wantIs: store.ErrInvalidName},
		{name: "invalid extension name", st: open, ctx: ctx, agent: "a", ext: "my ext", key: "i",
			cause:  `store: invalid extension name "my ext": character " " at offset 2 not allowed (want [a-zA-Z0-9_.-]{1,64})`,
			wantIs: store.ErrInvalidName},
	}
	for _, tt := range tests {
		for _, o := range ops {
			t.Run(tt.name+"/"+o.name, func(t *testing.T) {
				s := stateAPI(tt.st, tt.agent, tt.ext).State
				err := o.do(tt.ctx, s, tt.key)
				checkErr(t, err, fmt.Sprintf("extension %q: %s: %s", tt.ext, o.verb, tt.cause))
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
				}
			})
		}
	}
}

// fixedTime is the time the test buses stamp on every event.
var fixedTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newBus() *events.Bus {
	return events.NewBus(events.WithClock(func() time.Time { return fixedTime }))
}

func TestEventsPublish(t *testing.T) {
	bus := newBus()
	api := extensions.NewAPI("audit", extensions.Host{Agent: "assistant", Bus: bus})
	var got []events.Event
	unsub := bus.Subscribe("*", func(ev events.Event) { got = append(got, ev) })
	defer unsub()

	api.Events.Publish("audit.tool_call", "i1", map[string]any{"tool": "read_file"})
	api.Events.Publish("audit.summary", "", 3)
	want := []events.Event{
		{Topic: "audit.tool_call", Time: fixedTime, Agent: "assistant", Instance: "i1", Source: "audit", Data: map[string]any{"tool": "read_file"}},
		{Topic: "audit.summary", Time: fixedTime, Agent: "assistant", Source: "audit", Data: 3},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
}

func TestEventsSubscribe(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		// topics are published in this order, by the runtime (r:) or by
		// another extension (e:).
		topics []string
		want   []string // "source topic" of the events received
	}{
		{name: "exact", pattern: "turn.finished",
			topics: []string{"r:turn.started", "r:turn.finished", "e:turn.finished"},
			want:   []string{"runtime turn.finished", "other turn.finished"}},
		{name: "prefix", pattern: "tool.*",
			topics: []string{"r:tool.started", "r:turn.started", "e:tool.custom", "r:toolbox"},
			want:   []string{"runtime tool.started", "other tool.custom"}},
		{name: "everything", pattern: "*",
			topics: []string{"r:turn.started", "e:x"},
			want:   []string{"runtime turn.started", "other x"}},
		{name: "nothing matches", pattern: "approval.*",
			topics: []string{"r:turn.started"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newBus()
			api := extensions.NewAPI("listener", extensions.Host{Agent: "a", Bus: bus})
			other := extensions.NewAPI("other", extensions.Host{Agent: "a", Bus: bus})
			var got []string
			unsub, err := api.Events.Subscribe(tt.pattern, func(ev events.Event) { got = append(got, ev.Source+" "+ev.Topic) })
			if err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			for _, tp := range tt.topics {
				if topic, ok := strings.CutPrefix(tp, "r:"); ok {
					bus.Publish(events.Event{Topic: topic, Agent: "a", Source: "runtime"})
				} else {
					other.Events.Publish(strings.TrimPrefix(tp, "e:"), "", nil)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("received %q, want %q", got, tt.want)
			}
			// The returned function unsubscribes; Close after it is harmless.
			unsub()
			got = nil
			for _, tp := range tt.topics {
				other.Events.Publish(strings.TrimPrefix(strings.TrimPrefix(tp, "r:"), "e:"), "", nil)
			}
			if len(got) != 0 {
				t.Errorf("received %q after unsubscribing", got)
			}
			api.Events.Close()
			unsub()
		})
	}
}

func TestEventsClose(t *testing.T) {
	bus := newBus()
	api := extensions.NewAPI("listener", extensions.Host{Agent: "a", Bus: bus})
	var mu sync.Mutex
	var got []string
	record := func(tag string) events.Handler {
		return func(ev events.Event) { mu.Lock(); got = append(got, tag+" "+ev.Topic); mu.Unlock() }
	}
	for _, p := range []string{"*", "x.*", "x.y"} {
		if _, err := api.Events.Subscribe(p, record(p)); err != nil {
			t.Fatal(err)
		}
	}
	// A subscription of someone else survives the extension's Close.
	unsubOther := bus.Subscribe("x.y", record("bus"))
	defer unsubOther()

	bus.Publish(events.Event{Topic: "x.y"})
	if want := []string{"* x.y", "x.* x.y", "x.y x.y", "bus x.y"}; !slices.Equal(got, want) {
		t.Errorf("before Close: %q, want %q", got, want)
	}
	got = nil
	api.Events.Close()
	bus.Publish(events.Event{Topic: "x.y"})
	api.Events.Publish("x.y", "", nil)
	if want := []string{"bus x.y", "bus x.y"}; !slices.Equal(got, want) {
		t.Errorf("after Close: %q, want %q", got, want)
	}
	unsubOther()
	if bus.Active() {
		t.Error("bus still has subscribers after Close and unsubscribing")
	}
	// Close is idempotent.
	api.Events.Close()

	// Close racing with Subscribe and Publish: run with -race.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := api.Events.Subscribe("race.*", func(events.Event) {}); err != nil {
					t.Error(err)
				}
				api.Events.Publish("race.x", "", nil)
			}
		})
		wg.Go(func() {
			for range 50 {
				api.Events.Close()
			}
		})
	}
	wg.Wait()
	api.Events.Close()
	if bus.Active() {
		t.Error("bus still has subscribers after the last Close")
	}
}

func TestEventsNoBus(t *testing.T) {
	api := extensions.NewAPI("x", extensions.Host{Agent: "a"})
	called := false
	unsub, err := api.Events.Subscribe("*", func(events.Event) { called = true })
	checkErr(t, err, `extension "x": subscribe: no event bus`)
	if !errors.Is(err, extensions.ErrNoBus) {
		t.Errorf("errors.Is(%v, ErrNoBus) = false", err)
	}
	if unsub != nil {
		t.Error("Subscribe without a bus returned an unsubscribe function")
	}
	// Publish and Close without a bus do nothing.
	api.Events.Publish("x.y", "i", 1)
	api.Events.Close()
	if called {
		t.Error("a handler was called")
	}
}

// TestStateRefusesInvalidUTF8: encoding/json's Valid accepts invalid UTF-8
// inside strings; state must not store it.
func TestStateRefusesInvalidUTF8(t *testing.T) {
	st := store.NewMemory()
	api := extensions.NewAPI("x", extensions.Host{Agent: "a", Store: st})
	ctx := context.Background()
	if err := api.State.Set(ctx, "i", json.RawMessage(`{"kept":true}`)); err != nil {
		t.Fatal(err)
	}
	err := api.State.Set(ctx, "i", json.RawMessage("\"\xff\""))
	if err == nil || err.Error() != `extension "x": set state: value is not valid JSON` {
		t.Fatalf("err = %v", err)
	}
	got, _ := api.State.Get(ctx, "i")
	if string(got) != `{"kept":true}` {
		t.Fatalf("state after the refused Set = %q", got)
	}
}

// TestRegistryMergeBothWays: merging two registries into each other at the
// same time must not deadlock.
func TestRegistryMergeBothWays(t *testing.T) {
	a, b := extensions.NewRegistry(), extensions.NewRegistry()
	f := func(extensions.Config) (extensions.Extension, error) { return nil, nil }
	_ = a.Register("from-a", f)
	_ = b.Register("from-b", f)
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() { a.Merge(b) })
		wg.Go(func() { b.Merge(a) })
	}
	wg.Wait()
	if got := strings.Join(a.Names(), ","); got != "from-a,from-b" {
		t.Errorf("a = %s", got)
	}
	if got := strings.Join(b.Names(), ","); got != "from-a,from-b" {
		t.Errorf("b = %s", got)
	}
	var zero extensions.Registry // ready to use
	if err := zero.Register("z", f); err != nil {
		t.Fatal(err)
	}
	zero.Merge(a)
	if got := strings.Join(zero.Names(), ","); got != "from-a,from-b,z" {
		t.Errorf("zero registry = %s", got)
	}
}

package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/task"
	"github.com/ganglion-dev/ganglion/store"
)

// The fixture's Env errors, as the runtime's ErrClosed and ErrPaused.
var (
	errClosed = errors.New("runtime closed")
	errPaused = errors.New("instance paused: it waits for a human")
)

// fixedNow is the fake clock's time.
var fixedNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// gate is a fake Gate: it counts entries and leaves, and refuses entry
// while closed.
type gate struct {
	mu           sync.Mutex
	closed       bool
	enter, leave int
}

func (g *gate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.enter++
	return true
}

func (g *gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leave++
}

// counts returns the entries and leaves so far, once every entry has
// left: a task's goroutine leaves the gate after it gives back its place
// in flight, so Wait may return just before.
func (g *gate) counts() (enter, leave int) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		enter, leave = g.enter, g.leave
		g.mu.Unlock()
		if enter == leave || time.Now().After(deadline) {
			return enter, leave
		}
	}
}

// alone is a fake placement of a runtime that runs alone, as the
// runtime's own (here): reports apply to this process's tasks, spend is
// this process's, answers to other processes fail. mayRun refuses the
// instances it names ("agent/key").
type alone struct {
	d      *Tasks
	mayRun map[string]bool // "agent/key" → false: another process's
}

var _ seam.Placement = (*alone)(nil)

func (*alone) Start() error { return nil }
func (*alone) Route(context.Context, string, string, pipeline.InputEvent, bool) (*pipeline.TurnResult, error) {
	return nil, errors.New("fake placement: Route is not used")
}
func (*alone) Act(context.Context, string, extensions.Action) (*pipeline.TurnResult, error) {
	return nil, errors.New("fake placement: Act is not used")
}
func (*alone) Own(context.Context, seam.Held) error { return nil }
func (*alone) Adopt(seam.Held)                      {}
func (*alone) Evicted(seam.Held)                    {}
func (*alone) Fence(seam.Held) uint64               { return 0 }
func (*alone) Failed(seam.Held, error)              {}
func (p *alone) MayRun(_ context.Context, agent, key string) bool {
	ok, set := p.mayRun[agent+"/"+key]
	return !set || ok
}
func (p *alone) Report(ctx context.Context, parentID string, resp seam.Report) error {
	return p.d.ApplyReport(ctx, parentID, resp.Body.(task.Response))
}
func (*alone) AwaitAnswer(string, func(json.RawMessage) error) (func(), error) {
	return func() {}, nil
}
func (*alone) Answer(_ context.Context, a seam.Answer) error {
	return fmt.Errorf("no caller waits for task %s any more", a.Task)
}
func (*alone) WaitFor(context.Context, string, string, time.Duration) (func(), error) {
	return func() {}, nil
}
func (*alone) SharesSpend() bool                                     { return false }
func (*alone) AddSpend(string, seam.Spend)                           {}
func (*alone) ReadSpent(context.Context, string) (seam.Spend, error) { return seam.Spend{}, nil }
func (*alone) ForgetSpent(context.Context, string) error             { return nil }
func (*alone) State() extensions.StateStore                          { return nil }
func (*alone) Refuse()                                               {}
func (*alone) Shutdown() (func(), error)                             { return func() {}, nil }

// delivery is one call of Env.Deliver.
type delivery struct {
	agent, key string
	in         pipeline.InputEvent
}

// taskID is the task the delivered input names.
func (dl delivery) taskID() string { s, _ := dl.in.Metadata["taskId"].(string); return s }

// fixture is a Tasks on a memory store with a fake Env: every call the
// Env gets is recorded, and answered as the test sets.
type fixture struct {
	t       *testing.T
	st      store.Store
	bus     *events.Bus
	gate    *gate
	place   *alone
	d       *Tasks
	log     *logtest.Buffer
	members map[string]Member

	mu       sync.Mutex
	ids      int
	delivers []delivery
	holds    []string // "what agent/key"
	waitings []string // "agent/key"
	events   []events.Event
	// deliver answers Env.Deliver; nil answers an empty result.
	deliver func(ctx context.Context, n int, dl delivery) (*pipeline.TurnResult, error)
	// waiting answers Env.Waiting.
	waiting  bool
	runnable map[string]error
}

// option changes the fixture's Env before New.
type option func(*Env)

// newFixture returns the fixture's Tasks, whose teams are teams. Its
// agents are added with member before they are used.
func newFixture(t *testing.T, teams []config.Team, opts ...option) *fixture {
	t.Helper()
	f := &fixture{t: t, st: store.NewMemory(), bus: events.NewBus(), gate: &gate{}, log: &logtest.Buffer{},
		members: map[string]Member{}, runnable: map[string]error{}}
	f.place = &alone{mayRun: map[string]bool{}}
	env := Env{
		Engine: &engine.Env{Store: f.st, Bus: f.bus, Now: func() time.Time { return fixedNow }},
		Logger: slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Place:  func() seam.Placement { return f.place },
		Members: func(name string) (Member, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			m, ok := f.members[name]
			return m, ok
		},
		NewID: func(prefix, _ string) string {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.ids++
			return prefix + strconv.Itoa(f.ids)
		},
		Gate:   f.gate,
		Closed: errClosed, Paused: errPaused,
		Deliver: func(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
			dl := delivery{agent, key, in}
			f.mu.Lock()
			f.delivers = append(f.delivers, dl)
			n, fn := len(f.delivers), f.deliver
			f.mu.Unlock()
			if fn == nil {
				return &pipeline.TurnResult{}, nil
			}
			return fn(ctx, n, dl)
		},
		Hold: func(_ context.Context, what, agent, key string) (func(), error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.holds = append(f.holds, what+" "+agent+"/"+key)
			return func() {}, nil
		},
		Waiting: func(_ context.Context, agent, key string) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.waitings = append(f.waitings, agent+"/"+key)
			return f.waiting, nil
		},
		Runnable: func(agent string) error { f.mu.Lock(); defer f.mu.Unlock(); return f.runnable[agent] },
		Fence:    func(string, string) uint64 { return 0 },
		Depth:    5,
		Timeout:  time.Hour,
		Outputs:  t.TempDir(),
	}
	for _, o := range opts {
		o(&env)
	}
	f.d = New(env, teams)
	f.place.d = f.d
	f.bus.Subscribe("*", func(ev events.Event) { f.mu.Lock(); defer f.mu.Unlock(); f.events = append(f.events, ev) })
	t.Cleanup(func() {
		f.d.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.d.Wait(ctx); err != nil {
			t.Errorf("task turns still running at the test's end: %v", err)
		}
	})
	return f
}

// member defines agent name as m, with the default budget unless m sets
// one.
func (f *fixture) member(name string, m Member) {
	if m.Budget == (config.Budget{}) {
		m.Budget = Budget(nil, nil)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[name] = m
}

// onDeliver sets how Env.Deliver answers.
func (f *fixture) onDeliver(fn func(ctx context.Context, n int, dl delivery) (*pipeline.TurnResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliver = fn
}

// delivered returns Env.Deliver's calls so far.
func (f *fixture) delivered() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.delivers...)
}

// deliveredTasks returns the tasks Env.Deliver was called for, in order.
func (f *fixture) deliveredTasks() []string {
	var out []string
	for _, dl := range f.delivered() {
		out = append(out, dl.taskID())
	}
	return out
}

// published returns the events of topic published so far.
func (f *fixture) published(topic string) []events.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []events.Event
	for _, ev := range f.events {
		if ev.Topic == topic {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits for the task turns in the background.
func (f *fixture) wait() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.d.Wait(ctx); err != nil {
		f.t.Fatalf("Wait: %v", err)
	}
}

// store stores tasks as they are.
func (f *fixture) store(tasks ...*task.Task) {
	f.t.Helper()
	storeTasks(f.t, f.st, tasks...)
}

// task returns the stored task id, or fails the test.
func (f *fixture) task(id string) task.Task {
	f.t.Helper()
	got, err := f.d.Task(context.Background(), id)
	if err != nil {
		f.t.Fatalf("task %s: %v", id, err)
	}
	return got
}

// gone fails the test unless task id is deleted.
func (f *fixture) gone(id string) {
	f.t.Helper()
	if got, err := f.d.Task(context.Background(), id); !errors.Is(err, task.ErrNotFound) {
		f.t.Errorf("task %s = %+v, %v; want it deleted", id, got, err)
	}
}

// turn begins a turn of agent's instance key with input in, as the engine
// does: the turn's state, then the hooks' Begin.
func (f *fixture) turn(agent, key, turnID string, in pipeline.InputEvent) *engine.Turn {
	inst := engine.NewInstance(&engine.Agent{Name: agent, Logger: slog.New(slog.NewTextHandler(f.log, nil))}, key, &Turn{})
	ts := inst.Turn()
	ts.Agent, ts.Inst, ts.TurnID, ts.StoreCtx = inst.Def(), inst, turnID, context.Background()
	ts.TurnCtx.Reset(pipeline.TurnInfo{Agent: agent, InstanceKey: key, TurnID: turnID, Input: in})
	ts.Step.Init(&ts.TurnCtx, 1, nil)
	f.d.Begin(ts, in)
	return ts
}

// call runs system tool name in turn ts's current step as its tool call
// callID, with args; the step's reply holds calls (the IDs of its tool
// calls, in order).
func (f *fixture) call(ts *engine.Turn, name, callID string, args any, calls ...string) (*pipeline.ToolResult, error) {
	f.t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	ts.StepRes.Message.ToolCalls = ts.StepRes.Message.ToolCalls[:0]
	for _, id := range calls {
		ts.StepRes.Message.ToolCalls = append(ts.StepRes.Message.ToolCalls, pipeline.ToolCall{ID: id, Name: name})
	}
	for _, tool := range f.d.Tools() {
		if tool.Name != name {
			continue
		}
		c := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Agent: ts.Agent.Name, InstanceKey: ts.Inst.Key(), TurnID: ts.TurnID,
			Step: ts.Step.Index(), Call: pipeline.ToolCall{ID: callID, Name: name, Arguments: b}, Found: true})
		turnhost.Set(c, ts)
		return tool.Func(context.Background(), c)
	}
	f.t.Fatalf("no system tool %q", name)
	return nil, nil
}

// commit stages the step's delegations and commits the instance's
// unsaved batch to the store, as the engine's step commit does, or fails
// it with fail.
func (f *fixture) commit(ts *engine.Turn, fail error) {
	f.t.Helper()
	if err := f.d.Stage(ts); err != nil {
		f.d.Committed(ts, err)
		f.t.Fatalf("Stage: %v", err)
	}
	err := fail
	if err == nil {
		err = f.st.Commit(ts.StoreCtx, ts.Agent.Name, ts.Inst.Key(), *ts.Inst.Unsaved())
	}
	f.d.Committed(ts, err)
	if err == nil {
		*ts.Inst.Unsaved() = store.Batch{}
	}
}

// errText is err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

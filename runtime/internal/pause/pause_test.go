package pause

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/store"
)

// The tests run Pauses on a fake Env: an in-memory ledger, a clock the
// test sets, a gate it opens and closes, and Hold and Run that record what
// they are asked and answer what the test says. Instances are engine
// instances that are never loaded: their history is what the test appends.

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a fake clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gate is a fake Gate: it admits while open, and counts.
type gate struct {
	mu               sync.Mutex
	closed           bool
	entered, refused int
	inside           int
}

func (g *gate) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.refused++
		return false
	}
	g.entered++
	g.inside++
	return true
}

func (g *gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inside--
}

func (g *gate) Closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

func (g *gate) counts() (entered, refused, inside int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.entered, g.refused, g.inside
}

// hold is one call of Env.Hold.
type hold struct{ what, agent, key string }

// run is one call of Env.Run: the instance's agent and key, the input,
// and the links the instance's turn had when it began.
type run struct {
	agent, key string
	ev         pipeline.InputEvent
	links      []string
}

// secret is one call of Env.PutSecret.
type secret struct{ agent, key, name, value string }

// fixture is a Pauses on a fake Env.
type fixture struct {
	t      *testing.T
	ledger *ledger.Ledger
	clock  *clock
	gate   *gate
	logs   *logtest.Buffer
	p      *Pauses
	cancel context.CancelFunc
	cut    error

	mu          sync.Mutex
	agents      map[string]*engine.Agent
	insts       map[string]*engine.Instance // by agent "/" key
	unavailable map[string]error
	holdErr     map[string]error // by agent "/" key
	holds       []hold
	held        int // holds that acquired the slot
	released    int
	runs        []run
	// onRun answers Run; nil answers a finished turn "turn-<n>", n
	// counting from 10.
	onRun     func(in *engine.Instance, ev pipeline.InputEvent) (*pipeline.TurnResult, error)
	secrets   []secret
	secretErr error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := &clock{now: t0}
	bg, cancel := context.WithCancel(context.Background())
	f := &fixture{
		t: t, clock: c, gate: &gate{}, logs: &logtest.Buffer{}, cancel: cancel,
		cut:         errors.New("closed: the runtime stopped before the turn ended"),
		ledger:      ledger.New(store.NewMemory(), ledger.WithClock(c.Now)),
		agents:      map[string]*engine.Agent{},
		insts:       map[string]*engine.Instance{},
		unavailable: map[string]error{},
		holdErr:     map[string]error{},
	}
	f.p = New(Env{
		Ledger: f.ledger, Logger: slog.New(slog.NewTextHandler(f.logs, nil)), Now: c.Now,
		NewID: func(prefix, key string) string { return prefix + key },
		Gate:  f.gate, Bg: bg, Cut: f.cut,
		Hold:        f.hold,
		Run:         f.run,
		Unavailable: f.unavailableOf,
		PutSecret:   f.putSecret,
	})
	t.Cleanup(func() {
		f.p.Stop() // a test may have stopped it: a second Stop returns
		cancel()
		waitFor(t, "the resumes tried again to end", func() bool {
			n := 0
			f.p.resuming.Range(func(any, any) bool { n++; return true })
			return n == 0
		})
	})
	return f
}

// agent returns agent name, made on first use, with kinds registered
// through the pending host under extension "ext".
func (f *fixture) agent(name string, kinds ...extensions.PendingKind) *engine.Agent {
	f.t.Helper()
	f.mu.Lock()
	a := f.agents[name]
	if a == nil {
		a = &engine.Agent{Name: name}
		f.agents[name] = a
	}
	f.mu.Unlock()
	h := f.p.Host(a)
	for _, k := range kinds {
		if err := h.HandlePending("ext", k); err != nil {
			f.t.Fatal(err)
		}
	}
	return a
}

// inst returns agent's instance key, made on first use.
func (f *fixture) inst(agent, key string) *engine.Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.instLocked(agent, key)
}

func (f *fixture) instLocked(agent, key string) *engine.Instance {
	in := f.insts[agent+"/"+key]
	if in == nil {
		in = engine.NewInstance(f.agents[agent], key, nil)
		f.insts[agent+"/"+key] = in
	}
	return in
}

func (f *fixture) hold(ctx context.Context, what, agent, key string) (*engine.Instance, func(), error) {
	f.mu.Lock()
	f.holds = append(f.holds, hold{what, agent, key})
	err := f.holdErr[agent+"/"+key]
	_, known := f.agents[agent]
	var in *engine.Instance
	if err == nil && !known {
		err = fmt.Errorf("%s belongs to agent %q, which the config does not define", what, agent)
	}
	if err == nil {
		in = f.instLocked(agent, key)
	}
	f.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if err := in.Acquire(ctx); err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	return in, func() {
		f.mu.Lock()
		f.released++
		f.mu.Unlock()
		in.Release()
	}, nil
}

func (f *fixture) run(ctx context.Context, in *engine.Instance, ev pipeline.InputEvent) (*pipeline.TurnResult, error) {
	f.mu.Lock()
	f.runs = append(f.runs, run{in.Agent(), in.Key(), ev, in.Turn().Links})
	n := len(f.runs)
	on := f.onRun
	f.mu.Unlock()
	if on != nil {
		return on(in, ev)
	}
	return &pipeline.TurnResult{TurnID: fmt.Sprintf("turn-%d", 9+n), FinishReason: pipeline.FinishText}, nil
}

func (f *fixture) unavailableOf(agent string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unavailable[agent]
}

func (f *fixture) putSecret(_ context.Context, agent, key, name, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.secretErr != nil {
		return f.secretErr
	}
	f.secrets = append(f.secrets, secret{agent, key, name, value})
	return nil
}

// calls returns the Hold and Run calls so far, and how many of the holds
// that acquired the slot were not released.
func (f *fixture) calls() (holds []hold, runs []run, unreleased int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hold(nil), f.holds...), append([]run(nil), f.runs...), f.held - f.released
}

// create stores an open item of agent a's instance k, turn turnID.
func (f *fixture) create(id, a, k, turnID string, mod ...func(*ledger.Item)) ledger.Item {
	f.t.Helper()
	it := ledger.Item{ID: id, Kind: "question", Extension: "ext", Agent: a, Instance: k, TurnID: turnID}
	for _, m := range mod {
		m(&it)
	}
	created, err := f.ledger.Create(context.Background(), it)
	if err != nil {
		f.t.Fatal(err)
	}
	return created
}

// get returns item id as stored.
func (f *fixture) get(id string) ledger.Item {
	f.t.Helper()
	it, err := f.ledger.Get(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return it
}

// all returns every stored item, by ID.
func (f *fixture) all() []ledger.Item {
	f.t.Helper()
	items, err := f.ledger.List(context.Background(), ledger.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	return items
}

// expires gives an item a deadline d after the fake clock's start.
func expires(d time.Duration) func(*ledger.Item) {
	return func(it *ledger.Item) { it.ExpiresAt = t0.Add(d) }
}

// kind is a pending kind whose Resolve answers every action with the
// action's value as the item's message, rejects with Fails, and refuses
// skips; its calls are counted.
type kind struct {
	mu       sync.Mutex
	resolved []extensions.Action
}

func (k *kind) pendingKind(name string) extensions.PendingKind {
	return extensions.PendingKind{Name: name, Resolve: func(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
		k.mu.Lock()
		k.resolved = append(k.resolved, act)
		k.mu.Unlock()
		switch act.Kind {
		case extensions.ActionAnswer, extensions.ActionEdit:
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: act.Value, Message: "Answer: " + act.Value}}, nil
		case extensions.ActionProvide:
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Provided, Message: "Provided " + it.ID},
				Secret: &extensions.Secret{Name: "API_KEY", Value: act.Value}}, nil
		case extensions.ActionReject:
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Reason: act.Reason, Fails: true}}, nil
		}
		return extensions.Outcome{}, fmt.Errorf("%w: a %s is answered, not %sped", extensions.ErrInvalidAction, it.Kind, act.Kind)
	}}
}

func (k *kind) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.resolved)
}

// waitFor polls cond until it holds, failing the test after a generous
// while: the tests never assert how fast anything is.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

// loopRuns reports whether a goroutine runs the expiry loop.
func loopRuns() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	return bytes.Contains(buf, []byte("pause.(*Pauses).expiryLoop"))
}

// sameItems fails the test unless before and after are the same items.
func sameItems(t *testing.T, before, after []ledger.Item) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		t.Errorf("stored items changed:\nbefore %s\nafter  %s", b, a)
	}
}

// errText is err's text, "<nil>" for nil.
func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

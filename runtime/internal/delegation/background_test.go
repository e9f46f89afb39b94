package delegation

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// blocker holds the turns Env.Deliver runs until the test lets them go.
type blocker struct {
	started chan int // the call's number, as it starts
	release chan struct{}
	mu      sync.Mutex
	trace   []string
}

func newBlocker() *blocker {
	return &blocker{started: make(chan int, 16), release: make(chan struct{})}
}

// deliver is an Env.Deliver answer that waits for release, or for ctx.
func (b *blocker) deliver(ctx context.Context, n int, dl delivery) (*pipeline.TurnResult, error) {
	b.note("start " + dl.taskID())
	b.started <- n
	defer b.note("end " + dl.taskID())
	select {
	case <-b.release:
		return &pipeline.TurnResult{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *blocker) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trace = append(b.trace, s)
}

func (b *blocker) notes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.trace...)
}

// queued returns a queued task id of worker's instance k.
func queued(id string) *task.Task {
	return &task.Task{ID: id, Agent: "worker", Instance: "k", State: task.Queued, OriginalRequest: "do " + id,
		Requester: "lead/k", ParentID: "p", Root: "p", Channel: task.ChannelAgent}
}

// TestBackgroundRunsAgainAfter: a task asked to run while its turn runs
// runs again once that turn returned, not alongside it; Wait waits for
// both, and gives up when its context ends.
func TestBackgroundRunsAgainAfter(t *testing.T) {
	f := newFixture(t, nil)
	f.member("worker", Member{})
	f.store(queued("t1"))
	b := newBlocker()
	f.onDeliver(b.deliver)

	f.d.background("t1")
	<-b.started
	f.d.background("t1") // in flight: noted, to run after
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.d.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with its context ended while a turn runs = %v, want context.Canceled", err)
	}
	close(b.release)
	f.wait()
	if want := []string{"start t1", "end t1", "start t1", "end t1"}; !reflect.DeepEqual(b.notes(), want) {
		t.Errorf("turns = %v, want %v", b.notes(), want)
	}
	if e, l := f.gate.counts(); e != 2 || l != 2 {
		t.Errorf("gate entered %d times and left %d, want 2 and 2", e, l)
	}
	if err := f.d.Wait(context.Background()); err != nil {
		t.Errorf("Wait with nothing in flight = %v", err)
	}
}

// TestBackgroundGateClosed: a task whose turn the closing runtime refuses
// is not run, stays stored, and does not hold Wait.
func TestBackgroundGateClosed(t *testing.T) {
	f := newFixture(t, nil)
	f.member("worker", Member{})
	f.store(queued("t1"))
	f.gate.closed = true
	f.d.background("t1")
	f.wait()
	if got := f.deliveredTasks(); len(got) != 0 {
		t.Errorf("turns run for %v, want none", got)
	}
	f.task("t1")
}

// TestStopCancelsTaskTurns: Stop ends the context the task turns run
// under, and a task asked again meanwhile does not run again.
func TestStopCancelsTaskTurns(t *testing.T) {
	f := newFixture(t, nil)
	f.member("worker", Member{})
	f.store(queued("t1"))
	b := newBlocker()
	f.onDeliver(b.deliver)
	f.d.background("t1")
	<-b.started
	f.d.background("t1")
	f.d.Stop()
	f.wait()
	if !errors.Is(f.d.Bg().Err(), context.Canceled) {
		t.Errorf("Bg().Err() = %v after Stop, want context.Canceled", f.d.Bg().Err())
	}
	if want := []string{"start t1", "end t1"}; !reflect.DeepEqual(b.notes(), want) {
		t.Errorf("turns = %v, want %v: the turn cut, and not run again", b.notes(), want)
	}
	f.task("t1") // stays stored, for the next start
}

// instTurn returns a turn of agent's instance key that works on no task,
// with paused its paused turns: what End sees after a turn of an instance.
func instTurn(f *fixture, agent, key string, paused map[string]string) *engine.Turn {
	ts := f.turn(agent, key, "turn-x", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	ts.Inst.Paused = paused
	return ts
}

// TestPausedInstanceBlocksTask: a task whose turn is refused because its
// instance waits for a human waits, while Env.Waiting says the instance
// still waits, until a turn of that instance ends with nothing paused;
// its turn then runs again. A turn that ends paused, or a turn of another
// instance, does not start it.
func TestPausedInstanceBlocksTask(t *testing.T) {
	f := newFixture(t, nil)
	f.member("worker", Member{})
	f.store(queued("t1"))
	f.waiting = true
	f.onDeliver(func(_ context.Context, n int, _ delivery) (*pipeline.TurnResult, error) {
		if n == 1 {
			return nil, errPaused
		}
		return &pipeline.TurnResult{}, nil
	})
	f.d.background("t1")
	f.wait()
	if got := f.deliveredTasks(); !reflect.DeepEqual(got, []string{"t1"}) {
		t.Fatalf("turns run for %v, want t1 once", got)
	}
	if !f.d.blocked[engine.ID{Agent: "worker", Key: "k"}] || f.d.nBlocked.Load() != 1 {
		t.Fatalf("blocked = %v, want worker/k", f.d.blocked)
	}
	for _, ts := range []*engine.Turn{
		instTurn(f, "worker", "k", map[string]string{"p-1": "turn-9"}),
		instTurn(f, "worker", "other", nil),
	} {
		if _, err := f.d.End(ts, pipeline.InputEvent{}, &pipeline.TurnResult{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.wait()
	if got := f.deliveredTasks(); len(got) != 1 {
		t.Fatalf("turns run for %v after a paused turn and another instance's, want t1 once", got)
	}
	if _, err := f.d.End(instTurn(f, "worker", "k", nil), pipeline.InputEvent{}, &pipeline.TurnResult{}, nil); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if got := f.deliveredTasks(); !reflect.DeepEqual(got, []string{"t1", "t1"}) {
		t.Errorf("turns run for %v, want t1 twice", got)
	}
	if len(f.d.blocked) != 0 || f.d.nBlocked.Load() != 0 {
		t.Errorf("blocked = %v after the instance resumed, want none", f.d.blocked)
	}
	if !strings.Contains(f.log.String(), "a task waits for its paused instance") {
		t.Errorf("log does not say the task waits:\n%s", f.log)
	}
}

// TestPausedInstanceResumedMeanwhile: a task refused because its
// instance was paused, whose instance no longer waits by the time it is
// blocked, runs again at once.
func TestPausedInstanceResumedMeanwhile(t *testing.T) {
	f := newFixture(t, nil)
	f.member("worker", Member{})
	f.store(queued("t1"))
	f.onDeliver(func(_ context.Context, n int, _ delivery) (*pipeline.TurnResult, error) {
		if n == 1 {
			return nil, errPaused
		}
		return &pipeline.TurnResult{}, nil
	})
	f.d.background("t1")
	f.wait()
	if got := f.deliveredTasks(); !reflect.DeepEqual(got, []string{"t1", "t1"}) {
		t.Errorf("turns run for %v, want t1 twice", got)
	}
	if len(f.waitings) != 1 || f.waitings[0] != "worker/k" {
		t.Errorf("Waiting asked for %v, want worker/k once", f.waitings)
	}
	if len(f.d.blocked) != 0 {
		t.Errorf("blocked = %v, want none", f.d.blocked)
	}
}

// TestKick: Kick starts the queued tasks' turns (loading a team's
// instances first), the reporting tasks' merged reports, and the answers
// of answered tasks whose channel this process has; it leaves waiting
// tasks, answered tasks without a channel, tasks another process runs,
// and tasks of agents the config lacks or that failed to load (logged).
func TestKick(t *testing.T) {
	var mail []string
	var mailMu sync.Mutex
	f := newFixture(t, []config.Team{{Name: "eng", Agents: []string{"dev", "qa"}}}, func(e *Env) {
		e.Channels = map[string]task.Channel{"mail": task.ChannelFunc(func(_ context.Context, r task.Report) error {
			mailMu.Lock()
			defer mailMu.Unlock()
			mail = append(mail, r.TaskID+": "+r.Response)
			return nil
		})}
	})
	f.member("worker", Member{})
	f.member("dev", Member{Team: "eng"})
	f.member("broken", Member{Unavailable: errNoModule})
	f.place.mayRun["worker/elsewhere"] = false
	reporting := &task.Task{ID: "rep", Agent: "worker", Instance: "k", State: task.Reporting, Context: task.DelegationContext{
		Delegations: []task.Delegation{{ChildTaskID: "c", DelegatedTo: "dev"}}, Responses: []task.Response{{ChildTaskID: "c", FromAgent: "dev", Response: "done"}}}}
	team := queued("team")
	team.Agent, team.Team = "dev", "eng"
	other := queued("other")
	other.Instance = "elsewhere"
	ghost, broken := queued("ghost"), queued("broken")
	ghost.Agent, broken.Agent = "ghost", "broken"
	f.store(queued("q"), reporting, team, other, ghost, broken,
		&task.Task{ID: "wait", Agent: "worker", Instance: "k", State: task.Waiting, Pending: 1},
		&task.Task{ID: "ans-mail", Agent: "worker", Instance: "k", State: task.Answered, Channel: "mail", Answer: "42"},
		&task.Task{ID: "ans-sms", Agent: "worker", Instance: "k", State: task.Answered, Channel: "sms", Answer: "43"})

	f.d.Kick(context.Background(), "", "")
	f.wait()
	got := map[string]pipeline.InputKind{}
	for _, dl := range f.delivered() {
		got[dl.taskID()] = dl.in.Kind
	}
	want := map[string]pipeline.InputKind{"q": pipeline.InputAgentRequest, "rep": pipeline.InputDelegationReport, "team": pipeline.InputAgentRequest}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turns run = %v, want %v", got, want)
	}
	if want := []string{"ans-mail: 42"}; !reflect.DeepEqual(mail, want) {
		t.Errorf("mail got %v, want %v", mail, want)
	}
	f.gone("ans-mail")
	for _, id := range []string{"ans-sms", "wait", "other", "ghost", "broken"} {
		f.task(id)
	}
	if want := []string{`team "eng" dev/k`, `team "eng" qa/k`}; !reflect.DeepEqual(f.holds, want) {
		t.Errorf("holds = %v, want %v", f.holds, want)
	}
	if evs := f.published(events.TeamActivated); len(evs) != 1 || !reflect.DeepEqual(evs[0].Data, events.TeamActivatedData{Team: "eng", Agents: []string{"dev", "qa"}}) || evs[0].Instance != "k" {
		t.Errorf("team.activated = %+v, want one for eng in k", evs)
	}
	log := f.log.String()
	for _, want := range []string{
		`msg="a task belongs to an agent the config does not define; it waits" task=ghost agent=ghost`,
		`msg="a task belongs to an agent that failed to load; it waits" task=broken agent=broken`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}

	// Kick of one instance starts that instance's tasks only.
	f.store(queued("q2"), func() *task.Task { t := queued("q3"); t.Instance = "k3"; return t }())
	before := len(f.delivered())
	f.d.Kick(context.Background(), "worker", "k3")
	f.wait()
	if got := f.deliveredTasks()[before:]; !reflect.DeepEqual(got, []string{"q3"}) {
		t.Errorf("Kick of worker/k3 ran %v, want q3", got)
	}
}

// TestForget: Forget drops the cached tasks of one instance, and keeps
// the others'.
func TestForget(t *testing.T) {
	f := newFixture(t, nil)
	for _, tk := range []*task.Task{
		{ID: "a", Agent: "lead", Instance: "k"}, {ID: "b", Agent: "lead", Instance: "k"},
		{ID: "c", Agent: "lead", Instance: "k2"}, {ID: "d", Agent: "worker", Instance: "k"},
	} {
		f.d.cache[tk.ID] = tk
	}
	f.d.Forget("lead", "k")
	var left []string
	for id := range f.d.cache {
		left = append(left, id)
	}
	if len(left) != 2 || f.d.cache["c"] == nil || f.d.cache["d"] == nil {
		t.Errorf("cache after Forget(lead, k) holds %v, want c and d", left)
	}
}

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/task"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/delegation"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// This file holds the runtime's side of the placement seam
// ([seam.Placement]): here, the placement of a runtime that runs alone,
// and local, the runtime as another placement (a cluster's) sees it.

// errMoved is the error of a turn that reached a process which does not
// own its instance: the sender looks the owner up again and goes there.
var errMoved = seam.ErrMoved

// here is the placement of a runtime that runs alone: every instance lives
// in this process.
type here struct{ r *Runtime }

var _ seam.Placement = here{}

func (here) Start() error { return nil }

func (h here) Route(ctx context.Context, agent, key string, in pipeline.InputEvent, _ bool) (*pipeline.TurnResult, error) {
	return h.r.sendHere(ctx, agent, key, in)
}

func (h here) Act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	return h.r.actHere(ctx, id, act)
}

func (here) Own(context.Context, seam.Held) error        { return nil }
func (here) Evicted(seam.Held)                           {}
func (here) Adopt(seam.Held)                             {}
func (here) Fence(seam.Held) uint64                      { return 0 }
func (here) Failed(seam.Held, error)                     {}
func (here) MayRun(context.Context, string, string) bool { return true }

func (h here) Report(ctx context.Context, parentID string, resp seam.Report) error {
	return h.r.tasks.ApplyReport(ctx, parentID, resp.Body.(task.Response))
}

func (here) AwaitAnswer(string, func(json.RawMessage) error) (func(), error) {
	return func() {}, nil
}

func (here) Answer(_ context.Context, a seam.Answer) error {
	return fmt.Errorf("no caller waits for task %s any more (it gave up, or the runtime restarted); the answer is in %s/%s's history", a.Task, a.Agent, a.Instance)
}

func (here) WaitFor(context.Context, string, string, time.Duration) (func(), error) {
	return func() {}, nil
}

func (here) SharesSpend() bool                                     { return false }
func (here) AddSpend(string, seam.Spend)                           {}
func (here) ReadSpent(context.Context, string) (seam.Spend, error) { return seam.Spend{}, nil }
func (here) ForgetSpent(context.Context, string) error             { return nil }
func (h here) State() extensions.StateStore                        { return h.r.env.Store }
func (here) Refuse()                                               {}
func (here) Shutdown() (func(), error)                             { return func() {}, nil }

// local is the runtime as a placement sees it ([seam.Local]).
type local struct{ r *Runtime }

var _ seam.Local = local{}

func (l local) SendHere(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	return l.r.sendHere(ctx, agent, key, in)
}

func (l local) ActHere(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	return l.r.actHere(ctx, id, act)
}

func (l local) Runnable(agent string) error {
	_, err := l.r.runnable(agent)
	return err
}

// ApplyReport takes the report as Report carried it: a task.Response
// from this process, its JSON encoding from another.
func (l local) ApplyReport(ctx context.Context, parentID string, resp any) error {
	switch v := resp.(type) {
	case task.Response:
		return l.r.tasks.ApplyReport(ctx, parentID, v)
	case json.RawMessage:
		var d task.Response
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("task %s: a malformed report: %w", parentID, err)
		}
		return l.r.tasks.ApplyReport(ctx, parentID, d)
	}
	return fmt.Errorf("task %s: a report of type %T", parentID, resp)
}

func (l local) TaskInstance(ctx context.Context, id string) (string, string, error) {
	t, err := l.r.Task(ctx, id)
	return t.Agent, t.Instance, err
}

func (l local) Item(ctx context.Context, id string) (ledger.Item, error) {
	return l.r.pauses.Ledger().Get(ctx, id)
}

func (l local) Cached(agent, key string) (seam.Held, func()) {
	in, ok := l.r.cache.Held(instanceID{Agent: agent, Key: key})
	if !ok {
		return nil, nil
	}
	return in, func() { l.r.unhold(in) }
}

func (l local) Hold(agent, key string) (seam.Held, func(), error) {
	a, ok := l.r.agents.byName[agent]
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownAgent, agent)
	}
	in := l.r.instance(a, key)
	return in, func() { l.r.unhold(in) }, nil
}

func (l local) ForgetTasks(agent, key string) {
	l.r.tasks.Forget(agent, key)
}

// Recover does for the instances a stopped process owned what New does
// at start-up: it continues their tasks, resumes their answered turns and
// expires their overdue pending items. Instances other live processes own
// are theirs; each freed one is taken by one process (the one it hashes
// to), and a task turn that ran already is refused there.
func (l local) Recover() {
	r := l.r
	if !r.life.gate.Enter() {
		return
	}
	defer r.life.gate.Leave()
	if err := r.recover(r.tasks.Bg(), true); err != nil && r.tasks.Bg().Err() == nil {
		r.logger.Warn("cluster: recovering what a stopped process left failed in part", "err", err)
	}
}

func (l local) Enter() bool { return l.r.life.forwards.Enter() }
func (l local) Leave()      { l.r.life.forwards.Leave() }

func (l local) Seal(plain []byte, aad string) ([]byte, error) { return l.r.keyring.Seal(plain, aad) }
func (l local) Open(sealed []byte, aad string) ([]byte, error) {
	return l.r.keyring.Open(sealed, aad)
}

// errorKinds name the runtime's errors a turn's error keeps when it comes
// from another process.
var errorKinds = map[string]error{
	"closed": ErrClosed, "unknown-agent": ErrUnknownAgent,
	"unavailable": ErrAgentUnavailable, "cycle": ErrCycle, "depth": ErrDepth,
	"paused": ErrPaused, "task-failed": ErrTaskFailed, "task-moved": delegation.ErrTaskMoved,
	"budget": delegation.ErrBudget, "no-task": ErrNoTask,
}

// fence is the fence of agent's instance key for a write of what its
// owner alone writes: zero when the runtime runs alone, or if the
// instance is not in memory here.
func (r *Runtime) fence(agent, key string) uint64 {
	if _, alone := r.place.(here); alone {
		return 0
	}
	in, ok := r.cache.Peek(instanceID{Agent: agent, Key: key})
	if !ok {
		return 0
	}
	return r.place.Fence(in)
}

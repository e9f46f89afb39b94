package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/pause"
)

// Pauses (runtime/internal/pause) keep the pending items of turns that
// wait for a human; these are the runtime's methods for them.

var (
	// ErrPaused is returned for input to an instance that waits for a human.
	ErrPaused = pause.ErrPaused
	// ErrTaskFailed is wrapped by a resume turn's error when a required
	// dependency was rejected or never provided.
	ErrTaskFailed = pause.ErrTaskFailed
)

// newPauses returns the runtime's pauses.
func (r *Runtime) newPauses() *pause.Pauses {
	return pause.New(pause.Env{Ledger: ledger.New(r.env.Store, ledger.WithEvents(r.env.Bus), ledger.WithClock(r.env.Now)), Logger: r.logger, Now: r.env.Now, Tape: r.obs.tape, NewID: r.newID,
		Gate: &r.life.gate, Bg: r.tasks.Bg(), Cut: errCut,
		Hold: func(ctx context.Context, what, agent, key string) (*instance, func(), error) {
			_, in, done, err := r.holdInstance(ctx, what, agent, key)
			return in, done, err
		},
		Run: func(ctx context.Context, in *instance, ev pipeline.InputEvent) (*pipeline.TurnResult, error) {
			return hostOf(in.Def()).runTurn(ctx, in, ev)
		},
		Unavailable: func(agent string) error {
			if a, ok := r.agents.byName[agent]; ok {
				return a.available()
			}
			return nil
		},
		PutSecret: r.putSecret,
	})
}

// Pending lists the pending items that match f.
func (r *Runtime) Pending(ctx context.Context, f ledger.Filter) ([]ledger.Item, error) {
	if !r.life.gate.Enter() {
		return nil, ErrClosed
	}
	defer r.life.gate.Leave()
	return r.pauses.Ledger().List(ctx, f)
}

// PendingItem returns the pending item with id.
func (r *Runtime) PendingItem(ctx context.Context, id string) (ledger.Item, error) {
	if !r.life.gate.Enter() {
		return ledger.Item{}, ErrClosed
	}
	defer r.life.gate.Leave()
	return r.pauses.Ledger().Get(ctx, id)
}

// Answer answers the question (or approval) id. If no other item of its
// turn is open, it runs the resume turn and returns its result; else the
// result is nil. An unknown or resolved item, or an answer the item
// refuses, is an error, and nothing changes.
func (r *Runtime) Answer(ctx context.Context, id, answer string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionAnswer, Value: answer})
}

// Edit approves the tool call that approval id paused, to run once with
// args, a JSON object matching the tool's schema; see [Runtime.Answer].
// Other args, or an item that takes no edit, are refused with
// [extensions.ErrInvalidAction], changing nothing.
func (r *Runtime) Edit(ctx context.Context, id string, args json.RawMessage) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionEdit, Value: string(args)})
}

// Skip skips the optional question id; see [Runtime.Answer].
func (r *Runtime) Skip(ctx context.Context, id string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionSkip})
}

// Provide gives the dependency id its value; see [Runtime.Answer]. A
// secret is sealed, and reaches only tools' environments.
func (r *Runtime) Provide(ctx context.Context, id, value string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionProvide, Value: value})
}

// Reject refuses the dependency (or approval) id; see [Runtime.Answer]. A
// required dependency's resume turn then fails with [ErrTaskFailed].
func (r *Runtime) Reject(ctx context.Context, id, reason string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionReject, Reason: reason})
}

// act applies a human's action to item id under its instance's turn slot,
// so that it is ordered with the instance's turns and other actions; in a
// cluster, on the process that owns the instance.
func (r *Runtime) act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	return r.place.Act(ctx, id, act)
}

// actHere is act in this process.
func (r *Runtime) actHere(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	if !r.life.gate.Enter() {
		return nil, ErrClosed
	}
	defer r.life.gate.Leave()
	return r.pauses.Act(ctx, id, act)
}

// ExpirePending expires the pending items past their deadline, as their
// extensions say, runs the resume turns that follow, and returns the
// items. New and a timer call it.
func (r *Runtime) ExpirePending(ctx context.Context) ([]ledger.Item, error) {
	if !r.life.gate.Enter() {
		return nil, ErrClosed
	}
	defer r.life.gate.Leave()
	return r.pauses.Expire(ctx)
}

// holdInstance acquires the turn slot of agent's instance key and loads
// it; what names the caller's business in errors.
func (r *Runtime) holdInstance(ctx context.Context, what, agentName, key string) (*agent, *instance, func(), error) {
	a, ok := r.agents.byName[agentName]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s belongs to agent %q, which the config does not define", what, agentName)
	}
	inst := r.instance(a, key)
	if err := inst.Acquire(ctx); err != nil {
		r.unhold(inst)
		return nil, nil, nil, fmt.Errorf("%s: waiting for instance %q: %w", what, key, err)
	}
	done := func() { inst.Release(); r.unhold(inst) }
	if err := r.place.Own(ctx, inst); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := inst.Load(ctx); err != nil {
		done()
		return nil, nil, nil, err
	}
	return a, inst, done, nil
}

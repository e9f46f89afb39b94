package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/store"
)

// This file routes turns and agent calls to the process that owns their
// instance.

// remoteSend is a turn routed to the process that owns its instance.
type remoteSend struct {
	ID       string              `json:"id"`
	Agent    string              `json:"agent"`
	Instance string              `json:"instance"`
	Input    pipeline.InputEvent `json:"input"`
	// TimeoutMS is what was left of the sender's deadline; 0: none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// route runs a turn on the process that owns its instance: here when this
// process does or nobody does (it takes the lease then), else there,
// looking again while the instance moves (whileMoved). The error it
// returns never matches errMoved: that error means "this turn did not run
// here", and a turn that called this one did run.
//
// place says what to do when nobody owns the instance: run the turn on
// the process the instance's name hashes to (true), or here.
func (n *node) Route(ctx context.Context, agentName, key string, in pipeline.InputEvent, place bool) (*pipeline.TurnResult, error) {
	if err := n.l.Runnable(agentName); err != nil {
		return nil, err
	}
	var res *pipeline.TurnResult
	waited, err := n.whileMoved(ctx, func() error {
		owner, mine, err := n.owner(ctx, agentName, key)
		if err != nil {
			res = &pipeline.TurnResult{FinishReason: pipeline.FinishError}
			return fmt.Errorf("agent %q instance %q: %w", agentName, key, err)
		}
		placed := owner == "" && place
		if placed {
			owner = n.place(agentName, key)
			mine = owner == n.name
		}
		if mine || owner == "" {
			res, err = n.l.SendHere(ctx, agentName, key, in)
		} else {
			res, err = n.forward(ctx, owner, agentName, key, in)
		}
		if placed && errors.Is(err, errMoved) {
			place = false // the process it hashed to is gone: run it here
		}
		return err
	})
	if waited {
		res = &pipeline.TurnResult{FinishReason: pipeline.FinishError}
		if ctx.Err() != nil {
			res.FinishReason = pipeline.FinishAborted
		}
		err = fmt.Errorf("agent %q instance %q: %w", agentName, key, err)
	}
	return res, err
}

// forward runs a turn on owner and returns its result.
func (n *node) forward(ctx context.Context, owner, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	req := remoteSend{ID: nuid.Next(), Agent: agent, Instance: key, Input: in}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	rep, err := n.call(ctx, owner, ".send", req)
	switch {
	case ctx.Err() != nil:
		// Tell the owner, so that the turn ends there too.
		n.nc.Publish(n.prefix+owner+".cancel", []byte(req.ID))
		return &pipeline.TurnResult{FinishReason: pipeline.FinishAborted}, fmt.Errorf("agent %q instance %q on process %s: %w", agent, key, owner, ctx.Err())
	case errors.Is(err, errMoved):
		return nil, fmt.Errorf("agent %q instance %q: %w", agent, key, err)
	case errors.Is(err, errOwnerLeft), errors.Is(err, errLost):
		// The turn may have run in part, and running it again is not this
		// call's to decide: its outcome is unknown, and its history says
		// what it did. A task's turn is continued by the process that
		// takes the instance over.
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q: %w (%w: it may have run in part; its history says)", agent, key, err, store.ErrOutcomeUnknown)
	case err != nil:
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q: %w", agent, key, err)
	}
	return rep.Result, n.replyError(rep)
}

// serve runs a turn another process routed here, with what was left of
// its sender's deadline; the sender's cancel message ends it.
func (n *node) serve(m *nats.Msg) {
	handle(n, m, func(req remoteSend) remoteReply {
		ctx, cancel := context.WithCancel(context.Background())
		if req.TimeoutMS > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
		}
		defer cancel()
		n.mu.Lock()
		n.running[req.ID] = cancel
		n.mu.Unlock()
		defer func() {
			n.mu.Lock()
			delete(n.running, req.ID)
			n.mu.Unlock()
		}()
		res, err := n.l.SendHere(ctx, req.Agent, req.Instance, req.Input)
		return n.resultReply(res, n.movedIfClosed(err))
	})
}

// cancel ends a routed turn whose sender gave up.
func (n *node) cancel(m *nats.Msg) {
	n.mu.Lock()
	cancel := n.running[string(m.Data)]
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// waitFor records in the cluster's wait-for graph that a turn of self
// waits (at most timeout) for one of to, unless to's turns already wait,
// directly or through others and on any process, for self's: the cycle of
// two independent turns calling each other, which the chain a call carries
// cannot see. done takes the edge away.
func (n *node) WaitFor(ctx context.Context, self, to string, timeout time.Duration) (done func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	remove, err := n.waits.Add(wctx, self, to, timeout)
	if err != nil {
		return nil, coord.Unavailable(ctx, err)
	}
	done = func() {
		n.releasing.Add(1)
		go func() {
			defer n.releasing.Done()
			ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
			defer cancel()
			if err := remove(ctx); err != nil {
				n.log.Warn("cluster: removing a wait from the wait-for graph failed; it expires on its own", "from", self, "to", to, "err", err)
			}
		}()
	}
	path, err := n.waits.Path(wctx, to, self)
	if err != nil {
		done()
		return nil, coord.Unavailable(ctx, err)
	}
	if path != nil {
		done()
		return nil, fmt.Errorf("%w: %s → %s (a turn of %s waits for %s already)", n.errs.Cycle, self, strings.Join(path, " → "), to, self)
	}
	return done, nil
}

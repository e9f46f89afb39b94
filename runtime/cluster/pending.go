package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// This file applies a human's action on a pending item on the process
// that owns its instance.

// remoteAct is a human's action on a pending item, routed to the process
// that owns the item's instance. A provided value travels sealed with the
// key every process shares, never in clear.
type remoteAct struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Value  string `json:"value,omitempty"`
	Sealed []byte `json:"sealed,omitempty"` // Value, of a provide
	Reason string `json:"reason,omitempty"`
}

// actAAD binds a sealed value to the item it answers.
func actAAD(id string) string { return "cluster-act/" + id }

// act applies a human's action to item id on the process that owns its
// instance: here when this one does or nobody does.
func (n *node) Act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	var res *pipeline.TurnResult
	waited, err := n.whileMoved(ctx, func() error {
		it, err := n.l.Item(ctx, id)
		if err != nil {
			return err
		}
		owner, mine, err := n.owner(ctx, it.Agent, it.Instance)
		switch {
		case err != nil:
			return fmt.Errorf("pending item %q: %w", id, err)
		case mine || owner == "":
			res, err = n.l.ActHere(ctx, id, act)
		default:
			res, err = n.forwardAct(ctx, owner, id, act)
		}
		return err
	})
	if waited {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	return res, err
}

// forwardAct applies the action on owner.
func (n *node) forwardAct(ctx context.Context, owner, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	req := remoteAct{ID: id, Kind: string(act.Kind), Value: act.Value, Reason: act.Reason}
	if act.Kind == extensions.ActionProvide {
		sealed, err := n.l.Seal([]byte(act.Value), actAAD(id))
		if err != nil {
			return nil, fmt.Errorf("pending item %q: %w", id, err)
		}
		req.Value, req.Sealed = "", sealed
	}
	rep, err := n.call(ctx, owner, ".act", req)
	switch {
	case errors.Is(err, errOwnerLeft):
		return nil, n.ownerLeft(ctx, owner, id, err)
	case errors.Is(err, errLost):
		// The owner may have taken it, and may still be resuming.
		return nil, fmt.Errorf("pending item %q: %w (%w: read the item before you act on it again)", id, err, store.ErrOutcomeUnknown)
	case err != nil:
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	return rep.Result, n.replyError(rep)
}

// serveAct applies an action routed here; a process that no longer owns
// the item's instance says so, and the sender looks again.
func (n *node) serveAct(m *nats.Msg) {
	handle(n, m, func(req remoteAct) remoteReply {
		act := extensions.Action{Kind: extensions.ActionKind(req.Kind), Value: req.Value, Reason: req.Reason}
		if req.Sealed != nil {
			v, err := n.l.Open(req.Sealed, actAAD(req.ID))
			if err != nil {
				return remoteReply{Error: fmt.Sprintf("pending item %q: the provided value cannot be opened here: do all processes share one %s?", req.ID, n.env.KeyEnv)}
			}
			act.Value = string(v)
		}
		// The sender gave up when its own wait ended; the action is the
		// human's, and runs to its end here, as one asked here does: a
		// stop gives its resume turn the stop's time.
		res, err := n.l.ActHere(context.Background(), req.ID, act)
		return n.resultReply(res, n.movedIfClosed(err))
	})
}

// ownerLeft is the error of an action on item id that owner took and
// left the cluster (stopped, was killed) before it answered; err is
// call's. The item says how far the action went: still open, it was not
// taken (act again); else it was, and either its resume turn ran, or the
// instance's next owner finishes it (recoverResumes), as it does a resume
// cut by a stop. The error matches Errors.Closed: the process that took the
// action closed.
func (n *node) ownerLeft(ctx context.Context, owner, id string, err error) error {
	it, gerr := n.l.Item(ctx, id)
	switch {
	case gerr != nil:
		return fmt.Errorf("pending item %q: %w, and reading the item to see whether the action was taken failed: %v (%w)", id, err, gerr, n.errs.Closed)
	case it.Open:
		return fmt.Errorf("pending item %q: %w; the action was not taken, the item is still open: act on it again (%w)", id, err, n.errs.Closed)
	case it.ResumedBy != "":
		return fmt.Errorf("pending item %q: the action was taken (the item is %s) and resume turn %s ran, but process %s stopped before it answered: see the instance's history (%w)", id, it.Status, it.ResumedBy, owner, n.errs.Closed)
	}
	return fmt.Errorf("pending item %q: the action was taken (the item is %s), but process %s stopped before its resume turn ended; the instance's next owner finishes it (%w)", id, it.Status, owner, n.errs.Closed)
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// This file carries delegation across processes: a child's report to its
// parent's owner, and an Ask's answer to the process that asked.

// remoteReport is a child task's report, routed to the process that owns
// its parent's instance.
type remoteReport struct {
	Parent   string             `json:"parent"`
	Agent    string             `json:"agent"`    // of the parent
	Instance string             `json:"instance"` // of the parent
	Response DelegationResponse `json:"response"`
}

// report hands a child task's report to its parent, parentID, on the
// process that owns the parent's instance, this one if nobody does: the
// parent's task is written there alone. The child's task is deleted in
// the commit that adds the report, so a report that does not get there
// (no process takes the parent's instance within twice the lease TTL)
// leaves the child stored, and its answer, in its history, is reported
// again when its instance next loads (resettleTask).
func (n *node) report(ctx context.Context, parentID string, resp DelegationResponse) error {
	waited, err := n.whileMoved(ctx, func() error {
		parent, err := n.r.Task(ctx, parentID)
		switch {
		case errors.Is(err, ErrNoTask):
			return n.r.applyReport(ctx, parentID, resp) // which drops it, deleting the child
		case err != nil:
			return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parentID, err)
		}
		return n.reportTo(ctx, &parent, resp)
	})
	if waited {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parentID, err)
	}
	return err
}

// reportTo applies the report here if this process owns the parent's
// instance, or can take it, and sends it to its owner otherwise.
func (n *node) reportTo(ctx context.Context, parent *Task, resp DelegationResponse) error {
	owner, mine, err := n.owner(ctx, parent.Agent, parent.Instance)
	switch {
	case err != nil:
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parent.ID, err)
	case mine || owner == "":
		unpin, ok := n.pin(parent.Agent, parent.Instance)
		if !ok {
			// Nobody's, or this process's lease went stale: take it.
			if err := n.r.takeLease(ctx, parent.Agent, parent.Instance); err != nil {
				return err
			}
			unpin, ok = n.pin(parent.Agent, parent.Instance)
		}
		if !ok {
			return fmt.Errorf("task %s: reporting to task %s: %w (the lease of %s/%s was given up meanwhile)", resp.ChildTaskID, parent.ID, errMoved, parent.Agent, parent.Instance)
		}
		defer unpin()
		return movedIfFenced(n.r.applyReport(ctx, parent.ID, resp))
	}
	rctx, cancel := context.WithTimeout(ctx, n.r.calls.timeout)
	defer cancel()
	// Not retried if the owner leaves meanwhile (errOwnerLeft): adding
	// a report is not idempotent, and it may have been committed.
	rep, err := n.call(rctx, owner, ".report", remoteReport{Parent: parent.ID, Agent: parent.Agent, Instance: parent.Instance, Response: resp})
	if err != nil {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parent.ID, err)
	}
	return replyError(rep)
}

// serveReport applies a report routed here, if this process still owns
// the parent's instance.
func (n *node) serveReport(m *nats.Msg) {
	handle(n, m, func(req remoteReport) remoteReply {
		unpin, ok := n.pin(req.Agent, req.Instance)
		if !ok {
			return errorReply(fmt.Errorf("task %s: %w (not %s)", req.Parent, errMoved, n.name))
		}
		defer unpin()
		return resultReply(nil, movedIfFenced(n.r.applyReport(n.r.tasks.bg, req.Parent, req.Response)))
	})
}

// awaitAnswer receives the answer to replyTo, an Ask of this process,
// when another process's task gives it, into wait; stop ends the wait.
func (n *node) awaitAnswer(replyTo string, wait chan<- Report) (stop func(), err error) {
	sub, err := n.nc.Subscribe(n.prefix+"answer."+replyTo, func(m *nats.Msg) {
		var rep Report
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			m.Respond([]byte("malformed answer: " + err.Error()))
			return
		}
		if _, ok := n.r.tasks.api.waiters.LoadAndDelete(replyTo); !ok {
			m.Respond([]byte("no caller waits for it any more"))
			return
		}
		wait <- rep // buffered, and the waiter was taken: never blocks
		m.Respond(nil)
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: wait for an answer: %w", err)
	}
	if err := n.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("cluster: wait for an answer: %w", err)
	}
	return func() { sub.Unsubscribe() }, nil
}

// deliverAnswer hands an Ask's answer to the process that waits for it.
func (n *node) deliverAnswer(ctx context.Context, rep Report) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+"answer."+rep.ReplyTo, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("no caller waits for task %s any more (it gave up, or its process stopped); the answer is in %s/%s's history", rep.TaskID, rep.Agent, rep.Instance)
	case err != nil:
		return fmt.Errorf("task %s: handing its answer to the process that asked: %w", rep.TaskID, err)
	case len(msg.Data) > 0:
		return fmt.Errorf("task %s: the process that asked refused its answer: %s", rep.TaskID, msg.Data)
	}
	return nil
}

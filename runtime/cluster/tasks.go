package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// This file carries delegation across processes: a child's report to its
// parent's owner, and an Ask's answer to the process that asked.

// remoteReport is a child task's report, routed to the process that owns
// its parent's instance.
type remoteReport struct {
	Parent   string          `json:"parent"`
	Agent    string          `json:"agent"`    // of the parent
	Instance string          `json:"instance"` // of the parent
	Response json.RawMessage `json:"response"`
}

// Report hands a child task's report to its parent, parentID, on the
// process that owns the parent's instance, this one if nobody does: the
// parent's task is written there alone. The child's task is deleted in
// the commit that adds the report, so a report that does not get there
// (no process takes the parent's instance within twice the lease TTL)
// leaves the child stored, and its answer, in its history, is reported
// again when its instance next loads.
func (n *node) Report(ctx context.Context, parentID string, resp seam.Report) error {
	waited, err := n.whileMoved(ctx, func() error {
		agent, key, err := n.l.TaskInstance(ctx, parentID)
		switch {
		case errors.Is(err, n.errs.NoTask):
			return n.l.ApplyReport(ctx, parentID, resp.Body) // which drops it, deleting the child
		case err != nil:
			return fmt.Errorf("task %s: reporting to task %s: %w", resp.Child, parentID, err)
		}
		return n.reportTo(ctx, parentID, agent, key, resp)
	})
	if waited {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.Child, parentID, err)
	}
	return err
}

// reportTo applies the report to task parent, of agent's instance key,
// here if this process owns the instance, or can take it, and sends it to
// its owner otherwise.
func (n *node) reportTo(ctx context.Context, parent, agent, key string, resp seam.Report) error {
	owner, mine, err := n.owner(ctx, agent, key)
	switch {
	case err != nil:
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.Child, parent, err)
	case mine || owner == "":
		unpin, ok := n.pin(agent, key)
		if !ok {
			// Nobody's, or this process's lease went stale: take it.
			if err := n.takeLease(ctx, agent, key); err != nil {
				return err
			}
			unpin, ok = n.pin(agent, key)
		}
		if !ok {
			return fmt.Errorf("task %s: reporting to task %s: %w (the lease of %s/%s was given up meanwhile)", resp.Child, parent, errMoved, agent, key)
		}
		defer unpin()
		return movedIfFenced(n.l.ApplyReport(ctx, parent, resp.Body))
	}
	body, err := json.Marshal(resp.Body)
	if err != nil {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.Child, parent, err)
	}
	rctx, cancel := context.WithTimeout(ctx, n.env.CallTimeout)
	defer cancel()
	// Not retried if the owner leaves meanwhile (errOwnerLeft): adding
	// a report is not idempotent, and it may have been committed.
	rep, err := n.call(rctx, owner, ".report", remoteReport{Parent: parent, Agent: agent, Instance: key, Response: body})
	if err != nil {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.Child, parent, err)
	}
	return n.replyError(rep)
}

// serveReport applies a report routed here, if this process still owns
// the parent's instance.
func (n *node) serveReport(m *nats.Msg) {
	handle(n, m, func(req remoteReport) remoteReply {
		unpin, ok := n.pin(req.Agent, req.Instance)
		if !ok {
			return n.errorReply(fmt.Errorf("task %s: %w (not %s)", req.Parent, errMoved, n.name))
		}
		defer unpin()
		return n.resultReply(nil, movedIfFenced(n.l.ApplyReport(n.env.Tasks, req.Parent, req.Response)))
	})
}

// AwaitAnswer receives the answer to replyTo, an Ask of this process,
// when another process's task gives it, into deliver; stop ends the wait.
func (n *node) AwaitAnswer(replyTo string, deliver func(json.RawMessage) error) (stop func(), err error) {
	sub, err := n.nc.Subscribe(n.prefix+"answer."+replyTo, func(m *nats.Msg) {
		if err := deliver(m.Data); err != nil {
			m.Respond([]byte(err.Error()))
			return
		}
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

// Answer hands an Ask's answer to the process that waits for it.
func (n *node) Answer(ctx context.Context, a seam.Answer) error {
	data, err := json.Marshal(a.Body)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+"answer."+a.ReplyTo, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("no caller waits for task %s any more (it gave up, or its process stopped); the answer is in %s/%s's history", a.Task, a.Agent, a.Instance)
	case err != nil:
		return fmt.Errorf("task %s: handing its answer to the process that asked: %w", a.Task, err)
	case len(msg.Data) > 0:
		return fmt.Errorf("task %s: the process that asked refused its answer: %s", a.Task, msg.Data)
	}
	return nil
}

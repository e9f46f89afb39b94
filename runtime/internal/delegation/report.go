package delegation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// This file ends tasks: a child's report to its parent, group-committed
// (completeTask, ApplyReport), and a root task's answer to its requester's
// channel (deliverAnswer).

// completeTask ends task t with its agent's answer (or the error that
// failed it): it reports to the parent, whose merged report starts once
// every child reported, or answers the requester's channel; and it deletes
// t. The caller does not hold d.mu.
//
// Reports to one parent are group-committed: a child's report joins a
// queue, and whoever takes d.mu next commits every queued report with
// one write of the parent, in the transaction that deletes their tasks.
// Children that finish together (a parallel fan-out) so cost a few writes
// of the parent, not one each: the parent's record grows with its
// delegations, and rewriting it per child made a fan-out quadratic.
func (d *Tasks) completeTask(ctx context.Context, t *task.Task, answer string, failed error) error {
	now := d.eng.Now()
	if failed != nil {
		answer = fmt.Sprintf("Task failed: agent %s could not finish it: %v", t.Agent, failed)
	}
	d.publishTask(events.TaskCompleted, t, events.TaskCompletedData{TaskID: t.ID, ParentTaskID: t.ParentID, Failed: failed != nil, Response: oneLine(answer, 200)})
	if t.ParentID == "" {
		a := *t
		a.State, a.Answer, a.AnsweredAt = task.Answered, answer, now
		if failed != nil {
			a.AnswerError, a.Answer = failed.Error(), ""
		}
		d.mu.Lock()
		err := d.commitTasks(ctx, []*task.Task{&a})
		if err == nil {
			delete(d.trees, t.ID) // the tree has ended: nothing more to spend
		}
		d.mu.Unlock()
		if err == nil && d.env.Place().SharesSpend() {
			if ferr := d.env.Place().ForgetSpent(ctx, t.ID); ferr != nil {
				d.env.Logger.Warn("the counters of an ended task tree were not deleted; they expire on their own", "task", t.ID, "err", ferr)
			}
		}
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		d.deliverAnswer(ctx, &a)
		return nil
	}
	resp := task.Response{ChildTaskID: t.ID, FromAgent: t.Agent, Response: answer, Failed: failed != nil, CompletedAt: now, Spent: t.Spent}
	if utf8.RuneCountInString(answer) > reportLimit {
		file, err := d.saveOutput(t.ID, answer)
		if err != nil {
			return fmt.Errorf("task %s: saving its long response: %w", t.ID, err)
		}
		resp.File = file
		resp.Response = fmt.Sprintf("[Task complete] Full result: %s\n\nSummary:\n%s...", file, truncateRunes(answer, reportSummary))
	}
	// The parent's task is written by the process that owns its instance,
	// alone.
	return d.env.Place().Report(ctx, t.ParentID, seam.Report{Child: t.ID, Body: resp})
}

// ApplyReport adds a child task's report to its parent, parentID, and
// deletes the child, in one commit; the parent's merged report starts once
// every child reported. In a cluster, the process that owns the parent's
// instance runs it. The caller does not hold d.mu.
func (d *Tasks) ApplyReport(ctx context.Context, parentID string, resp task.Response) error {
	q := &queuedReport{resp: resp, done: make(chan error, 1)}
	d.reportMu.Lock()
	d.reports[parentID] = append(d.reports[parentID], q)
	d.reportMu.Unlock()

	d.mu.Lock()
	d.reportMu.Lock()
	queued := d.reports[parentID]
	delete(d.reports, parentID)
	d.reportMu.Unlock()
	if len(queued) > 0 {
		err := d.commitReports(ctx, parentID, queued)
		for _, q := range queued {
			q.done <- err
		}
	}
	d.mu.Unlock()
	// Committed, or not, with the others queued then: by this goroutine
	// or another that took the queue first.
	return <-q.done
}

// queuedReport is a report waiting for its parent's next write, and the
// outcome of that write.
type queuedReport struct {
	resp task.Response
	done chan error // buffered
}

// commitReports adds the queued reports to their parent, parentID, and
// deletes their children, in one commit. The caller holds d.mu.
func (d *Tasks) commitReports(ctx context.Context, parentID string, queued []*queuedReport) error {
	done := make([]string, len(queued))
	for i, q := range queued {
		done[i] = q.resp.ChildTaskID
	}
	cached, ok := d.cache[parentID]
	if !ok {
		got, err := d.Task(ctx, parentID)
		switch {
		case errors.Is(err, task.ErrNotFound):
			d.env.Logger.Error("a child task's parent is gone; its reports are dropped", "tasks", done, "parent", parentID, "err", err)
			return d.commitTasks(ctx, nil, done...)
		case err != nil:
			// The parent may well exist: the children stay stored, and
			// report again, as when the commit below fails.
			return fmt.Errorf("tasks %s: reporting to task %s: %w", strings.Join(done, ", "), parentID, err)
		}
		cached = &got
		d.cache[parentID] = cached
	}
	parent := *cached // the cache changes only once the store has
	// A child reports once: a copy of a report that landed (its reporter
	// could not know it, and the child's end was settled again from its
	// history) changes nothing but deletes the child, which is gone
	// already or goes now.
	var batch []task.Response
	for _, q := range queued {
		child := q.resp.ChildTaskID
		reported := func(d task.Response) bool { return d.ChildTaskID == child }
		if slices.ContainsFunc(parent.Context.Responses, reported) || slices.ContainsFunc(batch, reported) {
			d.env.Logger.Info("a child task's report came again; the parent has it already", "task", child, "parent", parentID)
			continue
		}
		batch = append(batch, q.resp)
	}
	parent.Context.Responses = append(slices.Clip(parent.Context.Responses), batch...)
	for _, b := range batch {
		parent.Spent.Add(b.Spent) // moved up: the tree's total does not change
	}
	parent.Pending = max(0, parent.Pending-len(batch))
	ready := parent.Pending == 0 && parent.State == task.Waiting
	if ready {
		parent.State = task.Reporting
	}
	if parent.Pending == 0 {
		delete(d.cache, parent.ID) // no more reports to come
	}
	if err := d.commitTasks(ctx, []*task.Task{&parent}, done...); err != nil {
		// The children stay stored; at the next start their answers are
		// found in their histories when their instances load (resettleTask)
		// and reported again.
		return fmt.Errorf("tasks %s: reporting to task %s: %w", strings.Join(done, ", "), parent.ID, err)
	}
	if ready {
		d.deliverReport(parent.ID)
	}
	return nil
}

// saveOutput writes a long response to the outputs directory and returns
// the file's absolute path.
func (d *Tasks) saveOutput(taskID, text string) (string, error) {
	if err := os.MkdirAll(d.env.Outputs, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d.env.Outputs, "result_"+taskID+".txt")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// deliverAnswer hands the answer of root task t (answered) to its
// requester's channel, then deletes the task. Without a channel of that
// name in this process, the task stays stored, answered, for a process
// that has one: it delivers it when it recovers the tasks.
func (d *Tasks) deliverAnswer(ctx context.Context, t *task.Task) {
	if _, ok := d.channels[t.Channel]; !ok {
		d.env.Logger.Info("a task's answer waits for a process with its channel", "task", t.ID, "channel", t.Channel)
		d.publishTask(events.TaskAnswered, t, events.TaskAnsweredData{TaskID: t.ID, Requester: t.Requester, Channel: t.Channel, Response: t.Answer})
		return
	}
	if err := d.answer(ctx, task.Report{TaskID: t.ID, Agent: t.Agent, Instance: t.Instance, Requester: t.Requester, Channel: t.Channel, ReplyTo: t.ReplyTo,
		Request: t.OriginalRequest, Response: t.Answer, Error: t.AnswerError, CompletedAt: t.AnsweredAt}); errors.Is(err, task.ErrDeliverLater) {
		d.env.Logger.Info("a task's answer waits for its requester", "task", t.ID, "channel", t.Channel, "reply_to", t.ReplyTo)
		return // kept, answered, for DeliverAnswers or the next start
	}
	d.mu.Lock()
	err := d.commitTasks(ctx, nil, t.ID)
	d.mu.Unlock()
	if err != nil {
		d.env.Logger.Error("deleting an answered task failed; its answer is delivered again at the next start", "task", t.ID, "err", err)
	}
}

// answer hands rep to its channel, and returns the channel's error.
func (d *Tasks) answer(ctx context.Context, rep task.Report) error {
	ch, ok := d.channels[rep.Channel]
	var err error
	if !ok {
		err = fmt.Errorf("no channel %q is registered (WithChannel)", rep.Channel)
	} else {
		err = ch.Deliver(ctx, rep)
	}
	if err != nil && !errors.Is(err, task.ErrDeliverLater) {
		d.env.Logger.Warn("a task's answer could not be delivered; it is in the agent's history and the task.answered event", "task", rep.TaskID, "channel", rep.Channel, "err", err)
	}
	if d.eng.Bus.Active() {
		data := events.TaskAnsweredData{TaskID: rep.TaskID, Requester: rep.Requester, Channel: rep.Channel, Response: rep.Response, Delivered: err == nil, Error: rep.Error}
		d.eng.Bus.Publish(events.Event{Topic: events.TaskAnswered, Agent: rep.Agent, Instance: rep.Instance, Source: "runtime", Data: data})
	}
	return err
}

// DeliverAnswers hands channel the answers it deferred ([task.ErrDeliverLater])
// again, in the background ([Tasks.Wait]).
func (d *Tasks) DeliverAnswers(ctx context.Context, channel string) error {
	ts, err := d.List(ctx, "", "")
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.State == task.Answered && t.Channel == channel {
			d.background(t.ID)
		}
	}
	return nil
}

// reportText is the input of a merged report turn: a reminder of
// the delegation context, then the reports that arrived.
func reportText(t *task.Task, fresh []task.Response) string {
	c := &t.Context
	var b strings.Builder
	b.WriteString("[System notice: delegation context restored]\n")
	fmt.Fprintf(&b, "This is where you were when you delegated %d task(s):\n", len(c.Delegations))
	fmt.Fprintf(&b, "- Original requester: %s\n", c.Requester)
	fmt.Fprintf(&b, "- Original request: %s\n", c.OriginalRequest)
	b.WriteString("- Delegations:\n")
	for i, d := range c.Delegations {
		fmt.Fprintf(&b, "  %d. %s: %s\n", i+1, d.DelegatedTo, d.Message)
	}
	b.WriteString("Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.\n\n---\n")
	// In delegation order, however the children finished.
	order := func(id string) int {
		return slices.IndexFunc(c.Delegations, func(d task.Delegation) bool { return d.ChildTaskID == id })
	}
	sorted := slices.Clone(fresh)
	slices.SortStableFunc(sorted, func(x, y task.Response) int { return order(x.ChildTaskID) - order(y.ChildTaskID) })
	if len(sorted) > 1 {
		fmt.Fprintf(&b, "[Merged report of %d parallel delegations]\n", len(sorted))
	} else {
		b.WriteString("[Delegation report]\n")
	}
	for _, resp := range sorted {
		status := ""
		if resp.Failed {
			status = " (failed)"
		}
		fmt.Fprintf(&b, "\n## %s, task %s%s\n%s\n", resp.FromAgent, resp.ChildTaskID, status, resp.Response)
	}
	return b.String()
}

// apiChannel is ChannelAPI: it hands a report to the Ask that waits for it.
type apiChannel struct {
	waiters sync.Map // reply-to → chan task.Report
	// remote hands an answer to the process whose Ask waits for it, when
	// none of this process's does (seam.Placement.Answer).
	remote func(context.Context, seam.Answer) error
}

func (c *apiChannel) Deliver(ctx context.Context, r task.Report) error {
	if r.ReplyTo == "" {
		return nil // a Send, not an Ask: nobody waits; the task.answered event carries it
	}
	v, ok := c.waiters.LoadAndDelete(r.ReplyTo)
	if !ok {
		return c.remote(ctx, seam.Answer{ReplyTo: r.ReplyTo, Task: r.TaskID, Agent: r.Agent, Instance: r.Instance, Body: r})
	}
	v.(chan task.Report) <- r // buffered: never blocks
	return nil
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// This file ends tasks: a child's report to its parent, group-committed
// (completeTask, applyReport), and a root task's answer to its requester's
// channel (deliverAnswer).

// completeTask ends task t with its agent's answer (or the error that
// failed it): it reports to the parent, whose merged report starts once
// every child reported, or answers the requester's channel; and it deletes
// t. The caller does not hold r.tasks.mu.
//
// Reports to one parent are group-committed: a child's report joins a
// queue, and whoever takes r.tasks.mu next commits every queued report with
// one write of the parent, in the transaction that deletes their tasks.
// Children that finish together (a parallel fan-out) so cost a few writes
// of the parent, not one each: the parent's record grows with its
// delegations, and rewriting it per child made a fan-out quadratic.
func (r *Runtime) completeTask(ctx context.Context, t *Task, answer string, failed error) error {
	now := r.env.Now()
	if failed != nil {
		answer = fmt.Sprintf("Task failed: agent %s could not finish it: %v", t.Agent, failed)
	}
	r.publishTask(events.TaskCompleted, t, events.TaskCompletedData{TaskID: t.ID, ParentTaskID: t.ParentID, Failed: failed != nil, Response: oneLine(answer, 200)})
	if t.ParentID == "" {
		a := *t
		a.State, a.Answer, a.AnsweredAt = TaskAnswered, answer, now
		if failed != nil {
			a.AnswerError, a.Answer = failed.Error(), ""
		}
		r.tasks.mu.Lock()
		err := r.commitTasks(ctx, []*Task{&a})
		if err == nil {
			delete(r.tasks.trees, t.ID) // the tree has ended: nothing more to spend
		}
		r.tasks.mu.Unlock()
		if err == nil && r.place.SharesSpend() {
			if ferr := r.place.ForgetSpent(ctx, t.ID); ferr != nil {
				r.logger.Warn("the counters of an ended task tree were not deleted; they expire on their own", "task", t.ID, "err", ferr)
			}
		}
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		r.deliverAnswer(ctx, &a)
		return nil
	}
	resp := DelegationResponse{ChildTaskID: t.ID, FromAgent: t.Agent, Response: answer, Failed: failed != nil, CompletedAt: now, Spent: t.Spent}
	if utf8.RuneCountInString(answer) > reportLimit {
		file, err := r.saveOutput(t.ID, answer)
		if err != nil {
			return fmt.Errorf("task %s: saving its long response: %w", t.ID, err)
		}
		resp.File = file
		resp.Response = fmt.Sprintf("[Task complete] Full result: %s\n\nSummary:\n%s...", file, truncateRunes(answer, reportSummary))
	}
	// The parent's task is written by the process that owns its instance,
	// alone.
	return r.place.Report(ctx, t.ParentID, seam.Report{Child: t.ID, Body: resp})
}

// applyReport adds a child task's report to its parent, parentID, and
// deletes the child, in one commit; the parent's merged report starts once
// every child reported. In a cluster, the process that owns the parent's
// instance runs it. The caller does not hold r.tasks.mu.
func (r *Runtime) applyReport(ctx context.Context, parentID string, resp DelegationResponse) error {
	q := &queuedReport{resp: resp, done: make(chan error, 1)}
	r.tasks.reportMu.Lock()
	r.tasks.reports[parentID] = append(r.tasks.reports[parentID], q)
	r.tasks.reportMu.Unlock()

	r.tasks.mu.Lock()
	r.tasks.reportMu.Lock()
	queued := r.tasks.reports[parentID]
	delete(r.tasks.reports, parentID)
	r.tasks.reportMu.Unlock()
	if len(queued) > 0 {
		err := r.commitReports(ctx, parentID, queued)
		for _, q := range queued {
			q.done <- err
		}
	}
	r.tasks.mu.Unlock()
	// Committed, or not, with the others queued then: by this goroutine
	// or another that took the queue first.
	return <-q.done
}

// queuedReport is a report waiting for its parent's next write, and the
// outcome of that write.
type queuedReport struct {
	resp DelegationResponse
	done chan error // buffered
}

// commitReports adds the queued reports to their parent, parentID, and
// deletes their children, in one commit. The caller holds r.tasks.mu.
func (r *Runtime) commitReports(ctx context.Context, parentID string, queued []*queuedReport) error {
	done := make([]string, len(queued))
	for i, q := range queued {
		done[i] = q.resp.ChildTaskID
	}
	cached, ok := r.tasks.cache[parentID]
	if !ok {
		got, err := r.Task(ctx, parentID)
		switch {
		case errors.Is(err, ErrNoTask):
			r.logger.Error("a child task's parent is gone; its reports are dropped", "tasks", done, "parent", parentID, "err", err)
			return r.commitTasks(ctx, nil, done...)
		case err != nil:
			// The parent may well exist: the children stay stored, and
			// report again, as when the commit below fails.
			return fmt.Errorf("tasks %s: reporting to task %s: %w", strings.Join(done, ", "), parentID, err)
		}
		cached = &got
		r.tasks.cache[parentID] = cached
	}
	parent := *cached // the cache changes only once the store has
	// A child reports once: a copy of a report that landed (its reporter
	// could not know it, and the child's end was settled again from its
	// history) changes nothing but deletes the child, which is gone
	// already or goes now.
	var batch []DelegationResponse
	for _, q := range queued {
		child := q.resp.ChildTaskID
		reported := func(d DelegationResponse) bool { return d.ChildTaskID == child }
		if slices.ContainsFunc(parent.Context.Responses, reported) || slices.ContainsFunc(batch, reported) {
			r.logger.Info("a child task's report came again; the parent has it already", "task", child, "parent", parentID)
			continue
		}
		batch = append(batch, q.resp)
	}
	parent.Context.Responses = append(slices.Clip(parent.Context.Responses), batch...)
	for _, b := range batch {
		parent.Spent.add(b.Spent) // moved up: the tree's total does not change
	}
	parent.Pending = max(0, parent.Pending-len(batch))
	ready := parent.Pending == 0 && parent.State == TaskWaiting
	if ready {
		parent.State = TaskReporting
	}
	if parent.Pending == 0 {
		delete(r.tasks.cache, parent.ID) // no more reports to come
	}
	if err := r.commitTasks(ctx, []*Task{&parent}, done...); err != nil {
		// The children stay stored; at the next start their answers are
		// found in their histories when their instances load (resettleTask)
		// and reported again.
		return fmt.Errorf("tasks %s: reporting to task %s: %w", strings.Join(done, ", "), parent.ID, err)
	}
	if ready {
		r.deliverReport(parent.ID)
	}
	return nil
}

// saveOutput writes a long response to the outputs directory and returns
// the file's absolute path.
func (r *Runtime) saveOutput(taskID, text string) (string, error) {
	if err := os.MkdirAll(r.tasks.outputs, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(r.tasks.outputs, "result_"+taskID+".txt")
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
func (r *Runtime) deliverAnswer(ctx context.Context, t *Task) {
	if _, ok := r.tasks.channels[t.Channel]; !ok {
		r.logger.Info("a task's answer waits for a process with its channel", "task", t.ID, "channel", t.Channel)
		r.publishTask(events.TaskAnswered, t, events.TaskAnsweredData{TaskID: t.ID, Requester: t.Requester, Channel: t.Channel, Response: t.Answer})
		return
	}
	if err := r.answer(ctx, Report{TaskID: t.ID, Agent: t.Agent, Instance: t.Instance, Requester: t.Requester, Channel: t.Channel, ReplyTo: t.ReplyTo,
		Request: t.OriginalRequest, Response: t.Answer, Error: t.AnswerError, CompletedAt: t.AnsweredAt}); errors.Is(err, ErrDeliverLater) {
		r.logger.Info("a task's answer waits for its requester", "task", t.ID, "channel", t.Channel, "reply_to", t.ReplyTo)
		return // kept, answered, for DeliverAnswers or the next start
	}
	r.tasks.mu.Lock()
	err := r.commitTasks(ctx, nil, t.ID)
	r.tasks.mu.Unlock()
	if err != nil {
		r.logger.Error("deleting an answered task failed; its answer is delivered again at the next start", "task", t.ID, "err", err)
	}
}

// answer hands rep to its channel, and returns the channel's error.
func (r *Runtime) answer(ctx context.Context, rep Report) error {
	ch, ok := r.tasks.channels[rep.Channel]
	var err error
	if !ok {
		err = fmt.Errorf("no channel %q is registered (WithChannel)", rep.Channel)
	} else {
		err = ch.Deliver(ctx, rep)
	}
	if err != nil && !errors.Is(err, ErrDeliverLater) {
		r.logger.Warn("a task's answer could not be delivered; it is in the agent's history and the task.answered event", "task", rep.TaskID, "channel", rep.Channel, "err", err)
	}
	if r.env.Bus.Active() {
		data := events.TaskAnsweredData{TaskID: rep.TaskID, Requester: rep.Requester, Channel: rep.Channel, Response: rep.Response, Delivered: err == nil, Error: rep.Error}
		r.env.Bus.Publish(events.Event{Topic: events.TaskAnswered, Agent: rep.Agent, Instance: rep.Instance, Source: "runtime", Data: data})
	}
	return err
}

// DeliverAnswers hands channel the answers it deferred ([ErrDeliverLater])
// again, in the background ([Runtime.WaitTasks]).
func (r *Runtime) DeliverAnswers(ctx context.Context, channel string) error {
	ts, err := r.Tasks(ctx, "", "")
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.State == TaskAnswered && t.Channel == channel {
			r.background(t.ID)
		}
	}
	return nil
}

// reportText is the input of a merged report turn: a reminder of
// the delegation context, then the reports that arrived.
func reportText(t *Task, fresh []DelegationResponse) string {
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
		return slices.IndexFunc(c.Delegations, func(d Delegation) bool { return d.ChildTaskID == id })
	}
	sorted := slices.Clone(fresh)
	slices.SortStableFunc(sorted, func(x, y DelegationResponse) int { return order(x.ChildTaskID) - order(y.ChildTaskID) })
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

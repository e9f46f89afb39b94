package delegation

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// The hook: delegation's part in every turn (see engine.Hook).

// Load reads nothing: tasks are read when a turn needs them.
func (d *Tasks) Load(context.Context, *engine.Instance) (map[string]string, error) { return nil, nil }

// Loaded settles the task whose turn ended as the process stopped, before
// the task recorded it.
func (d *Tasks) Loaded(ctx context.Context, inst *engine.Instance) error {
	return d.resettleTask(inst.Def(), ctx, inst)
}

// Begin gives the turn its ctx.agents, and reads which task it works on.
func (d *Tasks) Begin(ts *engine.Turn, in pipeline.InputEvent) {
	x := turnOf(ts)
	x.agents.reset(d, ts.Agent.Name, ts.Inst.Key(), ts.TurnID, in)
	ts.Agents = &x.agents
	d.beginTask(ts.Agent, ts, in)
}

// Resumed does nothing: a resumed turn's task is read by Begin.
func (d *Tasks) Resumed(context.Context, *engine.Turn, *pipeline.TurnContext, pipeline.InputEvent) error {
	return nil
}

// Stage stages the step's delegations, holding the task lock until the
// commit is done.
func (d *Tasks) Stage(ts *engine.Turn) error {
	x := turnOf(ts)
	x.mu.Lock()
	n := len(x.delegs)
	x.mu.Unlock()
	if n == 0 {
		return nil
	}
	d.mu.Lock()
	x.locked, x.nChildren, x.stagedTask, x.staged = true, len(x.children), x.id, 0
	return d.stageDelegations(ts.Agent, ts)
}

// Committed takes the delegations back if the commit failed: they never
// happened, like the results that announce them.
func (d *Tasks) Committed(ts *engine.Turn, err error) {
	x := turnOf(ts)
	if !x.locked {
		return
	}
	if err != nil {
		if tr := d.trees[x.stagedRoot]; x.staged > 0 && tr != nil {
			d.addSpent(ts.StoreCtx, tr, task.Spend{Delegations: -x.staged})
		}
		clear(x.children[x.nChildren:])
		x.children, x.id = x.children[:x.nChildren], x.stagedTask
		ts.Inst.Unsaved().Tasks = nil
	}
	x.locked = false
	d.mu.Unlock()
}

// Keep keeps in the history what the instance's open tasks need.
func (d *Tasks) Keep(ts *engine.Turn, keep map[string]bool) error {
	return d.keepTasks(ts.Agent, ts, keep)
}

// End settles the turn's task, and lets the tasks that waited for the
// instance go on once it no longer waits for a human.
func (d *Tasks) End(ts *engine.Turn, in pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error) {
	if turnOf(ts).id != "" {
		res, err = d.settleTask(ts.Agent, ts, in, res, err)
	}
	if len(ts.Inst.Paused) == 0 {
		d.unblock(ts.Agent.Name, ts.Inst.Key())
	}
	return res, err
}

// keepTasks adds to keep what the instance's open tasks need: their
// inputs and reports, until the task completes, and the result of each
// call_agent whose child has not reported yet.
func (d *Tasks) keepTasks(a *engine.Agent, ts *engine.Turn, keep map[string]bool) error {
	tasks, err := d.List(ts.StoreCtx, a.Name, ts.Inst.Key())
	if err != nil || len(tasks) == 0 {
		return err
	}
	open := map[string]bool{}
	waiting := map[string]bool{} // the call_agent calls whose child has not reported
	for _, t := range tasks {
		open[t.ID] = true
		done := map[string]bool{}
		for _, resp := range t.Context.Responses {
			done[resp.ChildTaskID] = true
		}
		for _, d := range t.Context.Delegations {
			if !done[d.ChildTaskID] && d.CallID != "" {
				waiting[d.CallID] = true
			}
		}
	}
	h := ts.Inst.History()
	for _, p := range h.Positions() {
		m := h.At(p).Msg
		if id, _ := m.Metadata["taskId"].(string); id != "" && open[id] {
			keep[m.ID] = true
		}
		if m.Role == pipeline.RoleTool && waiting[m.ToolCallID] {
			keep[m.ID] = true
		}
	}
	return nil
}

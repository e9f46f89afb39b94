package runtime

import (
	"context"
	"sync"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// A turn's part in delegation: its state and its turnHook.

// taskTurn is a turn's delegation state.
type taskTurn struct {
	id       string       // the task the turn works on, "" if none
	chain    []string     // the tasks above it, "agent/instance", root first
	mu       sync.Mutex   // guards delegs: parallel tool calls delegate
	delegs   []delegation // made by the turn's tool calls, not yet committed
	children []*Task      // committed: to start when the turn ends
	// While a step's commit is staged: what to restore if it fails, and
	// whether the stage holds the runtime's task lock.
	locked     bool
	nChildren  int
	stagedTask string
	staged     int    // delegations counted against the tree's budget
	stagedRoot string // that tree's root task
}

// taskHook is delegation's part in every turn (see turnHook).
type taskHook struct{}

func (taskHook) load(context.Context, *instance) (map[string]string, error) { return nil, nil }

// loaded settles the task whose turn ended as the process stopped, before
// the task recorded it.
func (taskHook) loaded(ctx context.Context, inst *instance) error {
	return inst.agent.resettleTask(ctx, inst)
}

func (taskHook) beginTurn(ts *turnState, in pipeline.InputEvent) { ts.agent.beginTask(ts, in) }

func (taskHook) resumed(context.Context, *turnState, *pipeline.TurnContext, pipeline.InputEvent) error {
	return nil
}

// stage stages the step's delegations, holding the task lock until the
// commit is done.
func (taskHook) stage(ts *turnState) error {
	ts.task.mu.Lock()
	n := len(ts.task.delegs)
	ts.task.mu.Unlock()
	if n == 0 {
		return nil
	}
	r := ts.agent.rt
	r.tasks.mu.Lock()
	ts.task.locked, ts.task.nChildren, ts.task.stagedTask, ts.task.staged = true, len(ts.task.children), ts.task.id, 0
	return ts.agent.stageDelegations(ts)
}

// committed takes the delegations back if the commit failed: they never
// happened, like the results that announce them.
func (taskHook) committed(ts *turnState, err error) {
	if !ts.task.locked {
		return
	}
	if err != nil {
		if tr := ts.agent.rt.tasks.trees[ts.task.stagedRoot]; ts.task.staged > 0 && tr != nil {
			ts.agent.rt.addSpent(ts.storeCtx, tr, Spend{Delegations: -ts.task.staged})
		}
		clear(ts.task.children[ts.task.nChildren:])
		ts.task.children, ts.task.id = ts.task.children[:ts.task.nChildren], ts.task.stagedTask
		ts.inst.unsaved.Tasks = nil
	}
	ts.task.locked = false
	ts.agent.rt.tasks.mu.Unlock()
}

func (taskHook) keep(ts *turnState, keep map[string]bool) error { return ts.agent.keepTasks(ts, keep) }

// endTurn settles the turn's task, and lets the tasks that waited for the
// instance go on once it no longer waits for a human.
func (taskHook) endTurn(ts *turnState, in pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error) {
	a := ts.agent
	if ts.task.id != "" {
		res, err = a.settleTask(ts, in, res, err)
	}
	if len(ts.inst.paused) == 0 {
		a.rt.unblock(a.name, ts.inst.key)
	}
	return res, err
}

// keepTasks adds to keep what the instance's open tasks need: their
// inputs and reports, until the task completes, and the result of each
// call_agent whose child has not reported yet.
func (a *agent) keepTasks(ts *turnState, keep map[string]bool) error {
	tasks, err := a.rt.Tasks(ts.storeCtx, a.name, ts.inst.key)
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
	h := &ts.inst.hist
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

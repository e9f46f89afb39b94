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

// taskHook is delegation's part in every turn (see engine.Hook).
type taskHook struct{}

func (taskHook) Load(context.Context, *instance) (map[string]string, error) { return nil, nil }

// Loaded settles the task whose turn ended as the process stopped, before
// the task recorded it.
func (taskHook) Loaded(ctx context.Context, inst *instance) error {
	return hostOf(inst.Def()).resettleTask(ctx, inst)
}

// Begin gives the turn its ctx.agents, and reads which task it works on.
func (taskHook) Begin(ts *turnState, in pipeline.InputEvent) {
	a, x := hostOf(ts.Agent), ext(ts)
	x.agents.reset(a, ts.Inst.Key(), ts.TurnID, in)
	ts.Agents = &x.agents
	a.beginTask(ts, in)
}

func (taskHook) Resumed(context.Context, *turnState, *pipeline.TurnContext, pipeline.InputEvent) error {
	return nil
}

// Stage stages the step's delegations, holding the task lock until the
// commit is done.
func (taskHook) Stage(ts *turnState) error {
	ext(ts).task.mu.Lock()
	n := len(ext(ts).task.delegs)
	ext(ts).task.mu.Unlock()
	if n == 0 {
		return nil
	}
	r := hostOf(ts.Agent).rt
	r.tasks.mu.Lock()
	ext(ts).task.locked, ext(ts).task.nChildren, ext(ts).task.stagedTask, ext(ts).task.staged = true, len(ext(ts).task.children), ext(ts).task.id, 0
	return hostOf(ts.Agent).stageDelegations(ts)
}

// Committed takes the delegations back if the commit failed: they never
// happened, like the results that announce them.
func (taskHook) Committed(ts *turnState, err error) {
	if !ext(ts).task.locked {
		return
	}
	if err != nil {
		if tr := hostOf(ts.Agent).rt.tasks.trees[ext(ts).task.stagedRoot]; ext(ts).task.staged > 0 && tr != nil {
			hostOf(ts.Agent).rt.addSpent(ts.StoreCtx, tr, Spend{Delegations: -ext(ts).task.staged})
		}
		clear(ext(ts).task.children[ext(ts).task.nChildren:])
		ext(ts).task.children, ext(ts).task.id = ext(ts).task.children[:ext(ts).task.nChildren], ext(ts).task.stagedTask
		ts.Inst.Unsaved().Tasks = nil
	}
	ext(ts).task.locked = false
	hostOf(ts.Agent).rt.tasks.mu.Unlock()
}

func (taskHook) Keep(ts *turnState, keep map[string]bool) error {
	return hostOf(ts.Agent).keepTasks(ts, keep)
}

// End settles the turn's task, and lets the tasks that waited for the
// instance go on once it no longer waits for a human.
func (taskHook) End(ts *turnState, in pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error) {
	a := hostOf(ts.Agent)
	if ext(ts).task.id != "" {
		res, err = a.settleTask(ts, in, res, err)
	}
	if len(ts.Inst.Paused) == 0 {
		a.rt.unblock(a.Name, ts.Inst.Key())
	}
	return res, err
}

// keepTasks adds to keep what the instance's open tasks need: their
// inputs and reports, until the task completes, and the result of each
// call_agent whose child has not reported yet.
func (a *agent) keepTasks(ts *turnState, keep map[string]bool) error {
	tasks, err := a.rt.Tasks(ts.StoreCtx, a.Name, ts.Inst.Key())
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

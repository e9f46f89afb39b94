package delegation

import (
	"context"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// A task tree's budget: a root task with every task delegated under it
// spends delegations, turns and tokens against the budget of the agent that
// started it (config.Budget). Each task records what its own turns spent
// and, once its children report, what theirs did (task.Task.Spent); Tasks
// keeps the tree's total in memory, seeded from the stored tasks the first
// time a tree is met in a process; in a cluster, it also adds to the
// tree's counters that every process shares, and reads their sums before
// it judges (the placement's AddSpend and ReadSpent). A spent budget refuses call_agent, and
// ends each of the tree's tasks at its next turn, which fails the root
// task with the budget's message.

// defaultBudget is the budget of a task tree whose agent and config set
// none: enough for a wide fan-out and a long chain, and it stops an agent
// that delegates again from every report within seconds.
var defaultBudget = config.Budget{Delegations: 100, Turns: 500, Tokens: 10_000_000}

// Budget returns the budget of an agent's task trees: the agent's
// task_budget, field by field over the file's, over the default.
func Budget(file, agent *config.Budget) config.Budget {
	b := defaultBudget
	for _, over := range []*config.Budget{file, agent} {
		if over == nil {
			continue
		}
		if over.Delegations > 0 {
			b.Delegations = over.Delegations
		}
		if over.Turns > 0 {
			b.Turns = over.Turns
		}
		if over.Tokens > 0 {
			b.Tokens = over.Tokens
		}
	}
	return b
}

// ErrBudget is the cause of a task that ended because its tree spent its
// budget.
var ErrBudget = errors.New("budget spent")

// tree is a task tree's budget and what it has spent so far.
type tree struct {
	root   string // the root task
	agent  string // the root task's agent, whose budget applies
	budget config.Budget
	spent  task.Spend
}

// rootOf returns the ID of t's root task.
func rootOf(t *task.Task) string {
	if t.Root != "" {
		return t.Root
	}
	return t.ID
}

// tree returns the budget and spend of t's tree. The first call for a tree
// in a process adds up what its stored tasks recorded (a root made in this
// process is registered by newTree instead). The caller holds d.mu.
func (d *Tasks) tree(ctx context.Context, t *task.Task) (*tree, error) {
	root := rootOf(t)
	if tr, ok := d.trees[root]; ok {
		return tr, nil
	}
	tr := &tree{root: root, agent: t.Agent}
	if d.env.Place().SharesSpend() {
		// The shared counters hold what the tree spent (readSpent).
		if t.ID != root {
			if rt, err := d.Task(ctx, root); err == nil {
				tr.agent = rt.Agent
			}
		}
		tr.budget = d.budgetOf(tr.agent)
		d.trees[root] = tr
		return tr, nil
	}
	ts, err := d.List(ctx, "", "")
	if err != nil {
		return nil, fmt.Errorf("task %s: reading its tree's spending: %w", root, err)
	}
	for _, o := range ts {
		if o.ID == root {
			tr.agent = o.Agent
		}
		if o.ID == root || o.Root == root {
			tr.spent.Add(o.Spent)
		}
	}
	tr.budget = d.budgetOf(tr.agent)
	d.trees[root] = tr
	return tr, nil
}

// newTree registers the tree of root task t, made by this process: it has
// spent nothing yet. The caller holds d.mu.
func (d *Tasks) newTree(t *task.Task) {
	d.trees[t.ID] = &tree{root: t.ID, agent: t.Agent, budget: d.budgetOf(t.Agent)}
}

// budgetOf returns the budget of the trees agent starts: the default for
// an agent the config does not define any more.
func (d *Tasks) budgetOf(agent string) config.Budget {
	if m, ok := d.member(agent); ok {
		return m.Budget
	}
	return defaultBudget
}

// spentErr says which of the tree's turn and token budgets is spent, or nil.
func (tr *tree) spentErr() error {
	switch {
	case tr.spent.Turns >= tr.budget.Turns:
		return fmt.Errorf("%w: the tasks delegated from task %s (started by %s) ran %d turns, its task_budget.turns is %d; raise it in the config, or ask again with a narrower request",
			ErrBudget, tr.root, tr.agent, tr.spent.Turns, tr.budget.Turns)
	case tr.spent.Tokens >= tr.budget.Tokens:
		return fmt.Errorf("%w: the tasks delegated from task %s (started by %s) used %d model tokens, its task_budget.tokens is %d; raise it in the config, or ask again with a narrower request",
			ErrBudget, tr.root, tr.agent, tr.spent.Tokens, tr.budget.Tokens)
	}
	return nil
}

// checkDelegation refuses a delegation of the turn ts when its tree has
// made as many as its budget allows, counting those the turn made already.
func (d *Tasks) checkDelegation(ts *engine.Turn) error {
	turnOf(ts).mu.Lock()
	made := len(turnOf(ts).delegs)
	turnOf(ts).mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	var tr *tree
	if turnOf(ts).id == "" {
		// The turn's delegations make it a root task.
		tr = &tree{agent: ts.Agent.Name, budget: d.budgetOf(ts.Agent.Name)}
	} else {
		t, err := d.Task(ts.StoreCtx, turnOf(ts).id)
		if err != nil {
			return fmt.Errorf("delegating: the turn's %w", err)
		}
		if tr, err = d.tree(ts.StoreCtx, &t); err != nil {
			return err
		}
		d.readSpent(ts.StoreCtx, tr)
	}
	if n := tr.spent.Delegations + made; n >= tr.budget.Delegations {
		d.publishBudget(ts.Agent.Name, ts.Inst.Key(), ts.TurnID, tr, "delegations")
		return fmt.Errorf("the delegation budget is spent: this request's tasks have delegated %d times, and task_budget.delegations of agent %s allows %d. "+
			"Do the rest yourself, or answer with what the reports gave you", n, tr.agent, tr.budget.Delegations)
	}
	return nil
}

// spend adds what a task's turn used to the task and its tree. The caller
// holds d.mu.
func (d *Tasks) spend(ctx context.Context, t *task.Task, s task.Spend) {
	t.Spent.Add(s)
	tr, err := d.tree(ctx, t)
	if err != nil {
		d.env.Logger.Warn("a task's spending was not counted against its budget", "task", t.ID, "err", err)
		return
	}
	d.addSpent(ctx, tr, s)
}

// addSpent adds s to what tree tr spent: in a cluster, also to the
// counters every process reads (in the background: see addSpend). The
// caller holds d.mu.
func (d *Tasks) addSpent(ctx context.Context, tr *tree, s task.Spend) {
	tr.spent.Add(s)
	if d.env.Place().SharesSpend() {
		d.env.Place().AddSpend(tr.root, seam.Spend{Delegations: s.Delegations, Turns: s.Turns, Tokens: s.Tokens})
	}
}

// readSpent brings what tree tr spent up to date before it is judged: in
// a cluster, other processes spend on it too. The caller holds
// d.mu, which readSpent lets go while it reads.
func (d *Tasks) readSpent(ctx context.Context, tr *tree) {
	if !d.env.Place().SharesSpend() {
		return
	}
	d.mu.Unlock()
	got, err := d.env.Place().ReadSpent(ctx, tr.root)
	sums := task.Spend{Delegations: got.Delegations, Turns: got.Turns, Tokens: got.Tokens}
	d.mu.Lock()
	if err != nil {
		d.env.Logger.Warn("a task tree's spending in the cluster was not read; judging it by this process's count", "task", tr.root, "err", err)
		return
	}
	// This process's additions still on their way are in its own count,
	// not yet in the sums: the larger of the two is the closer.
	tr.spent = task.Spend{Delegations: max(tr.spent.Delegations, sums.Delegations), Turns: max(tr.spent.Turns, sums.Turns), Tokens: max(tr.spent.Tokens, sums.Tokens)}
}

// overBudget returns why task t may not start another turn, or nil. The
// caller does not hold d.mu.
func (d *Tasks) overBudget(ctx context.Context, t *task.Task) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	tr, err := d.tree(ctx, t)
	if err != nil {
		return nil // counted from the next start on; the turn may run
	}
	d.readSpent(ctx, tr)
	if err := tr.spentErr(); err != nil {
		d.publishBudget(t.Agent, t.Instance, "", tr, "")
		return err
	}
	return nil
}

// publishBudget says that tree tr spent a budget (what: "delegations", or
// "" for turns or tokens, whichever ran out).
func (d *Tasks) publishBudget(agent, key, turn string, tr *tree, what string) {
	if what == "" {
		what = "turns"
		if tr.spent.Turns < tr.budget.Turns {
			what = "tokens"
		}
	}
	d.env.Logger.Warn("a task tree spent its budget", "task", tr.root, "agent", tr.agent, "budget", what,
		"delegations", tr.spent.Delegations, "turns", tr.spent.Turns, "tokens", tr.spent.Tokens)
	if d.eng.Bus.Active() {
		d.eng.Bus.Publish(events.Event{Topic: events.TaskBudgetSpent, Agent: agent, Instance: key, TurnID: turn, Source: "runtime",
			Data: events.TaskBudgetSpentData{RootTaskID: tr.root, RootAgent: tr.agent, Budget: what,
				Delegations: tr.spent.Delegations, Turns: tr.spent.Turns, Tokens: tr.spent.Tokens}})
	}
}

package runtime_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/task"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime"
)

// loopScript is a lead whose every turn, its merged reports included,
// delegates to worker again: the runaway a task budget stops.
const loopScript = `
agents:
  lead:
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: worker, message: "once more"}}]
          usage: {input_tokens: 100, output_tokens: 10}
        - text: "lead: {{ .LastMessage }}"
  worker:
    fallback:
      steps:
        - text: "worker done"
          usage: {input_tokens: 50, output_tokens: 5}
`

const loopConfig = `
agents:
  - name: lead
    tools: [call_agent]
    BUDGET
  - name: worker
`

// TestTaskBudget: a lead that delegates again from every report runs until
// its task tree spends a budget; then call_agent refuses (delegations), or
// the next task turn does not run and the root task fails with the
// budget's message (turns, tokens).
func TestTaskBudget(t *testing.T) {
	tests := []struct {
		name, budget string
		// workers is how many worker turns run; leadTurns how many of the
		// lead's.
		workers, leadTurns int
		// answer is the root task's answer; err its error.
		answer, err string
		spent       string // the budget the task.budget_spent event names
	}{
		{name: "delegations", budget: "task_budget: {delegations: 3}", workers: 3, leadTurns: 4, spent: "delegations",
			answer: `lead: tool "call_agent" failed: the delegation budget is spent: this request's tasks have delegated 3 times, and task_budget.delegations of agent lead allows 3. Do the rest yourself, or answer with what the reports gave you`},
		// Turns: lead 1, worker 2, lead 3, worker 4, lead 5, worker 6; the
		// lead's next report turn does not run.
		{name: "turns", budget: "task_budget: {turns: 6}", workers: 3, leadTurns: 3, spent: "turns",
			err: `budget spent: the tasks delegated from task TASK (started by lead) ran 6 turns, its task_budget.turns is 6; raise it in the config, or ask again with a narrower request`},
		// Tokens: each lead turn 110 (its second step runs no model call
		// with usage), each worker turn 55: 110+55+110+55 = 330 ≥ 300
		// after the second worker.
		{name: "tokens", budget: "task_budget: {tokens: 300}", workers: 2, leadTurns: 2, spent: "tokens",
			err: `budget spent: the tasks delegated from task TASK (started by lead) used 330 model tokens, its task_budget.tokens is 300; raise it in the config, or ask again with a narrower request`},
		{name: "the file's budget", budget: "", workers: 2, leadTurns: 3, spent: "delegations",
			answer: `lead: tool "call_agent" failed: the delegation budget is spent: this request's tasks have delegated 2 times, and task_budget.delegations of agent lead allows 2. Do the rest yourself, or answer with what the reports gave you`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := strings.Replace(loopConfig, "BUDGET", tt.budget, 1)
			if tt.budget == "" {
				cfg = "task_budget: {delegations: 2, turns: 50}\n" + cfg
			}
			bus := events.NewBus()
			log := watchEvents(bus, events.TaskBudgetSpent)
			h := newHarness(t, cfg, loopScript, runtime.WithEvents(bus))
			rep, err := h.rt.Ask(context.Background(), "lead", "k", "loop")
			want := strings.ReplaceAll(tt.err, "TASK", rep.TaskID)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Fatalf("Ask = %v\nwant an error containing %q", err, want)
			case tt.err == "" && err != nil:
				t.Fatalf("Ask: %v", err)
			case tt.err == "" && rep.Response != tt.answer:
				t.Errorf("answer = %q\nwant %q", rep.Response, tt.answer)
			}
			waitNoTasks(t, h.rt)
			if got := len(h.rec.turnsOf("worker", "k", "")); got != tt.workers {
				t.Errorf("worker ran %d turns, want %d", got, tt.workers)
			}
			if got := len(h.rec.turnsOf("lead", "k", "")); got != tt.leadTurns {
				t.Errorf("lead ran %d turns, want %d", got, tt.leadTurns)
			}
			evs := log.get(events.TaskBudgetSpent)
			if len(evs) == 0 {
				t.Fatal("no task.budget_spent event")
			}
			if d := evs[0].Data.(events.TaskBudgetSpentData); d.Budget != tt.spent || d.RootAgent != "lead" || d.RootTaskID != rep.TaskID {
				t.Errorf("task.budget_spent = %+v", d)
			}
		})
	}
}

// TestTaskBudgetAfterRestart: what a tree spent is stored with its tasks,
// so that a runtime started later counts it: the merged report that a
// restart hands over does not run when the stored spending already
// reaches the budget the config now sets.
func TestTaskBudgetAfterRestart(t *testing.T) {
	p, sc, res := closedMidReport(t)
	// The lead's turn and its three children's: four turns, three
	// delegations, all in the root's record now.
	if root := storedTasks(t, p)["lead"]; root.Spent != (task.Spend{Delegations: 3, Turns: 4}) {
		t.Fatalf("the root's stored spending = %+v", root.Spent)
	}

	bus, answered := answeredEvents()
	rec2 := &recorder{p: sc}
	writeFile(t, filepath.Join(p.dir, "ganglion.yaml"), strings.Replace(restartDelegConfig, "agents:\n", "task_budget: {turns: 4}\nagents:\n", 1))
	p.opts = []runtime.Option{runtime.WithModel(rec2), runtime.WithEvents(bus)}
	rt := p.mustOpen()
	ev := awaitEvent(t, answered, "the root's answer after the restart")
	waitNoTasks(t, rt)
	want := fmt.Sprintf("budget spent: the tasks delegated from task %s (started by lead) ran 4 turns, its task_budget.turns is 4", res.TaskID)
	if d := evData(ev); !strings.Contains(fmt.Sprint(d["error"]), want) {
		t.Errorf("task.answered = %+v\nwant an error containing %q", d, want)
	}
	if turns := rec2.turnsOf("lead", "k", ""); len(turns) != 0 {
		t.Errorf("the report turn ran after the restart: %v", turns)
	}
	mustClose(t, rt)
}

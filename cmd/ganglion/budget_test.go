package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runawayConfig is an agent whose every merged report makes it delegate
// again: without a budget it delegates until someone kills it.
const runawayConfig = `
model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
  - name: worker
`

const runawayScript = `
agents:
  lead:
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: worker, message: "once more"}}]
        - text: "lead stopped: {{ .LastMessage }}"
  worker:
    fallback:
      steps: [{text: "worker done"}]
`

// TestRunawayStopsAtBudget: with the default task budget, an agent that
// re-delegates from every report stops after 100 delegations: run ends,
// prints the model's answer to the refusal, and leaves no task; a
// task_budget in the config stops it sooner, and a spent turn budget fails
// the request with its message.
func TestRunawayStopsAtBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, budget string
		code         int
		// stdout's last line, and a line stderr must hold.
		last, stderr string
		delegations  int
	}{
		{name: "default", code: exitOK, delegations: 100,
			last: `lead stopped: tool "call_agent" failed: the delegation budget is spent: this request's tasks have delegated 100 times, and task_budget.delegations of agent lead allows 100. Do the rest yourself, or answer with what the reports gave you`},
		{name: "delegations in the config", budget: "task_budget: {delegations: 4}\n", code: exitOK, delegations: 4,
			last: `lead stopped: tool "call_agent" failed: the delegation budget is spent: this request's tasks have delegated 4 times, and task_budget.delegations of agent lead allows 4. Do the rest yourself, or answer with what the reports gave you`},
		{name: "turns in the config", budget: "task_budget: {turns: 5}\n", code: exitError, delegations: 3,
			stderr: `budget spent: the tasks delegated from task task_[0-9a-f]{12} \(started by lead\) ran 5 turns, its task_budget.turns is 5; raise it in the config, or ask again with a narrower request`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(tt.budget+runawayConfig), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(runawayScript), 0o644))
			r := exe(t, dir, "", "run", dir, "loop")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stdout, "[task] lead → worker: once more\n"); n != tt.delegations {
				t.Errorf("%d delegations shown, want %d", n, tt.delegations)
			}
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if tt.last != "" && lines[len(lines)-1] != tt.last {
				t.Errorf("last line of stdout:\n%s\nwant\n%s", lines[len(lines)-1], tt.last)
			}
			if tt.stderr != "" && !regexp.MustCompile(tt.stderr).MatchString(r.stderr) {
				t.Errorf("stderr does not match %s:\n%s", tt.stderr, r.stderr)
			}
			r = exe(t, dir, "", "tasks", dir)
			if r.code != exitOK || r.stderr != "no open tasks\n" {
				t.Errorf("tasks after the run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

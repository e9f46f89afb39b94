package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
)

// chainScript is the script of a chain of delegations through agents:
// each delegates to the next and answers its report with "<name> done";
// the last answers at once. One that cannot delegate says why it failed.
func chainScript(agents ...string) string {
	var b strings.Builder
	b.WriteString("agents:\n")
	for i, a := range agents[:len(agents)-1] {
		fmt.Fprintf(&b, `  %s:
    turns:
      - match: "warm up"
        steps: [{text: "ready"}]
      - match: "Delegation report"
        steps: [{text: "%s done"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d%d, args: {agent_id: %s, message: "go on"}}]
        - text: "%s tried: {{ .LastMessage }}"
`, a, a, i, agents[i+1], a)
	}
	fmt.Fprintf(&b, "  %s:\n    fallback:\n      steps: [{text: \"%s done\"}]\n", agents[len(agents)-1], agents[len(agents)-1])
	return b.String()
}

// TestClusterBudgetAcrossProcesses: a chain of delegations alternates
// between two processes (lead and b on p1, a and c on p2), under a budget
// of three delegations. The fourth, c's, is refused, though p2 made only
// two of the three before it: the processes count the tree's spending
// together. Counted per process, p2 would have let c delegate.
func TestClusterBudgetAcrossProcesses(t *testing.T) {
	c := newClusterOn(t, natstest.Server(t).ClientURL(), 1, 2, `
agents:
  - {name: lead, tools: [call_agent], task_budget: {delegations: 3}, extensions: [{name: relay}]}
  - {name: a, tools: [call_agent], extensions: [{name: relay}]}
  - {name: b, tools: [call_agent], extensions: [{name: relay}]}
  - {name: c, tools: [call_agent], extensions: [{name: relay}]}
  - {name: d, extensions: [{name: relay}]}
`, chainScript("lead", "a", "b", "c", "d"))
	for agent, p := range map[string]int{"lead": 0, "a": 1, "b": 0, "c": 1} {
		c.mustSend(p, agent, "k", "warm up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := c.rts[0].Ask(ctx, "lead", "k", "do it")
	if err != nil || rep.Response != "lead done" {
		t.Fatalf("Ask: %+v, %v", rep, err)
	}
	ch := c.history(0, "c", "k")
	refused := `c tried: tool "call_agent" failed: the delegation budget is spent: this request's tasks have delegated 3 times, and task_budget.delegations of agent lead allows 3.`
	if countLines(ch, refused) != 1 {
		t.Errorf("c's history:\n%s\nwant its delegation refused: %s", strings.Join(ch, "\n"), refused)
	}
	if d := c.history(0, "d", "k"); len(d) != 0 {
		t.Errorf("d ran:\n%s", strings.Join(d, "\n"))
	}
	for i, p := range map[string]string{"a": "ran on p2", "b": "ran on p1", "c": "ran on p2"} {
		if h := c.history(0, i, "k"); countLines(h, p) < 2 {
			t.Errorf("%s did not run on its owner (%s):\n%s", i, p, strings.Join(h, "\n"))
		}
	}
}

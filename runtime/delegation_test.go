package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

const fanOutConfig = `
agents:
  - name: lead
    tools: [call_agent, list_agents]
  - name: coder
    description: writes the code
  - name: tester
    description: tests the code
`

const fanOutScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Final answer, from: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, args: {agent_id: tester, message: "test the parser"}}
        - text: "Delegated; I will answer when the reports are in."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`

func TestDelegationFanOutSmoke(t *testing.T) {
	h := newHarness(t, fanOutConfig, fanOutScript)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	if !strings.Contains(rep.Response, "parser written") || !strings.Contains(rep.Response, "all tests pass") {
		t.Errorf("response = %q", rep.Response)
	}
}

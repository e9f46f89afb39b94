package runtime_test

import (
	"slices"
	"strings"
	"testing"
)

// TestDelegationRules: the calls call_agent refuses, with the reason the
// model reads.
func TestDelegationRules(t *testing.T) {
	const cfg = `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
`
	tests := []struct{ name, args, want string }{
		{"self", `{"agent_id":"lead","message":"do it"}`,
			`tool "call_agent" failed: you cannot delegate to yourself (lead): do the task yourself, or delegate to another agent`},
		{"unknown agent", `{"agent_id":"ghost","message":"do it"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: coder, tester`},
		{"empty agent", `{"agent_id":"","message":"do it"}`,
			`tool "call_agent" failed: no agent ""; you may delegate to: coder, tester`},
		{"empty message", `{"agent_id":"coder","message":""}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"blank message", `{"agent_id":"coder","message":" \n\t "}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"empty message to oneself", `{"agent_id":"lead","message":""}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"no message", `{"agent_id":"coder"}`,
			`tool "call_agent": arguments do not match the schema: (root): missing property 'message'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg, oneCallScript("lead", "call_agent", tt.args))
			checkRefused(t, h, "lead", tt.want)
		})
	}
	t.Run("one refused, one delegated", func(t *testing.T) {
		h := newHarness(t, cfg, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "done: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: bad, args: {agent_id: lead, message: "x"}}
            - {name: call_agent, id: good, args: {agent_id: tester, message: "test it"}}
        - text: "waiting"
  tester: {fallback: {steps: [{text: "tested"}]}}
`)
		rep := mustAsk(t, h.rt, "lead", "k", "go")
		msgs := mustHistory(t, h.rt, "lead", "k")
		if m := toolResult(t, msgs, "bad"); !m.IsError {
			t.Errorf("bad call = %s", describe(m))
		}
		if m := toolResult(t, msgs, "good"); m.IsError || !strings.HasPrefix(m.Content, "Delegated to tester as task ") {
			t.Errorf("good call = %s", describe(m))
		}
		if !strings.Contains(rep.Response, wantReminder("user", "go", "tester: test it")+"[Delegation report]\n") {
			t.Errorf("Ask = %q", rep.Response)
		}
	})
}

// TestDelegationToolsOffered: call_agent is offered only to an agent with
// someone to delegate to, call_team_agent only to a system-level agent
// when there are teams.
func TestDelegationToolsOffered(t *testing.T) {
	tests := []struct {
		name, cfg, agent string
		want             []string
	}{
		{"single agent", `
agents:
  - name: solo
    tools: [call_agent, call_team_agent, get_my_tools]
`, "solo", []string{"get_my_tools"}},
		{"two agents", `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
  - name: other
`, "solo", []string{"call_agent", "get_my_tools"}},
		{"no teams", `
agents:
  - name: solo
    tools: [call_team_agent, call_agent]
  - name: other
`, "solo", []string{"call_agent"}},
		{"alone in its team", `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
  - name: other
teams:
  - {name: t, agents: [solo]}
`, "solo", []string{"get_my_tools"}},
		{"the only system-level agent", `
agents:
  - name: solo
    tools: [call_agent, call_team_agent]
  - name: other
teams:
  - {name: t, agents: [other]}
`, "solo", []string{"call_team_agent"}},
		{"system-level with peers and teams", `
agents:
  - name: solo
    tools: [call_team_agent, call_agent]
  - name: peer
  - name: other
teams:
  - {name: t, agents: [other]}
`, "solo", []string{"call_team_agent", "call_agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg, `
agents:
  solo: {fallback: {steps: [{text: "ok"}]}}
`)
			h.mustSend(tt.agent, "k", "hi")
			reqs := h.rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls, want 1", len(reqs))
			}
			if !slices.Equal(reqs[0].Tools, tt.want) {
				t.Errorf("tools offered = %v, want %v", reqs[0].Tools, tt.want)
			}
		})
	}
	t.Run("get_my_tools", func(t *testing.T) {
		h := newHarness(t, `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
`, oneCallScript("solo", "get_my_tools", `{}`))
		h.mustSend("solo", "k", "hi")
		got := toolResult(t, mustHistory(t, h.rt, "solo", "k"), "c1").Content
		if strings.Contains(got, "call_agent") || !strings.Contains(got, `"name":"get_my_tools"`) {
			t.Errorf("get_my_tools = %s", got)
		}
	})
}

// TestDelegationDepthLimit: with a depth of 2, the third link of a → b →
// c → d is refused, and c does the task itself.
func TestDelegationDepthLimit(t *testing.T) {
	cfg := `
agent_calls: {max_depth: 2}
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
    tools: [call_agent]
  - name: d
`
	script := `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: ab, args: {agent_id: b, message: "go deeper"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: bc, args: {agent_id: c, message: "go deeper"}}]
        - text: "asked c"
  c:
    turns:
      - match: "Delegation report"
        steps: [{text: "C: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: cd, args: {agent_id: d, message: "go deeper"}}]
        - text: "C did it myself"
  d: {fallback: {steps: [{text: "D did it"}]}}
`
	h := newHarness(t, cfg, script)
	rep := mustAsk(t, h.rt, "a", "k", "dig")
	if !strings.Contains(rep.Response, "C did it myself") || strings.Contains(rep.Response, "D did it") {
		t.Errorf("Ask = %q", rep.Response)
	}
	m := toolResult(t, mustHistory(t, h.rt, "c", "k"), "cd")
	if want := `tool "call_agent" failed: agent call chain too deep: a/k → b/k → c/k → d/k is deeper than 2; do the task yourself`; !m.IsError || m.Content != want {
		t.Errorf("c's call_agent = %s\nwant %s", describe(m), want)
	}
	if turns := h.rec.turnsOf("d", "", ""); len(turns) != 0 {
		t.Errorf("d ran: %v", turns)
	}
	waitNoTasks(t, h.rt)

	// With the default depth, the same chain goes all the way.
	h = newHarness(t, strings.Replace(cfg, "agent_calls: {max_depth: 2}\n", "", 1), script)
	if rep := mustAsk(t, h.rt, "a", "k", "dig"); !strings.Contains(rep.Response, "D did it") || strings.Contains(rep.Response, "C did it myself") {
		t.Errorf("Ask with the default depth = %q", rep.Response)
	}
}

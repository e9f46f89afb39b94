package runtime_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
)

// parallelConfig and parallelScript: the lead delegates to three agents in
// one step.
const parallelConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
  - name: writer
`

const parallelScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "All done."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}
            - {name: call_agent, id: d3, args: {agent_id: writer, message: "document the parser"}}
        - text: "Three delegations out."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
  writer: {fallback: {steps: [{text: "docs written"}]}}
`

// TestDelegationParallelFanIn: children finishing in any order make the
// same merged report, in delegation order, in one report turn.
func TestDelegationParallelFanIn(t *testing.T) {
	wantReport := noIDs(wantReminder("user", "build a parser", "coder: write the parser", "tester: test the parser", "writer: document the parser") +
		"[Merged report of 3 parallel delegations]\n" +
		wantSection("coder", "task_ID", "parser written", false) +
		wantSection("tester", "task_ID", "all tests pass", false) +
		wantSection("writer", "task_ID", "docs written", false))
	for _, order := range [][]string{
		{"coder", "tester", "writer"},
		{"writer", "tester", "coder"},
		{"tester", "writer", "coder"},
		{"writer", "coder", "tester"},
	} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			h, gm := newGatedHarness(t, parallelConfig, parallelScript)
			gates := map[string]*modelGate{}
			for _, a := range order {
				gates[a] = gm.hold(a, "")
			}
			asked := goAsk(h.rt, "lead", "k", "build a parser")
			for _, a := range order {
				gates[a].waitStarted(t, a)
			}
			for i, a := range order {
				gates[a].open()
				waitUntil(t, a+" reported", func() bool { return len(mustTasks(t, h.rt, a, "")) == 0 })
				if i == len(order)-1 {
					break
				}
				root := taskOf(t, h.rt, "lead")
				var from []string
				for _, r := range root.Context.Responses {
					from = append(from, r.FromAgent)
				}
				if root.Pending != len(order)-1-i || root.State != runtime.TaskWaiting || !slices.Equal(from, order[:i+1]) {
					t.Errorf("after %s: root task pending %d, state %s, responses from %v; want %d, waiting, %v",
						a, root.Pending, root.State, from, len(order)-1-i, order[:i+1])
				}
			}
			r := awaitAsk(t, asked)
			if r.err != nil || r.rep.Response != "All done." {
				t.Fatalf("Ask = %+v, %v", r.rep, r.err)
			}
			waitNoTasks(t, h.rt)
			lead := mustHistory(t, h.rt, "lead", "k")
			reps := reportInputs(lead)
			if len(reps) != 1 {
				t.Fatalf("%d reports, want 1", len(reps))
			}
			// The IDs in the report are the delegations', in order.
			ids := taskIDRe.FindAllString(reps[0].Content, -1)
			if want := []string{delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2"), delegatedTo(t, lead, "d3")}; !slices.Equal(ids, want) {
				t.Errorf("task IDs in the report = %v, want %v", ids, want)
			}
			if got := noIDs(reps[0].Content); got != wantReport {
				t.Errorf("report:\n%s\nwant:\n%s", got, wantReport)
			}
			// Close waits for whatever still runs: no second report turn.
			mustClose(t, h.rt)
			if turns := h.rec.turnsOf("lead", "k", "Merged report"); len(turns) != 1 {
				t.Errorf("report turns of the lead = %v, want one", turns)
			}
			if turns := h.rec.turnsOf("lead", "k", ""); len(turns) != 2 {
				t.Errorf("turns of the lead = %v, want two", turns)
			}
		})
	}
}

// TestDelegationNoGoroutineLeak: a fan-out leaves no goroutine behind once
// the runtime is closed.
func TestDelegationNoGoroutineLeak(t *testing.T) {
	before := goroutines()
	h := newHarness(t, parallelConfig, parallelScript)
	for i := range 5 {
		if rep := mustAsk(t, h.rt, "lead", "k"+strconv.Itoa(i), "build a parser"); rep.Response != "All done." {
			t.Fatalf("Ask = %q", rep.Response)
		}
	}
	waitNoTasks(t, h.rt)
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

// TestDelegationConcurrentAsks: two Asks on one instance, each delegating,
// each get the answer of their own request.
func TestDelegationConcurrentAsks(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "do it"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "done"}]}}
`)
	var asks []<-chan askResult
	for i := range 4 {
		asks = append(asks, goAsk(h.rt, "lead", "k", "request "+strconv.Itoa(i)))
	}
	seen := map[string]bool{}
	for i, c := range asks {
		r := awaitAsk(t, c)
		if r.err != nil || !strings.HasPrefix(r.rep.Response, "Final: "+wantReminder("user", "request "+strconv.Itoa(i), "coder: do it")) {
			t.Errorf("Ask %d = %+v, %v", i, r.rep, r.err)
			continue
		}
		if seen[r.rep.TaskID] {
			t.Errorf("task %s answered twice", r.rep.TaskID)
		}
		seen[r.rep.TaskID] = true
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationSameAgentTwice: two delegations to one agent in one step
// are two tasks, run one after the other on its instance, in one merged
// report.
func TestDelegationSameAgentTwice(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Both."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the lexer"}}
            - {name: call_agent, id: d2, args: {agent_id: coder, message: "write the parser"}}
        - text: "waiting"
  coder:
    turns:
      - match: "lexer"
        steps: [{text: "lexer written"}]
      - match: "parser"
        steps: [{text: "parser written"}]
`)
	if rep := mustAsk(t, h.rt, "lead", "k", "build"); rep.Response != "Both." {
		t.Errorf("Ask = %q", rep.Response)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	want := wantReminder("user", "build", "coder: write the lexer", "coder: write the parser") + "[Merged report of 2 parallel delegations]\n" +
		wantSection("coder", delegatedTo(t, lead, "d1"), "lexer written", false) +
		wantSection("coder", delegatedTo(t, lead, "d2"), "parser written", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
	if turns := h.rec.turnsOf("coder", "k", ""); len(turns) != 2 {
		t.Errorf("coder turns = %v", turns)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationOverSteps: delegations made in two steps of one turn are
// one fan-out, in step order.
func TestDelegationOverSteps(t *testing.T) {
	h := newHarness(t, fanOutConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Done."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: tester, message: "plan the tests"}}]
        - tool_calls: [{name: call_agent, id: d2, args: {agent_id: coder, message: "write the parser"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "tests planned"}]}}
`)
	if rep := mustAsk(t, h.rt, "lead", "k", "build"); rep.Response != "Done." {
		t.Errorf("Ask = %q", rep.Response)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	if m := toolResult(t, lead, "d2"); !strings.HasPrefix(m.Content, "Delegated to coder as task ") {
		t.Errorf("second call = %s", m.Content)
	}
	want := wantReminder("user", "build", "tester: plan the tests", "coder: write the parser") + "[Merged report of 2 parallel delegations]\n" +
		wantSection("tester", delegatedTo(t, lead, "d1"), "tests planned", false) +
		wantSection("coder", delegatedTo(t, lead, "d2"), "parser written", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
}

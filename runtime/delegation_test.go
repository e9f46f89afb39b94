package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

func TestDelegationFanOutSmoke(t *testing.T) {
	h := newHarness(t, fanOutConfig, fanOutScript)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Response, "parser written") || !strings.Contains(rep.Response, "all tests pass") {
		t.Errorf("response = %q", rep.Response)
	}
}

// TestDelegationSingle: lead → coder. The delegating turn ends delegated,
// the child gets the caller's metadata, the report restores the lead's
// context, and Ask returns the lead's final answer.
func TestDelegationSingle(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, singleConfig, singleScript)
	log := watchEvents(h.rt.Events(), "task.*")

	// Send shows the delegating turn's own result.
	res := h.mustSend("lead", "s", "build a parser")
	if res.FinishReason != pipeline.FinishDelegated || !regexp.MustCompile(`^task_[0-9a-f]{12}$`).MatchString(res.TaskID) ||
		res.Response.Content != "Delegated; waiting for the coder." || res.TurnID != "turn-1" || res.Steps != 2 {
		t.Fatalf("delegating turn = %+v, want finish delegated with a task ID", res)
	}
	waitUntil(t, "the root task answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	waitNoTasks(t, h.rt)
	lead := mustHistory(t, h.rt, "lead", "s")
	child := delegatedTo(t, lead, "d1")
	if child == res.TaskID {
		t.Fatalf("child and root task share ID %s", child)
	}
	if want := "Delegated to coder as task " + child + ". It starts when your turn ends; its report comes back to you as a new message. " +
		"Until then, do not say you have its result."; toolResult(t, lead, "d1").Content != want {
		t.Errorf("call_agent result = %q\nwant %q", toolResult(t, lead, "d1").Content, want)
	}

	// The child's input carries the caller's metadata.
	coder := mustHistory(t, h.rt, "coder", "s")
	if len(coder) != 2 || coder[0].Role != pipeline.RoleUser || coder[0].Content != "write the parser" || coder[1].Content != "parser written" {
		t.Fatalf("coder history:\n%s", strings.Join(describeAll(coder), "\n"))
	}
	if src := coder[0].Source; src.Type != pipeline.SourceAgent || src.Agent != "lead" {
		t.Errorf("child input source = %+v, want agent lead", src)
	}
	md := coder[0].Metadata
	for k, want := range map[string]string{
		"callerAgent": "lead", "callerInstanceKey": "s", "callerTurnId": "turn-1", "callSource": "tool",
		"taskId": child, "parentTaskId": res.TaskID, "taskChain": "[lead/s]",
	} {
		if got := fmt.Sprint(md[k]); got != want {
			t.Errorf("child input metadata %s = %q, want %q (all: %v)", k, got, want, md)
		}
	}

	// The report restores the context, then gives the child's answer.
	reps := reportInputs(lead)
	if len(reps) != 1 {
		t.Fatalf("%d reports in the lead's history, want 1:\n%s", len(reps), strings.Join(describeAll(lead), "\n"))
	}
	want := wantReminder("user", "build a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", child, "parser written", false)
	if reps[0].Content != want {
		t.Errorf("report:\n%s\nwant:\n%s", reps[0].Content, want)
	}
	if src := reps[0].Source; src.Type != pipeline.SourceAgent || src.Agent != "coder" {
		t.Errorf("report source = %+v, want agent coder", src)
	}
	if got := fmt.Sprint(reps[0].Metadata["taskId"], " ", reps[0].Metadata["callSource"]); got != res.TaskID+" tool" {
		t.Errorf("report metadata = %v", reps[0].Metadata)
	}
	checkLines(t, "lead history", describeAll(lead)[:4], []string{
		"user: build a parser",
		`assistant: +call(d1 call_agent {"agent_id":"coder","message":"write the parser"})`,
		"tool(d1 call_agent): " + toolResult(t, lead, "d1").Content,
		"assistant: Delegated; waiting for the coder.",
	})
	if got := describe(lead[len(lead)-1]); got != "assistant: The parser is written." || len(lead) != 6 {
		t.Errorf("lead history ends with %q (%d messages)", got, len(lead))
	}

	// Events: delegated, the child completed, then the root answered on
	// the api channel (a Send's answer: nobody waits, and that is no
	// failure to deliver).
	if evs := log.get(events.TaskDelegated); len(evs) != 1 || evData(evs[0])["child_task_id"] != child || evData(evs[0])["task_id"] != res.TaskID ||
		evData(evs[0])["to"] != "coder" || evData(evs[0])["root"] != true || evData(evs[0])["pending"] != 1 {
		t.Errorf("task.delegated events = %+v", evs)
	}
	comp := log.get(events.TaskCompleted)
	if len(comp) != 2 || evData(comp[0])["task_id"] != child || evData(comp[0])["parent_task_id"] != res.TaskID || evData(comp[0])["failed"] != false ||
		evData(comp[1])["task_id"] != res.TaskID || evData(comp[1])["response"] != "The parser is written." {
		t.Errorf("task.completed events = %+v", comp)
	}
	ans := log.get(events.TaskAnswered)[0]
	if d := evData(ans); d["task_id"] != res.TaskID || d["channel"] != runtime.ChannelAPI || d["requester"] != "user" ||
		d["response"] != "The parser is written." || d["delivered"] != true || ans.Agent != "lead" || ans.Instance != "s" {
		t.Errorf("task.answered = %+v", ans)
	}

	// Ask waits for the final answer.
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "The parser is written." || !taskIDRe.MatchString(rep.TaskID) || rep.Agent != "lead" || rep.Instance != "k" ||
		rep.Requester != "user" || rep.Channel != runtime.ChannelAPI || !strings.HasPrefix(rep.ReplyTo, "ask_") ||
		rep.Request != "build a parser" || rep.Error != "" {
		t.Errorf("Ask = %+v", rep)
	}
	// The event follows the delivery that ended the Ask.
	waitUntil(t, "the second task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 2 })
	if d := evData(log.get(events.TaskAnswered)[1]); d["delivered"] != true || d["task_id"] != rep.TaskID {
		t.Errorf("second task.answered = %v, want delivered", d)
	}
	waitNoTasks(t, h.rt)
	if _, err := h.rt.Task(ctx, rep.TaskID); !errors.Is(err, runtime.ErrNoTask) ||
		err.Error() != fmt.Sprintf("task %q: no such task (tasks are deleted when they complete)", rep.TaskID) {
		t.Errorf("Task(completed) = %v", err)
	}
}

// TestDelegationAskWithoutDelegation: a turn that does not delegate is
// Ask's answer at once, without a task.
func TestDelegationAskWithoutDelegation(t *testing.T) {
	h := newHarness(t, singleConfig, singleScript)
	rep := mustAsk(t, h.rt, "coder", "k", "write it")
	if rep.Response != "parser written" || rep.TaskID != "" || rep.Agent != "coder" || rep.Request != "write it" {
		t.Errorf("Ask = %+v", rep)
	}
	if ts := mustTasks(t, h.rt, "", ""); len(ts) != 0 {
		t.Errorf("tasks = %+v", ts)
	}
}

// TestDelegationSequential: the lead delegates to the coder, then, in the
// report's turn, to the tester, and answers after the second report.
func TestDelegationSequential(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
`, `
agents:
  lead:
    turns:
      - match: "## tester, task"
        steps: [{text: "Parser written and tested."}]
      - match: "## coder, task"
        steps:
          - tool_calls: [{name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}]
          - text: "Now the tester."
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}]
        - text: "First the coder."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TurnFinished)
	rep := mustAsk(t, h.rt, "lead", "k", "build and test a parser")
	if rep.Response != "Parser written and tested." {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	lead := mustHistory(t, h.rt, "lead", "k")
	c1, c2 := delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2")
	reps := reportInputs(lead)
	if len(reps) != 2 {
		t.Fatalf("%d reports, want 2:\n%s", len(reps), strings.Join(describeAll(lead), "\n"))
	}
	want1 := wantReminder("user", "build and test a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", c1, "parser written", false)
	want2 := wantReminder("user", "build and test a parser", "coder: write the parser", "tester: test the parser") +
		"[Delegation report]\n" + wantSection("tester", c2, "all tests pass", false)
	if reps[0].Content != want1 {
		t.Errorf("first report:\n%s\nwant:\n%s", reps[0].Content, want1)
	}
	if reps[1].Content != want2 {
		t.Errorf("second report:\n%s\nwant:\n%s", reps[1].Content, want2)
	}
	// Both delegations belong to one root task, which Ask answered.
	if fmt.Sprint(reps[0].Metadata["taskId"]) != rep.TaskID || fmt.Sprint(reps[1].Metadata["taskId"]) != rep.TaskID {
		t.Errorf("reports' taskId = %v, %v; want %s", reps[0].Metadata["taskId"], reps[1].Metadata["taskId"], rep.TaskID)
	}
	// turn.finished follows the answer that ended the Ask.
	waitUntil(t, "the lead's third turn.finished", func() bool {
		n := 0
		for _, ev := range log.get(events.TurnFinished) {
			if ev.Agent == "lead" {
				n++
			}
		}
		return n == 3
	})
	var leadTurns []string
	for _, ev := range log.get(events.TurnFinished) {
		if ev.Agent == "lead" {
			leadTurns = append(leadTurns, ev.TurnID+" "+fmt.Sprint(evData(ev)["finish_reason"]))
		}
	}
	checkLines(t, "lead turns", leadTurns, []string{"turn-1 delegated", "turn-2 delegated", "turn-3 " + string(pipeline.FinishText)})
}

// TestDelegationRecursiveChain: a → b → c → d, each report going up one
// link; d's answer reaches the root's Ask.
func TestDelegationRecursiveChain(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
    tools: [call_agent]
  - name: d
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A answers: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: ab, args: {agent_id: b, message: "b, find the answer"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: bc, args: {agent_id: c, message: "c, find the answer"}}]
        - text: "asked c"
  c:
    turns:
      - match: "Delegation report"
        steps: [{text: "C relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: cd, args: {agent_id: d, message: "d, find the answer"}}]
        - text: "asked d"
  d: {fallback: {steps: [{text: "D says 42"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskCompleted)
	rep := mustAsk(t, h.rt, "a", "k", "what is the answer?")
	if !strings.HasPrefix(rep.Response, "A answers: "+reminderHead) || !strings.Contains(rep.Response, "D says 42") ||
		!strings.Contains(rep.Response, "B relays: ") || !strings.Contains(rep.Response, "C relays: ") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	// Link by link: each report holds the answer of the agent below.
	for _, l := range []struct{ agent, below, answer, request string }{
		{"c", "d", "D says 42", "c, find the answer"},
		{"b", "c", "C relays: ", "b, find the answer"},
		{"a", "b", "B relays: ", "what is the answer?"},
	} {
		msgs := mustHistory(t, h.rt, l.agent, "k")
		reps := reportInputs(msgs)
		if len(reps) != 1 {
			t.Fatalf("%s: %d reports", l.agent, len(reps))
		}
		requester := "user"
		if l.agent != "a" {
			requester = map[string]string{"b": "a/k", "c": "b/k"}[l.agent]
		}
		head := wantReminder(requester, l.request, l.below+": "+l.below+", find the answer") + "[Delegation report]\n\n## " + l.below + ", task "
		if !strings.HasPrefix(reps[0].Content, head) || !strings.Contains(reps[0].Content, l.answer) || !strings.Contains(reps[0].Content, "D says 42") {
			t.Errorf("%s's report:\n%s\nwant it to start with:\n%s", l.agent, reps[0].Content, head)
		}
	}
	d := mustHistory(t, h.rt, "d", "k")
	if got := fmt.Sprint(d[0].Metadata["taskChain"]); got != "[a/k b/k c/k]" {
		t.Errorf("d's taskChain = %s", got)
	}
	var done []string
	for _, ev := range log.get(events.TaskCompleted) {
		done = append(done, ev.Agent)
	}
	checkLines(t, "completion order", done, []string{"d", "c", "b", "a"})
}

// TestDelegationBackToRequester: b, working on a's task, delegates back to
// a; a answers that task in a turn of its own, and its root task still
// gets b's report.
func TestDelegationBackToRequester(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A final: {{ .Input }}"}]
      - match: "what do you mean"
        steps: [{text: "I mean the blue one"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: b, message: "paint it"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "painted it blue"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: a, message: "what do you mean?"}}]
        - text: "asked a"
`)
	rep := mustAsk(t, h.rt, "a", "k", "paint")
	if !strings.HasPrefix(rep.Response, "A final: ") || !strings.Contains(rep.Response, "painted it blue") {
		t.Errorf("Ask = %q", rep.Response)
	}
	b := mustHistory(t, h.rt, "b", "k")
	if reps := reportInputs(b); len(reps) != 1 || !strings.Contains(reps[0].Content, "I mean the blue one") {
		t.Errorf("b's reports = %+v", reps)
	}
	waitNoTasks(t, h.rt)
}

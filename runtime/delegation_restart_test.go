package runtime_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store/badger"
)

const restartDelegConfig = modelLine + `
data: data
agents:
  - name: lead
    tools: [call_agent]
  - name: c1
  - name: c2
  - name: c3
    extensions: [{name: protocol}]
`

const restartDelegScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "All in. {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: c1, message: "first part"}}
            - {name: call_agent, id: d2, args: {agent_id: c2, message: "second part"}}
            - {name: call_agent, id: d3, args: {agent_id: c3, message: "third part"}}
        - text: "three out"
  c1: {fallback: {steps: [{text: "c1 done"}]}}
  c2: {fallback: {steps: [{text: "c2 done"}]}}
  c3: {fallback: {steps: [{text: "c3 done"}]}}
`

// storedTasks reads the tasks a closed runtime left in p's data directory.
func storedTasks(t *testing.T, p *persistent) map[string]runtime.Task {
	t.Helper()
	st, err := badger.Open(filepath.Join(p.dir, "data"))
	if err != nil {
		t.Fatalf("badger.Open: %v", err)
	}
	defer st.Close()
	recs, err := st.ListTasks(context.Background(), "", "")
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	out := map[string]runtime.Task{} // by agent
	for _, rec := range recs {
		var tk runtime.Task
		if err := json.Unmarshal(rec.Data, &tk); err != nil {
			t.Fatalf("task %s: %v", rec.ID, err)
		}
		if _, dup := out[tk.Agent]; dup {
			t.Fatalf("two tasks of %s", tk.Agent)
		}
		out[tk.Agent] = tk
	}
	return out
}

// answeredEvents subscribes to task.answered on a new bus.
func answeredEvents() (*events.Bus, chan events.Event) {
	bus := events.NewBus()
	c := make(chan events.Event, 8)
	bus.Subscribe(events.TaskAnswered, func(ev events.Event) { c <- ev })
	return bus, c
}

func awaitEvent(t *testing.T, c <-chan events.Event, what string) events.Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(askTimeout):
		t.Fatalf("no %s; goroutines:\n%s", what, strings.Join(stacks(), "\n\n"))
	}
	return events.Event{}
}

// wantRestartReport is the lead's merged report of restartDelegScript.
func wantRestartReport(t *testing.T, lead []pipeline.Message) string {
	t.Helper()
	return wantReminder("user", "do three things", "c1: first part", "c2: second part", "c3: third part") +
		"[Merged report of 3 parallel delegations]\n" +
		wantSection("c1", delegatedTo(t, lead, "d1"), "c1 done", false) +
		wantSection("c2", delegatedTo(t, lead, "d2"), "c2 done", false) +
		wantSection("c3", delegatedTo(t, lead, "d3"), "c3 done", false)
}

// countAssistant counts the assistant messages of a history.
func countAssistant(msgs []pipeline.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == pipeline.RoleAssistant {
			n++
		}
	}
	return n
}

// TestDelegationRestartMidFanOut: the runtime closes while two of three
// children work; after a restart they run again, and the parent gets one
// merged report of all three and answers.
func TestDelegationRestartMidFanOut(t *testing.T) {
	ctx := context.Background()
	sc, err := scripted.Parse("script.yaml", []byte(restartDelegScript))
	if err != nil {
		t.Fatal(err)
	}
	rec1 := &recorder{p: sc}
	gm := newGateModel(rec1)
	g2, g3 := gm.hold("c2", ""), gm.hold("c3", "")
	p := newPersistent(t, restartDelegConfig, restartDelegScript, runtime.WithModel(gm))
	rt := p.mustOpen()
	res, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("do three things"))
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	g2.waitStarted(t, "c2")
	g3.waitStarted(t, "c3")
	waitUntil(t, "c1 reported", func() bool { return len(mustTasks(t, rt, "c1", "")) == 0 })
	mustClose(t, rt) // aborts c2's and c3's turns

	stored := storedTasks(t, p)
	root := stored["lead"]
	if len(stored) != 3 || root.ID != res.TaskID || root.State != runtime.TaskWaiting || root.Pending != 2 ||
		len(root.Context.Responses) != 1 || root.Context.Responses[0].FromAgent != "c1" || root.Context.Responses[0].Response != "c1 done" {
		t.Fatalf("stored tasks after Close = %+v", stored)
	}
	for _, a := range []string{"c2", "c3"} {
		if c := stored[a]; c.State != runtime.TaskQueued || c.ParentID != root.ID {
			t.Errorf("stored task of %s = %+v, want queued", a, c)
		}
	}

	bus, answered := answeredEvents()
	rec2 := &recorder{p: sc}
	p.opts = []runtime.Option{runtime.WithModel(rec2), runtime.WithEvents(bus)}
	rt = p.mustOpen()
	ev := awaitEvent(t, answered, "answer after the restart")
	waitNoTasks(t, rt)
	lead := mustHistory(t, rt, "lead", "k")
	want := wantRestartReport(t, lead)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
	if d := evData(ev); d["task_id"] != root.ID || d["response"] != "All in. "+want || d["channel"] != runtime.ChannelAPI ||
		d["requester"] != "user" || d["delivered"] != true || ev.Agent != "lead" || ev.Instance != "k" {
		t.Errorf("task.answered = %+v", ev)
	}
	if got := lastAssistant(lead); got != "All in. "+want {
		t.Errorf("the lead's last answer = %q", got)
	}
	// Only the unfinished children ran again; the lead ran its report turn.
	for a, n := range map[string]int{"c1": 0, "c2": 1, "c3": 1, "lead": 1} {
		if turns := rec2.turnsOf(a, "k", ""); len(turns) != n {
			t.Errorf("%s ran %v after the restart, want %d turn(s)", a, turns, n)
		}
	}
	if turns := rec1.turnsOf("c1", "k", ""); len(turns) != 1 {
		t.Errorf("c1 ran %v before the restart, want once", turns)
	}
	if c1 := mustHistory(t, rt, "c1", "k"); len(c1) != 2 || c1[1].Content != "c1 done" {
		t.Errorf("c1 history:\n%s", strings.Join(describeAll(c1), "\n"))
	}
	for _, a := range []string{"c2", "c3"} {
		if msgs := mustHistory(t, rt, a, "k"); countAssistant(msgs) != 1 || lastAssistant(msgs) != a+" done" {
			t.Errorf("%s history:\n%s", a, strings.Join(describeAll(msgs), "\n"))
		}
	}
	mustClose(t, rt)
}

// closedMidReport sends restartDelegScript's lead its task and closes the
// runtime while the merged report turn runs: the lead's three children
// have reported, and the report is not yet stored. It returns the store's
// place, the script and the lead's result.
func closedMidReport(t *testing.T) (*persistent, *scripted.Model, *pipeline.TurnResult) {
	t.Helper()
	ctx := context.Background()
	sc, err := scripted.Parse("script.yaml", []byte(restartDelegScript))
	if err != nil {
		t.Fatal(err)
	}
	gm := newGateModel(&recorder{p: sc})
	g := gm.hold("lead", "Merged report")
	p := newPersistent(t, restartDelegConfig, restartDelegScript, runtime.WithModel(gm))
	rt := p.mustOpen()
	res, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("do three things"))
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	g.waitStarted(t, "the report turn")
	mustClose(t, rt)
	return p, sc, res
}

// TestDelegationRestartMidReport: the runtime closes during the merged
// report turn; after a restart the report is handed over again, and no
// child runs again.
func TestDelegationRestartMidReport(t *testing.T) {
	p, sc, res := closedMidReport(t)

	stored := storedTasks(t, p)
	if root := stored["lead"]; len(stored) != 1 || root.State != runtime.TaskReporting || root.Pending != 0 ||
		len(root.Context.Responses) != 3 || root.Context.Reported != 0 {
		t.Fatalf("stored tasks after Close = %+v", stored)
	}

	bus, answered := answeredEvents()
	rec2 := &recorder{p: sc}
	p.opts = []runtime.Option{runtime.WithModel(rec2), runtime.WithEvents(bus)}
	rt := p.mustOpen()
	ev := awaitEvent(t, answered, "answer after the restart")
	waitNoTasks(t, rt)
	lead := mustHistory(t, rt, "lead", "k")
	want := wantRestartReport(t, lead)
	if d := evData(ev); d["task_id"] != res.TaskID || d["response"] != "All in. "+want {
		t.Errorf("task.answered = %+v\nwant the response %q", ev, "All in. "+want)
	}
	for a, n := range map[string]int{"c1": 0, "c2": 0, "c3": 0, "lead": 1} {
		if turns := rec2.turnsOf(a, "k", ""); len(turns) != n {
			t.Errorf("%s ran %v after the restart, want %d turn(s)", a, turns, n)
		}
	}
	mustClose(t, rt)
}

// TestDelegationRestartPausedChild: a child paused for a human stays
// paused across a restart; the answer given after it resumes the child,
// whose report reaches the parent.
func TestDelegationRestartPausedChild(t *testing.T) {
	ctx := context.Background()
	script := strings.Replace(restartDelegScript, `  c3: {fallback: {steps: [{text: "c3 done"}]}}`, `  c3:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: Which part?
              default: third
              required: true
              [/USER_QUESTION]
      - steps:
          - text: "c3 done"`, 1)
	p := newPersistent(t, restartDelegConfig, script, runtime.WithoutExpiryTimer())
	rt := p.mustOpen()
	res, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("do three things"))
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	waitUntil(t, "c1 and c2 reported, c3 paused", func() bool {
		ts := mustTasks(t, rt, "", "")
		return len(ts) == 2 && len(mustTasks(t, rt, "c3", "")) == 1 && mustTasks(t, rt, "c3", "")[0].State == runtime.TaskPaused
	})
	mustClose(t, rt)

	bus, answered := answeredEvents()
	p.opts = []runtime.Option{runtime.WithoutExpiryTimer(), runtime.WithEvents(bus)}
	rt = p.mustOpen()
	items, err := rt.Pending(ctx, ledger.Filter{Agent: "c3", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending after the restart = %+v, %v", items, err)
	}
	if c3 := taskOf(t, rt, "c3"); c3.State != runtime.TaskPaused || c3.Turn != items[0].TurnID {
		t.Errorf("c3's task after the restart = %+v", c3)
	}
	select {
	case ev := <-answered:
		t.Fatalf("answered before the human did: %+v", ev)
	default:
	}
	r, err := rt.Answer(ctx, items[0].ID, "third")
	if err != nil || r.FinishReason != pipeline.FinishText || r.Response.Content != "c3 done" {
		t.Fatalf("Answer = %+v, %v", r, err)
	}
	ev := awaitEvent(t, answered, "answer after the human's")
	waitNoTasks(t, rt)
	lead := mustHistory(t, rt, "lead", "k")
	if want := "All in. " + wantRestartReport(t, lead); evData(ev)["response"] != want {
		t.Errorf("task.answered = %+v\nwant the response %q", ev, want)
	}
	mustClose(t, rt)
}

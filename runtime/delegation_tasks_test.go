package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/task"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestDelegationTasksWhileWaiting: the tasks hold the seed's fields while
// a child works, and are deleted when done.
func TestDelegationTasksWhileWaiting(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	h, gm := newGatedHarness(t, singleConfig, singleScript, runtime.WithClock(func() time.Time { return at }))
	g := gm.hold("coder", "")
	asked := goAsk(h.rt, "lead", "k", "build a parser")
	g.waitStarted(t, "the coder")

	all := mustTasks(t, h.rt, "", "")
	if len(all) != 2 {
		t.Fatalf("tasks = %+v, want two", all)
	}
	root, child := taskOf(t, h.rt, "lead"), taskOf(t, h.rt, "coder")
	if all[0].ID > all[1].ID {
		t.Errorf("tasks not sorted by ID: %s, %s", all[0].ID, all[1].ID)
	}
	if !strings.HasPrefix(root.ReplyTo, "ask_") {
		t.Errorf("root reply-to = %q", root.ReplyTo)
	}
	wantRoot := runtime.Task{ID: root.ID, Agent: "lead", Instance: "k", Requester: "user", Channel: runtime.ChannelAPI, ReplyTo: root.ReplyTo,
		OriginalRequest: "build a parser", State: runtime.TaskWaiting, Pending: 1, Chain: []string{}, CreatedAt: at,
		Spent: task.Spend{Delegations: 1, Turns: 1}, // the lead's turn that delegated
		Context: task.DelegationContext{OriginalRequest: "build a parser", Requester: "user",
			Delegations: []task.Delegation{{ChildTaskID: child.ID, CallID: "d1", DelegatedTo: "coder", Instance: "k", Message: "write the parser", Time: at}}}}
	if len(root.Chain) == 0 {
		root.Chain = []string{}
	}
	if !reflect.DeepEqual(root, wantRoot) {
		t.Errorf("root task:\n got %+v\nwant %+v", root, wantRoot)
	}
	wantChild := runtime.Task{ID: child.ID, Agent: "coder", Instance: "k", Requester: "lead/k", Channel: runtime.ChannelAgent,
		OriginalRequest: "write the parser", ParentID: root.ID, Root: root.ID, CallerTurn: "turn-1", State: runtime.TaskQueued, Chain: []string{"lead/k"}, CreatedAt: at,
		Context: task.DelegationContext{OriginalRequest: "write the parser", Requester: "lead/k"}}
	if !reflect.DeepEqual(child, wantChild) {
		t.Errorf("child task:\n got %+v\nwant %+v", child, wantChild)
	}
	// The stored form uses the seed's field names.
	for _, tk := range []runtime.Task{root, child} {
		b, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := []string{"task_id", "requester", "requester_channel", "original_request", "delegated_to", "delegation_context", "pending_delegations", "state"}
		if tk.ParentID != "" {
			keys = append(keys, "parent_task_id")
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("task %s as JSON lacks %q: %s", tk.ID, k, b)
			}
		}
	}
	if b, _ := json.Marshal(root.Context); !strings.Contains(string(b), `"delegations":[{"child_task_id":"`+child.ID+`","call_id":"d1","delegated_to":"coder","instance":"k","delegation_message":"write the parser","delegation_time":"2026-03-04T05:06:07Z"}]`) {
		t.Errorf("delegation context as JSON: %s", b)
	}
	// Filters, and one task by ID.
	for _, f := range []struct {
		agent, key string
		want       int
	}{{"lead", "k", 1}, {"lead", "", 1}, {"coder", "k", 1}, {"lead", "other", 0}, {"tester", "", 0}, {"", "k", 2}} {
		if got := len(mustTasks(t, h.rt, f.agent, f.key)); got != f.want {
			t.Errorf("Tasks(%q, %q) = %d tasks, want %d", f.agent, f.key, got, f.want)
		}
	}
	if got, err := h.rt.Task(ctx, child.ID); err != nil || !reflect.DeepEqual(got, wantChild) {
		t.Errorf("Task(%s) = %+v, %v", child.ID, got, err)
	}
	if _, err := h.rt.Task(ctx, "task_000000000000"); !errors.Is(err, runtime.ErrNoTask) ||
		err.Error() != `task "task_000000000000": no such task (tasks are deleted when they complete)` {
		t.Errorf("Task(unknown) = %v", err)
	}

	g.open()
	if r := awaitAsk(t, asked); r.err != nil || r.rep.Response != "The parser is written." || r.rep.TaskID != root.ID {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
	for _, id := range []string{root.ID, child.ID} {
		if _, err := h.rt.Task(ctx, id); !errors.Is(err, runtime.ErrNoTask) {
			t.Errorf("Task(%s) after completion: %v", id, err)
		}
	}
}

// TestDelegationAskMaxSteps: a turn that delegates and then runs out of
// steps still delegated: Ask waits for the final answer.
func TestDelegationAskMaxSteps(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    tools: [call_agent]
    max_steps: 1
  - name: coder
`, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "The parser is written."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	res := h.mustSend("lead", "s", "build a parser")
	if res.TaskID == "" {
		t.Fatalf("the turn delegated without a task: %+v", res)
	}
	waitNoTasks(t, h.rt)
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "The parser is written." || rep.TaskID == "" {
		t.Fatalf("Ask returned before the delegation reported (the delegating turn ended %s): %+v", res.FinishReason, rep)
	}
}

// TestDelegationAskCancelled: Ask gives up; the task goes on and its
// answer is published.
func TestDelegationAskCancelled(t *testing.T) {
	h, gm := newGatedHarness(t, singleConfig, singleScript)
	g := gm.hold("coder", "")
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select { // not waitStarted: t.Fatal must not run outside the test's goroutine
		case <-g.started:
		case <-time.After(askTimeout):
		}
		cancel()
	}()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	root := taskOf(t, h.rt, "lead")
	if rep != nil || !errors.Is(err, context.Canceled) ||
		err.Error() != fmt.Sprintf(`agent "lead" instance "k": waiting for task %s: context canceled`, root.ID) {
		t.Fatalf("Ask = %+v, %v", rep, err)
	}
	g.open()
	waitUntil(t, "the task answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if d := evData(log.get(events.TaskAnswered)[0]); d["delivered"] != false || d["response"] != "The parser is written." || d["task_id"] != root.ID {
		t.Errorf("task.answered = %v", d)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationChannels: a root task answers on the channel its input
// names.
func TestDelegationChannels(t *testing.T) {
	ctx := context.Background()
	got := make(chan runtime.Report, 1)
	h := newHarness(t, singleConfig, singleScript, runtime.WithChannel("chat", runtime.ChannelFunc(func(_ context.Context, r runtime.Report) error {
		got <- r
		return nil
	})))
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	in := runtime.UserMessage("build a parser")
	in.Metadata = map[string]any{"channel": "chat", "replyTo": "room-7", "requester": "alice"}
	res, err := h.rt.Send(ctx, "lead", "k", in)
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	select {
	case r := <-got:
		if r.TaskID != res.TaskID || r.Channel != "chat" || r.ReplyTo != "room-7" || r.Requester != "alice" || r.Request != "build a parser" ||
			r.Response != "The parser is written." || r.Agent != "lead" || r.Instance != "k" || r.Error != "" {
			t.Errorf("delivered report = %+v", r)
		}
	case <-time.After(askTimeout):
		t.Fatal("the chat channel got no report")
	}
	if reps := reportInputs(mustHistory(t, h.rt, "lead", "k")); len(reps) != 1 || !strings.HasPrefix(reps[0].Content, wantReminder("alice", "build a parser", "coder: write the parser")) {
		t.Errorf("report = %+v", reps)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if d := evData(log.get(events.TaskAnswered)[0]); d["delivered"] != true || d["channel"] != "chat" {
		t.Errorf("task.answered = %v", d)
	}

	// A channel nobody registered: the answer is only published.
	in.Metadata = map[string]any{"channel": "pager"}
	if _, err := h.rt.Send(ctx, "lead", "k2", in); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 2 })
	if d := evData(log.get(events.TaskAnswered)[1]); d["delivered"] != false || d["channel"] != "pager" || d["response"] != "The parser is written." {
		t.Errorf("task.answered = %v", d)
	}

	// The runtime's own channel names are refused.
	for _, name := range []string{runtime.ChannelAPI, runtime.ChannelAgent} {
		dir := t.TempDir()
		_, err := runtime.New(ctx, runtime.WithConfig(parseConfig(t, dir, modelLine+singleConfig)), runtime.WithMemoryStore(),
			runtime.WithModel(&recorder{}), runtime.WithChannel(name, runtime.ChannelFunc(func(context.Context, runtime.Report) error { return nil })))
		checkErr(t, err, fmt.Sprintf("runtime: channel %q is the runtime's own; name yours otherwise", name))
	}
}

// TestDelegationCloseAbortsTasks: Close aborts the background task turns,
// which stay stored; calls after Close are refused.
func TestDelegationCloseAbortsTasks(t *testing.T) {
	h, gm := newGatedHarness(t, singleConfig, singleScript)
	g := gm.hold("coder", "")
	h.mustSend("lead", "k", "build a parser")
	g.waitStarted(t, "the coder")
	done := make(chan error, 1)
	go func() { done <- h.rt.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(askTimeout):
		t.Fatal("Close waits for the held task turn")
	}
	if _, err := h.rt.Ask(context.Background(), "lead", "k", "again"); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Ask after Close = %v", err)
	}
}

// TestNewRefusedReleasesWhatItOpened: a New refused after it subscribed
// the tape to the caller's bus (here, for a channel named as the
// runtime's own) leaves nothing subscribed: the failed runtime records
// none of the bus's events.
func TestNewRefusedReleasesWhatItOpened(t *testing.T) {
	bus := events.NewBus()
	_, err := runtime.New(context.Background(), runtime.WithConfig(parseConfig(t, t.TempDir(), modelLine+singleConfig)), runtime.WithMemoryStore(),
		runtime.WithModel(&recorder{}), runtime.WithEvents(bus), runtime.WithTape(cassette.NewRecorder(io.Discard)),
		runtime.WithChannel(runtime.ChannelAPI, runtime.ChannelFunc(func(context.Context, runtime.Report) error { return nil })))
	checkErr(t, err, `runtime: channel "api" is the runtime's own; name yours otherwise`)
	if bus.Active() {
		t.Error("the refused runtime's tape is still subscribed to the bus")
	}
}

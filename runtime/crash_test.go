package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// These tests cut a runtime off at a chosen instant, as kill -9 would: a
// dyingStore writes nothing from the moment it dies, so what is stored is
// what a process killed then would have left. A second runtime then opens
// the same store, as the next process would. (cmd/ganglion's kill tests do
// the same with real processes and SIGKILL.)

var errDied = errors.New("the process died here (test)")

// dyingStore passes everything to the store under it until die, and from
// then on writes nothing.
type dyingStore struct {
	store.Store
	dead atomic.Bool
	// dieAfter, if set, is asked after each commit whether the process
	// dies right after it.
	dieAfter func(b store.Batch) bool
}

func (d *dyingStore) die() { d.dead.Store(true) }

func (d *dyingStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if d.dead.Load() {
		return errDied
	}
	err := d.Store.Commit(ctx, agent, key, b)
	if err == nil && d.dieAfter != nil && d.dieAfter(b) {
		d.die()
	}
	return err
}

func (d *dyingStore) PutPending(ctx context.Context, r store.PendingRecord) error {
	if d.dead.Load() {
		return errDied
	}
	return d.Store.PutPending(ctx, r)
}

func (d *dyingStore) CommitTasks(ctx context.Context, put []store.TaskRecord, del []string) error {
	if d.dead.Load() {
		return errDied
	}
	return d.Store.CommitTasks(ctx, put, del)
}

func (d *dyingStore) SetState(ctx context.Context, agent, key, ext string, v []byte) error {
	if d.dead.Load() {
		return errDied
	}
	return d.Store.SetState(ctx, agent, key, ext, v)
}

func (d *dyingStore) Close() error { return nil } // the next process keeps the store

// effectTool is a tool with a side effect it counts. The first call blocks
// until release, so that a test can kill the runtime while it runs.
type effectTool struct {
	runs    atomic.Int32
	started chan struct{}
	release chan struct{}
	keys    sync.Map // idempotency key → calls
}

func newEffectTool() *effectTool {
	return &effectTool{started: make(chan struct{}, 1), release: make(chan struct{})}
}

func (e *effectTool) tool() pipeline.Tool {
	return pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "effect", Description: "does something that must not happen twice", Category: pipeline.CategoryOther},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			n := e.runs.Add(1)
			v, _ := e.keys.LoadOrStore(c.IdempotencyKey(), new(atomic.Int32))
			v.(*atomic.Int32).Add(1)
			if n == 1 {
				e.started <- struct{}{}
				<-e.release
			}
			return &pipeline.ToolResult{Content: "effect done"}, nil
		},
	}
}

func (e *effectTool) awaitStart(t *testing.T) {
	t.Helper()
	select {
	case <-e.started:
	case <-time.After(askTimeout):
		t.Fatal("the tool never started")
	}
}

// killDuringTool runs send on rt in the background, waits for the effect
// tool to start, kills the store, lets the tool finish (its results are
// then written nowhere) and closes rt. It returns send's error.
func killDuringTool(t *testing.T, rt *runtime.Runtime, ds *dyingStore, e *effectTool, send func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- send() }()
	e.awaitStart(t)
	ds.die()
	close(e.release)
	var err error
	select {
	case err = <-done:
	case <-time.After(askTimeout):
		t.Fatal("the turn did not end after the kill")
	}
	rt.Close()
	return err
}

func newCrashRuntime(t *testing.T, cfg, script string, st store.Store, opts ...runtime.Option) (*runtime.Runtime, *recorder) {
	t.Helper()
	dir := t.TempDir()
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{p: sc}
	all := append([]runtime.Option{runtime.WithConfig(parseConfig(t, dir, modelLine+cfg)), runtime.WithStore(st), runtime.WithModel(rec)}, opts...)
	rt, err := runtime.New(context.Background(), all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, rec
}

const crashToolConfig = `
agents:
  - name: a
    tools: [effect]
`

const crashToolScript = `
agents:
  a:
    turns:
      - steps:
          - text: "Working."
            tool_calls: [{name: effect, id: c1}]
          - text: "done"
    fallback:
      steps: [{text: "Noted: {{ .LastMessage }}"}]
`

var interruptedText = regexp.MustCompile(`^interrupted: the process stopped while tool "effect" ran \(call c1\); it may or may not have taken effect\. Check its effect before you run it again\.$`)

// TestCrashDuringToolCall (D1): the process dies while a tool runs. The
// next process gives the call an "interrupted" result when the instance
// loads, says so with a turn.interrupted event, never runs the call again,
// and the next turn's model sees a history in which every call has its
// result.
func TestCrashDuringToolCall(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	rt, _ := newCrashRuntime(t, crashToolConfig, crashToolScript, ds, runtime.WithTool(e.tool()))
	err := killDuringTool(t, rt, ds, e, func() error {
		_, err := rt.Send(ctx, "a", "k", runtime.UserMessage("do it"))
		return err
	})
	if !errors.Is(err, errDied) {
		t.Fatalf("the killed turn's error = %v", err)
	}

	// What the killed process left: the call, without its result.
	_, recs, _, _ := mem.LoadInstance(ctx, "a", "k")
	if len(recs) != 2 || len(recs[1].Message.ToolCalls) != 1 {
		t.Fatalf("stored before the restart: %d records", len(recs))
	}

	bus := events.NewBus()
	var interrupted []events.Event
	var mu sync.Mutex
	bus.Subscribe(events.TurnInterrupted, func(ev events.Event) { mu.Lock(); interrupted = append(interrupted, ev); mu.Unlock() })
	e2 := &effectTool{started: make(chan struct{}, 1), release: make(chan struct{})}
	close(e2.release)
	rt2, rec := newCrashRuntime(t, crashToolConfig, crashToolScript, mem, runtime.WithTool(e2.tool()), runtime.WithEvents(bus))
	res, err := rt2.Send(ctx, "a", "k", runtime.UserMessage("status?"))
	if err != nil || res.FinishReason != pipeline.FinishText {
		t.Fatalf("Send after the restart = %+v, %v", res, err)
	}
	msgs := mustHistory(t, rt2, "a", "k")
	got := describeAll(msgs)
	if len(msgs) != 5 || got[0] != "user: do it" || got[1] != "assistant: Working. +call(c1 effect {})" ||
		!strings.HasPrefix(got[2], "tool!(c1 effect): interrupted:") || got[3] != "user: status?" || !strings.HasPrefix(got[4], "assistant: Noted:") {
		t.Fatalf("history after the restart:\n%s", strings.Join(got, "\n"))
	}
	if r := msgs[2]; !interruptedText.MatchString(r.Content) || r.Metadata[runtime.MetaInterrupted] != true || r.Metadata["turn_id"] != "turn-1" || r.Source.Type != pipeline.SourceRuntime {
		t.Errorf("the interrupted result = %+v", r)
	}
	if n := e2.runs.Load(); n != 0 {
		t.Errorf("the interrupted call ran %d more time(s) after the restart", n)
	}
	// The model's first request after the restart holds the call's result.
	if reqs := rec.requests(); len(reqs) != 1 || len(reqs[0].Messages) != 4 || reqs[0].Messages[2].ToolCallID != "c1" || reqs[0].TurnID != "turn-2" {
		t.Errorf("requests after the restart: %s", strings.Join(rec.calls(), "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(interrupted) != 1 || interrupted[0].TurnID != "turn-1" || interrupted[0].Agent != "a" || interrupted[0].Instance != "k" ||
		fmt.Sprint(interrupted[0].Data.(events.TurnInterruptedData).Calls) != "[effect (c1)]" {
		t.Errorf("turn.interrupted events = %+v", interrupted)
	}
	// Loading again finds nothing more to close.
	mustClose(t, rt2)
	rt3, _ := newCrashRuntime(t, crashToolConfig, crashToolScript, mem, runtime.WithTool(e2.tool()))
	if _, err := rt3.Send(ctx, "a", "k", runtime.UserMessage("again")); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(describeAll(mustHistory(t, rt3, "a", "k")), "\n"), "interrupted:"); n != 1 {
		t.Errorf("%d interrupted results after a second restart, want 1", n)
	}
}

// TestCrashDuringParallelToolCalls: of a step's parallel calls, every one
// without a result gets its own interrupted result, in call order.
func TestCrashDuringParallelToolCalls(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	const script = `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: effect, id: p1}, {name: effect, id: p2}, {name: effect, id: p3}]
          - text: "done"
      - steps: [{text: "ok"}]
`
	rt, _ := newCrashRuntime(t, crashToolConfig, script, ds, runtime.WithTool(e.tool()))
	killDuringTool(t, rt, ds, e, func() error {
		_, err := rt.Send(ctx, "a", "k", runtime.UserMessage("do it"))
		return err
	})
	rt2, _ := newCrashRuntime(t, crashToolConfig, script, mem, runtime.WithTool(e.tool()))
	if _, err := rt2.Send(ctx, "a", "k", runtime.UserMessage("next")); err != nil {
		t.Fatal(err)
	}
	got := describeAll(mustHistory(t, rt2, "a", "k"))
	var ids []string
	for _, l := range got {
		if strings.HasPrefix(l, "tool!(") && strings.Contains(l, "interrupted:") {
			ids = append(ids, l[len("tool!("):strings.Index(l, " ")])
		}
	}
	if strings.Join(ids, ",") != "p1,p2,p3" || len(got) != 7 {
		t.Errorf("history:\n%s", strings.Join(got, "\n"))
	}
}

const crashDelegConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: worker
    tools: [effect]
`

// crashLead delegates the effect to worker, and answers the report.
const crashLead = `
agents:
  lead:
    turns:
      - steps:
          - tool_calls: [{name: call_agent, id: d1, args: {agent_id: worker, message: "do the effect"}}]
          - text: "delegated"
      - steps: [{text: "All done: {{ .Input }}"}]
`

const crashDelegScript = crashLead + `  worker:
    fallback:
      steps:
        - text: "On it."
          tool_calls: [{name: effect, id: w1}]
        - text: "worker finished after {{ .LastMessage }}"
`

// TestCrashDelegatedChildContinues (D4): the process dies while a
// delegated child's tool runs. After the restart the child's turn goes on
// from the next step, under its own turn ID, with the interrupted result:
// its request is not stored twice, the tool does not run again, and the
// chain reaches its answer.
func TestCrashDelegatedChildContinues(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	rt, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, ds, runtime.WithTool(e.tool()))
	res, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("please delegate"))
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	killDuringTool(t, rt, ds, e, func() error { return nil })

	bus, answered := answeredEvents()
	e2 := newEffectTool()
	close(e2.release)
	rt2, rec := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem, runtime.WithTool(e2.tool()), runtime.WithEvents(bus))
	ev := awaitEvent(t, answered, "the chain's answer after the restart")
	waitNoTasks(t, rt2)
	if n := e2.runs.Load(); n != 0 {
		t.Errorf("the interrupted tool ran %d more time(s)", n)
	}
	worker := mustHistory(t, rt2, "worker", "k")
	got := describeAll(worker)
	if len(worker) != 4 || got[0] != "user: do the effect" || got[1] != "assistant: On it. +call(w1 effect {})" ||
		!strings.HasPrefix(got[2], "tool!(w1 effect): interrupted:") || !strings.HasPrefix(got[3], "assistant: worker finished after interrupted:") {
		t.Fatalf("worker history:\n%s", strings.Join(got, "\n"))
	}
	// The continued turn is the same turn, from step 2.
	var steps []string
	for _, r := range rec.requests() {
		if r.Agent == "worker" {
			steps = append(steps, fmt.Sprintf("%s/%d/%d", r.TurnID, r.Turn, r.Step))
		}
	}
	if strings.Join(steps, " ") != "turn-1/1/2" {
		t.Errorf("worker model calls after the restart: %v, want turn-1/1/2", steps)
	}
	if d := evData(ev); !strings.Contains(fmt.Sprint(d["response"]), "worker finished after interrupted:") {
		t.Errorf("task.answered = %+v", ev)
	}
}

// TestIdempotencyKey: each call has a stable key, the same when the call
// is resumed later, different for another call even with the same provider
// ID, and execute_command gets it in GANGLION_IDEMPOTENCY_KEY.
func TestIdempotencyKey(t *testing.T) {
	key := pipeline.IdempotencyKey("a", "k", "msg-1", "c1")
	if !regexp.MustCompile(`^gk-[0-9a-f]{32}$`).MatchString(key) {
		t.Fatalf("key = %q", key)
	}
	for _, other := range []string{
		pipeline.IdempotencyKey("a", "k", "msg-3", "c1"),
		pipeline.IdempotencyKey("a", "k2", "msg-1", "c1"),
		pipeline.IdempotencyKey("b", "k", "msg-1", "c1"),
		pipeline.IdempotencyKey("a", "k", "msg-1", "c2"),
		pipeline.IdempotencyKey("a", "k\x00msg-1", "", "c1"),
	} {
		if other == key {
			t.Errorf("two calls share key %q", key)
		}
	}
	if again := pipeline.IdempotencyKey("a", "k", "msg-1", "c1"); again != key {
		t.Errorf("the key changed: %q then %q", key, again)
	}

	h := newHarness(t, `
workspace: ws
agents:
  - name: a
    tools: [execute_command]
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: execute_command, id: same, args: {command: 'echo "$GANGLION_IDEMPOTENCY_KEY"'}}]
          - text: "one"
      - steps:
          - tool_calls: [{name: execute_command, id: same, args: {command: 'echo "$GANGLION_IDEMPOTENCY_KEY"'}}]
          - text: "two"
`)
	h.mustSend("a", "k", "first")
	h.mustSend("a", "k", "second")
	msgs := mustHistory(t, h.rt, "a", "k")
	var keys []string
	for i, m := range msgs {
		if m.Role != pipeline.RoleTool {
			continue
		}
		want := pipeline.IdempotencyKey("a", "k", msgs[i-1].ID, "same")
		if got := strings.TrimSpace(m.Content); got != want {
			t.Errorf("command saw %q, want %q", got, want)
		}
		keys = append(keys, want)
	}
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Errorf("keys = %v: two calls with one provider ID need two keys", keys)
	}
}

const crashQuestionConfig = `
agents:
  - name: a
    extensions: [{name: protocol}]
`

const crashQuestionScript = `
agents:
  a:
    turns:
      - steps:
          - text: "Let me ask.\n[USER_QUESTION]\ncategory: business\nquestion: Which plan?\noptions: [Free, Pro]\nrequired: true\n[/USER_QUESTION]"
      - steps: [{text: "You chose {{ .Input }}"}]
`

// TestCrashRightAfterQuestion (D2): the process dies right after the
// commit that stores the model's question. That commit holds the pending
// item too, so the next process finds the instance paused on it, and the
// answer resumes the turn.
func TestCrashRightAfterQuestion(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	var commits []string
	ds := &dyingStore{Store: mem, dieAfter: func(b store.Batch) bool {
		question := false
		for _, r := range b.Put {
			question = question || strings.Contains(r.Message.Content, "[USER_QUESTION]")
		}
		commits = append(commits, fmt.Sprintf("%d messages, %d pending items, question %v", len(b.Put), len(b.Pending), question))
		return question
	}}
	rt, _ := newCrashRuntime(t, crashQuestionConfig, crashQuestionScript, ds)
	rt.Send(ctx, "a", "k", runtime.UserMessage("sign me up"))
	rt.Close()
	if strings.Join(commits, "; ") != "2 messages, 1 pending items, question true" {
		t.Errorf("commits = %q: the question and its item must be one commit", commits)
	}

	rt2, _ := newCrashRuntime(t, crashQuestionConfig, crashQuestionScript, mem)
	items, err := rt2.Pending(ctx, ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 1 || items[0].Kind != "question" {
		t.Fatalf("pending after the restart = %+v, %v", items, err)
	}
	if _, err := rt2.Send(ctx, "a", "k", runtime.UserMessage("hello?")); !errors.Is(err, runtime.ErrPaused) {
		t.Fatalf("Send to the instance = %v, want it paused", err)
	}
	res, err := rt2.Answer(ctx, items[0].ID, "pro")
	if err != nil || res == nil || res.Response.Content != `You chose Answer to your question "Which plan?": Pro` {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
}

// askEveryCallConfig is agent a with the effect tool and approval rules
// that ask a human for every call.
func askEveryCallConfig(t *testing.T) string {
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, rules, "default: ask\n")
	return `
agents:
  - name: a
    tools: [effect]
    extensions: [{name: approval, config: {rules: ` + rules + `}}]
`
}

// TestCrashDuringApprovedCall: the process dies while the resume turn runs
// a call a human approved. The call's placeholder result ("waiting for a
// human's approval") does not outlive the crash: the next load replaces it
// with an interrupted result, and the call does not run again.
func TestCrashDuringApprovedCall(t *testing.T) {
	ctx := context.Background()
	cfg := askEveryCallConfig(t)
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	rt, _ := newCrashRuntime(t, cfg, crashToolScript, ds, runtime.WithTool(e.tool()))
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("do it"))
	if err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	killDuringTool(t, rt, ds, e, func() error {
		_, err := rt.Answer(ctx, items[0].ID, "approve")
		return err
	})

	e2 := newEffectTool()
	close(e2.release)
	rt2, _ := newCrashRuntime(t, cfg, crashToolScript, mem, runtime.WithTool(e2.tool()))
	msgs := mustHistory(t, rt2, "a", "k")
	got := describeAll(msgs)
	var result *pipeline.Message
	for i := range msgs {
		if msgs[i].Role == pipeline.RoleTool {
			result = &msgs[i]
		}
	}
	want := fmt.Sprintf(`interrupted: the process stopped while the turn that resumed after pending item %s ran this call's outcome; if tool "effect" ran, it may or may not have taken effect. Check its effect before you run it again.`, items[0].ID)
	if result == nil || result.Content != want || !result.IsError || result.Metadata[runtime.MetaInterrupted] != true || result.Metadata[runtime.MetaAwaits] != nil {
		t.Fatalf("history after the restart:\n%s", strings.Join(got, "\n"))
	}
	if n := e2.runs.Load(); n != 0 {
		t.Errorf("the approved call ran %d more time(s)", n)
	}
	if it, err := rt2.PendingItem(ctx, items[0].ID); err != nil || it.ResumedBy == "" {
		t.Errorf("item after the restart = %+v, %v: want it marked resumed", it, err)
	}
	// The instance goes on.
	if _, err := rt2.Send(ctx, "a", "k", runtime.UserMessage("and now?")); err != nil {
		t.Fatal(err)
	}
}

// TestApprovedCallKeepsNoMark: without a crash, the outcome replaces the
// placeholder and carries no awaits mark.
func TestApprovedCallKeepsNoMark(t *testing.T) {
	ctx := context.Background()
	cfg := askEveryCallConfig(t)
	e := newEffectTool()
	e.runs.Store(1) // never blocks
	rt, _ := newCrashRuntime(t, cfg, crashToolScript, store.NewMemory(), runtime.WithTool(e.tool()))
	rt.Send(ctx, "a", "k", runtime.UserMessage("do it"))
	msgs := mustHistory(t, rt, "a", "k")
	if m := msgs[len(msgs)-1]; m.Role != pipeline.RoleTool || m.Metadata[runtime.MetaAwaits] == nil {
		t.Fatalf("the paused call's result = %+v", m)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if _, err := rt.Answer(ctx, items[0].ID, "approve"); err != nil {
		t.Fatal(err)
	}
	for _, m := range mustHistory(t, rt, "a", "k") {
		if m.Role == pipeline.RoleTool && (m.Content != "effect done" || m.Metadata[runtime.MetaAwaits] != nil) {
			t.Errorf("the approved call's result = %+v", m)
		}
	}
}

const crashAskConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: worker
    tools: [effect]
    extensions: [{name: protocol}]
`

// crashAskScript: the worker asks which way. ASK_TOOL is replaced by the
// tool calls of the step that asks (or nothing), RESUME_STEP by the first
// step of the resume turn, which then finishes.
const crashAskScript = crashLead + `  worker:
    turns:
      - match: "Answer to your question"
        steps:
          - RESUME_STEP
          - text: "worker finished"
    fallback:
      steps:
        - text: "[USER_QUESTION]\ncategory: choice\nquestion: Which way?\noptions: [Left, Right]\nrequired: true\n[/USER_QUESTION]"
          ASK_TOOL
`

// TestCrashDelegatedChildPausedMidStep: the child's step asks a question
// and runs a tool; the process dies while the tool runs, before the task
// is marked paused. After the restart the child waits for its answer (its
// request does not run again), and the answer sees the chain through.
func TestCrashDelegatedChildPausedMidStep(t *testing.T) {
	ctx := context.Background()
	script := strings.NewReplacer("RESUME_STEP", `text: "resumed"`, "ASK_TOOL", "tool_calls: [{name: effect, id: w1}]").Replace(crashAskScript)
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	rt, _ := newCrashRuntime(t, crashAskConfig, script, ds, runtime.WithTool(e.tool()))
	if _, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("please delegate")); err != nil {
		t.Fatal(err)
	}
	killDuringTool(t, rt, ds, e, func() error { return nil })

	bus, answered := answeredEvents()
	e2 := newEffectTool()
	close(e2.release)
	rt2, _ := newCrashRuntime(t, crashAskConfig, script, mem, runtime.WithTool(e2.tool()), runtime.WithEvents(bus))
	if err := rt2.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	items, err := rt2.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 1 || items[0].Agent != "worker" {
		t.Fatalf("pending after the restart = %+v, %v", items, err)
	}
	if _, err := rt2.Answer(ctx, items[0].ID, "left"); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	ev := awaitEvent(t, answered, "the chain's answer")
	waitNoTasks(t, rt2)
	worker := describeAll(mustHistory(t, rt2, "worker", "k"))
	if n := strings.Count(strings.Join(worker, "\n"), "user: do the effect"); n != 1 || e2.runs.Load() != 0 ||
		!strings.HasPrefix(worker[2], "tool!(w1 effect): interrupted:") || worker[len(worker)-1] != "assistant: resumed" {
		t.Errorf("worker history (%d requests, %d reruns):\n%s", n, e2.runs.Load(), strings.Join(worker, "\n"))
	}
	if d := evData(ev); !strings.Contains(fmt.Sprint(d["response"]), "## worker, task task_") || !strings.Contains(fmt.Sprint(d["response"]), "\nresumed\n") {
		t.Errorf("task.answered = %+v", ev)
	}
	if ts := mustTasks(t, rt2, "", ""); len(ts) != 0 {
		t.Errorf("tasks left: %+v", ts)
	}
}

// TestCrashDelegatedChildResumeTurn: the child's question was answered and
// its resume turn runs a tool when the process dies. After the restart the
// resume turn goes on from its next step, and the chain finishes.
func TestCrashDelegatedChildResumeTurn(t *testing.T) {
	ctx := context.Background()
	script := strings.NewReplacer("RESUME_STEP", "tool_calls: [{name: effect, id: r1}]", "\n          ASK_TOOL", "").Replace(crashAskScript)
	mem := store.NewMemory()
	ds := &dyingStore{Store: mem}
	e := newEffectTool()
	rt, _ := newCrashRuntime(t, crashAskConfig, script, ds, runtime.WithTool(e.tool()))
	if _, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("please delegate")); err != nil {
		t.Fatal(err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	killDuringTool(t, rt, ds, e, func() error {
		_, err := rt.Answer(ctx, items[0].ID, "right")
		return err
	})

	bus, answered := answeredEvents()
	e2 := newEffectTool()
	close(e2.release)
	rt2, rec := newCrashRuntime(t, crashAskConfig, script, mem, runtime.WithTool(e2.tool()), runtime.WithEvents(bus))
	ev := awaitEvent(t, answered, "the chain's answer after the restart")
	waitNoTasks(t, rt2)
	worker := describeAll(mustHistory(t, rt2, "worker", "k"))
	if e2.runs.Load() != 0 || strings.Count(strings.Join(worker, "\n"), "Answer to your question") != 1 ||
		!strings.HasPrefix(worker[len(worker)-2], "tool!(r1 effect): interrupted:") || worker[len(worker)-1] != "assistant: worker finished" {
		t.Errorf("worker history (%d reruns):\n%s", e2.runs.Load(), strings.Join(worker, "\n"))
	}
	var steps []string
	for _, r := range rec.requests() {
		if r.Agent == "worker" {
			steps = append(steps, fmt.Sprintf("%s/%d", r.TurnID, r.Step))
		}
	}
	if strings.Join(steps, " ") != "turn-2/2" {
		t.Errorf("worker model calls after the restart: %v, want turn-2/2", steps)
	}
	if d := evData(ev); !strings.Contains(fmt.Sprint(d["response"]), "worker finished") {
		t.Errorf("task.answered = %+v", ev)
	}
	if it, err := rt2.PendingItem(ctx, items[0].ID); err != nil || it.ResumedBy != "turn-2" {
		t.Errorf("item = %+v, %v: want it marked resumed by turn-2", it, err)
	}
}

// TestAnswerWaitsForItsChannel: a root task's answer is stored before it is
// delivered. With no channel of its name in the process, the task stays,
// answered; the next process that has the channel delivers it once and
// deletes the task.
func TestAnswerWaitsForItsChannel(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	e := newEffectTool()
	e.runs.Store(1) // never blocks
	rt, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem, runtime.WithTool(e.tool()))
	in := runtime.UserMessage("please delegate")
	in.Metadata = map[string]any{"channel": "outbox", "replyTo": "r-1"}
	if _, err := rt.Send(ctx, "lead", "k", in); err != nil {
		t.Fatal(err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	ts := mustTasks(t, rt, "", "")
	if len(ts) != 1 || ts[0].State != runtime.TaskAnswered || !strings.HasPrefix(ts[0].Answer, "All done:") || ts[0].AnsweredAt.IsZero() {
		t.Fatalf("tasks = %+v, want the root task answered", ts)
	}
	mustClose(t, rt)

	var got []runtime.Report
	var mu sync.Mutex
	outbox := runtime.ChannelFunc(func(_ context.Context, r runtime.Report) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		return nil
	})
	rt2, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem, runtime.WithTool(e.tool()), runtime.WithChannel("outbox", outbox))
	waitNoTasks(t, rt2)
	if err := rt2.Recover(ctx); err != nil { // a second recovery delivers nothing more
		t.Fatal(err)
	}
	if err := rt2.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].TaskID != ts[0].ID || got[0].ReplyTo != "r-1" || got[0].Request != "please delegate" || got[0].Response != ts[0].Answer {
		t.Errorf("delivered %+v", got)
	}
}

package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// TestContextWindowReduction: a model call the provider refuses as too
// long for its context window is retried after leaving out the oldest
// quarter of the history, at most three times; then the turn fails. Only
// context-window errors are handled so, from Stream or from the stream.
func TestContextWindowReduction(t *testing.T) {
	const prefix = `agent "a" instance "k" turn-6: model: test: context window exceeded (HTTP 400): prompt is too long`
	tests := []struct {
		name     string
		turn     int   // the turn whose calls fail
		fails    int   // how many of them
		err      error // how
		inStream bool
		wantErr  string
		// sizes is the number of messages of each call of the turn, and
		// reductions the before and after counts of each reduction.
		sizes      []int
		reductions [][2]int
		truncated  []int // the positions marked truncated
	}{
		{name: "always too long", turn: 6, fails: 99, err: ctxWindowErr,
			wantErr: prefix + " (still too long after 3 reductions to 75% of the history)",
			sizes:   []int{11, 9, 7, 6}, reductions: [][2]int{{11, 9}, {9, 7}, {7, 6}}, truncated: []int{1, 2, 3, 4, 5}},
		{name: "fits after two reductions", turn: 6, fails: 2, err: ctxWindowErr,
			sizes: []int{11, 9, 7}, reductions: [][2]int{{11, 9}, {9, 7}}, truncated: []int{1, 2, 3, 4}},
		{name: "error chunk in the stream", turn: 6, fails: 1, err: ctxWindowErr, inStream: true,
			sizes: []int{11, 9}, reductions: [][2]int{{11, 9}}, truncated: []int{1, 2}},
		{name: "wrapped", turn: 6, fails: 1, err: fmt.Errorf("gateway: %w", ctxWindowErr),
			sizes: []int{11, 9}, reductions: [][2]int{{11, 9}}, truncated: []int{1, 2}},
		{name: "other errors are not reduced", turn: 6, fails: 1, err: &model.Error{Kind: model.ErrorAuth, Provider: "test", Status: 401, Message: "bad key"},
			wantErr: `agent "a" instance "k" turn-6: model: test: authentication failed (HTTP 401): bad key`, sizes: []int{11}},
		{name: "nothing left to leave out", turn: 1, fails: 99, err: ctxWindowErr,
			wantErr: `agent "a" instance "k" turn-1: model: test: context window exceeded (HTTP 400): prompt is too long ` +
				`(nothing left to leave out: the model sees only messages kept on purpose, 1 of them)`, sizes: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &windowModel{inStream: tt.inStream, fail: func(_ context.Context, req *model.Request, n int) error {
				if req.Turn == tt.turn && n-(tt.turn-1) <= tt.fails {
					return tt.err
				}
				return nil
			}}
			h := newWindowHarness(t, "agents:\n  - name: a\n", "agents:\n  a:\n    fallback:\n      steps: [{text: \"Noted {{ .Input }}\"}]\n", w)
			log := watchEvents(h.rt.Events(), "context.*")
			sendFacts(h, 1, tt.turn-1)
			res, err := h.send(context.Background(), "a", "k", fact(tt.turn))
			checkErr(t, err, tt.wantErr)
			wantCW := tt.wantErr != "" && strings.Contains(tt.wantErr, "context window")
			if errors.Is(err, model.ErrContextWindow) != wantCW {
				t.Errorf("errors.Is(err, model.ErrContextWindow) = %v, want %v", !wantCW, wantCW)
			}
			if wantCW {
				var me *model.Error
				if !errors.As(err, &me) || me.Kind != model.ErrorContextWindow || me.Status != 400 {
					t.Errorf("errors.As(err, *model.Error) = %+v", me)
				}
			}
			if wantFinish := map[bool]pipeline.FinishReason{true: pipeline.FinishError, false: pipeline.FinishText}[tt.wantErr != ""]; res.FinishReason != wantFinish {
				t.Errorf("finish reason = %s, want %s", res.FinishReason, wantFinish)
			}
			turnID := fmt.Sprintf("turn-%d", tt.turn)
			calls := turnCalls(h.rec, "a", turnID)
			var sizes []int
			for _, c := range calls {
				sizes = append(sizes, len(c.Messages))
			}
			if !slices.Equal(sizes, tt.sizes) {
				t.Errorf("%s: %d calls of sizes %v, want %v", turnID, len(calls), sizes, tt.sizes)
			}
			if n := w.count("a"); n != tt.turn-1+len(tt.sizes) {
				t.Errorf("the model was called %d times, want %d", n, tt.turn-1+len(tt.sizes))
			}
			evs := log.get(events.ContextTruncated)
			var red [][2]int
			for _, ev := range evs {
				d := evData(ev)
				if d["reason"] != "context_window_exceeded" || d["keep"] != 0.75 || ev.TurnID != turnID || ev.Source != "runtime" || ev.Agent != "a" {
					t.Errorf("context.truncated = %+v", ev)
				}
				red = append(red, [2]int{d["before"].(int), d["after"].(int)})
			}
			if !slices.Equal(red, tt.reductions) {
				t.Errorf("reductions %v, want %v", red, tt.reductions)
			}
			// The marks are stored, also by a turn that failed.
			full := mustHistory(t, h.rt, "a", "k")
			var truncated []int
			for i, m := range full {
				if b, _ := m.Metadata[pipeline.MetaTruncated].(bool); b {
					truncated = append(truncated, i)
				}
			}
			if !slices.Equal(truncated, tt.truncated) {
				t.Errorf("truncated positions %v, want %v\n%s", truncated, tt.truncated, strings.Join(markedAll(full), "\n"))
			}
			// Each call of the turn showed the effective history of the
			// moment: the last one, what is effective now (less the answer).
			eff := mustEffective(t, h.rt, "a", "k")
			last := calls[len(calls)-1].Messages
			if tt.wantErr == "" {
				eff = eff[:len(eff)-1]
			}
			checkLines(t, "last call vs effective history", ids(last), ids(eff))
		})
	}
}

// pinner is an extension that pins, before each step, the messages that
// start with "PIN ", through Conversation.Apply.
func pinner() extensions.Factory {
	return extension(func(api *extensions.API) error {
		api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			conv := s.Conversation()
			for i := range conv.Len() {
				m := conv.At(i)
				if !strings.HasPrefix(m.Content, "PIN ") || m.Metadata[pipeline.MetaPinned] == true {
					continue
				}
				md := maps.Clone(m.Metadata)
				if md == nil {
					md = map[string]any{}
				}
				md[pipeline.MetaPinned] = true
				m.Metadata = md
				if err := conv.Apply(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: m}); err != nil {
					return nil, err
				}
			}
			return s.Next(ctx)
		})
		return nil
	})
}

// TestCondenseKeepsPinned: a message an extension pinned is never
// summarised nor truncated: not by a summary, not by the truncation that
// replaces a failed one, not by the reductions after context-window
// errors.
func TestCondenseKeepsPinned(t *testing.T) {
	pin := func(n int) string { return "PIN " + fact(n) }
	tests := []struct {
		name    string
		ext     string // agent a's extensions
		pinAt   int    // the fact that is pinned
		turns   int
		fail    bool // the last turn's calls fail with a context-window error
		wantErr string
		want    []string // the last model call of the last turn
		events  []string // topic reason/summariser before→after
	}{
		{name: "summary", ext: `[{name: pinner}, {name: condense}]`, pinAt: 3, turns: 8, want: []string{
			"msg-0 user: " + fact(1),
			"msg-15 user: " + summaryHead + "The user listed facts 1 to 7.",
			"msg-4 user: " + pin(3),
			"msg-13 assistant: " + noted(7),
			"msg-14 user: " + fact(8),
		}, events: []string{"context.condensed self 15→5"}},
		{name: "truncation after a failed summary", ext: `[{name: pinner}, {name: condense, config: {summariser: model, model: {provider: summ}, keep: 0.2}}]`,
			pinAt: 3, turns: 8, want: []string{
				"msg-0 user: " + fact(1),
				"msg-4 user: " + pin(3),
				"msg-14 user: " + fact(8),
			}, events: []string{"context.truncated summary_failed 15→3"}},
		{name: "context-window reductions", ext: `[{name: pinner}]`, pinAt: 2, turns: 4, fail: true,
			wantErr: `agent "a" instance "k" turn-4: model: test: context window exceeded (HTTP 400): prompt is too long (still too long after 3 reductions to 75% of the history)`,
			want: []string{
				"msg-0 user: " + fact(1),
				"msg-2 user: " + pin(2),
				"msg-5 assistant: " + noted(3),
				"msg-6 user: " + fact(4),
			}, events: []string{"context.truncated context_window_exceeded 7→6", "context.truncated context_window_exceeded 6→5", "context.truncated context_window_exceeded 5→4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &windowModel{fail: func(_ context.Context, req *model.Request, _ int) error {
				if tt.fail && req.Turn == tt.turns {
					return ctxWindowErr
				}
				return nil
			}}
			fm := &fixedModel{err: errors.New("summariser down")}
			h := newWindowHarness(t, `
agents:
  - name: a
    `+condenseModel+`
    extensions: `+tt.ext+`
`, condenseScript, w, runtime.WithExtension("pinner", pinner()),
				runtime.WithProvider("summ", func(config.Model) (model.Provider, error) { return fm, nil }))
			log := watchEvents(h.rt.Events(), "context.*")
			for n := 1; n < tt.turns; n++ {
				text := fact(n)
				if n == tt.pinAt {
					text = pin(n)
				}
				h.mustSend("a", "k", text)
			}
			_, err := h.send(context.Background(), "a", "k", fact(tt.turns))
			checkErr(t, err, tt.wantErr)
			calls := turnCalls(h.rec, "a", fmt.Sprintf("turn-%d", tt.turns))
			checkLines(t, "last model call", ids(calls[len(calls)-1].Messages), tt.want)
			var got []string
			for _, ev := range log.all() {
				d := evData(ev)
				why := d["reason"]
				if why == nil {
					why = d["summariser"]
				}
				got = append(got, fmt.Sprintf("%s %v %v→%v", ev.Topic, why, d["before"], d["after"]))
			}
			checkLines(t, "events", got, tt.events)
			// The pin is stored, and the pinned message is effective.
			full := mustHistory(t, h.rt, "a", "k")
			if m := full[2*tt.pinAt-2]; m.Content != pin(tt.pinAt) || m.Metadata[pipeline.MetaPinned] != true {
				t.Errorf("stored: %s", marked(m))
			}
			if eff := ids(mustEffective(t, h.rt, "a", "k")); !slices.Contains(eff, fmt.Sprintf("msg-%d user: %s", 2*tt.pinAt-2, pin(tt.pinAt))) {
				t.Errorf("the pinned message is not effective:\n%s", strings.Join(eff, "\n"))
			}
		})
	}
}

// all returns every event logged.
func (l *eventLog) all() []events.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// TestCondenseKeepsOpenTaskMessages: while a delegation is open, its
// messages stay in the effective history however small the window: the
// child's task input during the task's turn, and the parent's call_agent
// call and result until the child reports.
func TestCondenseKeepsOpenTaskMessages(t *testing.T) {
	task := "write the parser: " + strings.Repeat("handle every token of the grammar, ", 25) + "and test it"
	agentModel := "model: {provider: scripted, script: script.yaml, context_window: 200, max_output_tokens: 20}"
	cond := "extensions: [{name: condense, config: {summariser: model, model: {provider: summ}, keep: 0.1}}]"
	fm := &fixedModel{err: errors.New("summariser down")}
	h, gm := newGatedHarness(t, `
agents:
  - name: lead
    `+agentModel+`
    tools: [call_agent]
    `+cond+`
  - name: coder
    `+agentModel+`
    tools: [echo]
    `+cond+`
`, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Done."}]
      - match: "status"
        steps: [{text: "Still waiting."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "`+task+`"}}]
        - text: "Delegated."
  coder:
    turns:
      - match: "write the parser"
        steps:
          - tool_calls: [{name: echo, id: e1, args: {text: parsing}}]
          - text: "parser written"
    fallback:
      steps: [{text: "ok {{ .Input }}"}]
`, runtime.WithTool(echoTool()), runtime.WithProvider("summ", func(config.Model) (model.Provider, error) { return fm, nil }))
	log := watchEvents(h.rt.Events(), "context.*")
	for _, c := range []string{"c1", "c2", "c3"} {
		h.mustSend("coder", "k", c)
	}
	g := gm.hold("coder", "write the parser")
	if res := h.mustSend("lead", "k", "build a parser"); res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("lead turn-1 = %+v", res)
	}
	g.waitStarted(t, "the coder's task")
	child := delegatedTo(t, mustHistory(t, h.rt, "lead", "k"), "d1")

	// The parent's next turn: its delegation stays, the rest goes.
	h.mustSend("lead", "k", "status?")
	calls := turnCalls(h.rec, "lead", "turn-2")
	checkLines(t, "lead turn-2 request", ids(calls[0].Messages), []string{
		"msg-0 user: build a parser",
		`msg-1 assistant: +call(d1 call_agent {"agent_id":"coder","message":"` + task + `"})`,
		"msg-2 tool(d1 call_agent): Delegated to coder as task " + child + ". It starts when your turn ends; its report comes back to you as a new message. " +
			"Until then, do not say you have its result.",
		"msg-4 user: status?",
	})

	g.open()
	waitNoTasks(t, h.rt)
	// The child's task turn: at its second step, the task input stays
	// though it is neither the first message nor the newest.
	var coderCalls []seenRequest
	for _, r := range h.rec.requests() {
		if r.Agent == "coder" && r.TurnID == "turn-4" {
			coderCalls = append(coderCalls, r)
		}
	}
	if len(coderCalls) != 2 {
		t.Fatalf("%d calls in the coder's task turn, want 2", len(coderCalls))
	}
	checkLines(t, "coder task step 1", ids(coderCalls[0].Messages), []string{"msg-0 user: c1", "msg-6 user: " + task})
	checkLines(t, "coder task step 2", ids(coderCalls[1].Messages), []string{
		"msg-0 user: c1",
		"msg-6 user: " + task,
		`msg-7 assistant: +call(e1 echo {"text":"parsing"})`,
		"msg-8 tool(e1 echo): echo: parsing",
	})
	coder := mustHistory(t, h.rt, "coder", "k")
	if coder[6].Metadata["taskId"] != child {
		t.Errorf("coder's task input metadata = %v, want taskId %s", coder[6].Metadata, child)
	}
	var got []string
	for _, ev := range log.all() {
		d := evData(ev)
		got = append(got, fmt.Sprintf("%s %s %s %v %v→%v", ev.Agent, ev.TurnID, ev.Topic, d["reason"], d["before"], d["after"]))
	}
	checkLines(t, "events", got, []string{
		// The child condenses before its first call, which the gate holds.
		"coder turn-4 context.truncated too_few_messages 7→2",
		"lead turn-2 context.truncated too_few_messages 5→4",
		// Once the child reported, its call may go: the report stays.
		"lead turn-3 context.truncated too_few_messages 6→2",
	})
	report := turnCalls(h.rec, "lead", "turn-3")
	if len(report) != 1 || len(report[0].Messages) != 2 || report[0].Messages[0].ID != "msg-0" || report[0].Messages[1].ID != "msg-6" ||
		!strings.Contains(report[0].Messages[1].Content, "[Delegation report]") {
		t.Errorf("lead's report turn requests:\n%s", strings.Join(h.rec.calls(), "\n"))
	}
	if n := len(fm.requests()); n != 0 {
		t.Errorf("the summariser was asked %d times, want 0 (too few messages each time)", n)
	}
}

// holder is an extension that opens a pending item of kind "hold" at the
// first step of a turn whose input starts with "HOLD", and lets the turn go
// on (the item's checkpoint is then the input, no longer the newest
// message at the next step).
func holder() extensions.Factory {
	return extension(func(api *extensions.API) error {
		err := api.Pending.Handle(extensions.PendingKind{Name: "hold",
			Resolve: func(_ context.Context, _ ledger.Item, act extensions.Action) (extensions.Outcome, error) {
				return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: act.Value, Message: "The hold was answered: " + act.Value}}, nil
			}})
		if err != nil {
			return err
		}
		api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			if s.Index() == 1 && strings.HasPrefix(s.Input().Text, "HOLD") {
				if _, err := api.Pending.Pause(ctx, s, ledger.Item{Kind: "hold", Request: json.RawMessage(`{"why":"test"}`), Required: true}, 0); err != nil {
					return nil, err
				}
			}
			return s.Next(ctx)
		})
		return nil
	})
}

// TestCondenseKeepsOpenPendingItem: the message an open pending item
// points to (its checkpoint) is never truncated while the item is open;
// once it is answered, it may go like any other.
func TestCondenseKeepsOpenPendingItem(t *testing.T) {
	hold := "HOLD " + strings.Repeat("wait for the operator to confirm the migration plan, ", 30)
	fm := &fixedModel{err: errors.New("summariser down")}
	h := newHarness(t, `
agents:
  - name: a
    `+condenseModel+`
    tools: [echo]
    extensions: [{name: holder}, {name: condense, config: {summariser: model, model: {provider: summ}, keep: 0.1}}]
`, `
agents:
  a:
    turns:
      - match: "^HOLD"
        steps:
          - tool_calls: [{name: echo, id: e1, args: {text: checking}}]
          - text: "Waiting for the operator."
    fallback:
      steps: [{text: "Noted {{ .Input }}"}]
`, runtime.WithExtension("holder", holder()), runtime.WithTool(echoTool()), runtime.WithoutExpiryTimer(),
		runtime.WithProvider("summ", func(config.Model) (model.Provider, error) { return fm, nil }))
	ctx := context.Background()
	sendFacts(h, 1, 3)
	h.mustSend("a", "k", hold)
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 1 || items[0].Checkpoint != "msg-6" {
		t.Fatalf("open items = %+v, %v; want one with checkpoint msg-6", items, err)
	}
	calls := turnCalls(h.rec, "a", "turn-4")
	if len(calls) != 2 {
		t.Fatalf("%d calls in turn-4, want 2", len(calls))
	}
	checkLines(t, "turn-4 step 1", ids(calls[0].Messages), []string{"msg-0 user: " + fact(1), "msg-6 user: " + hold})
	checkLines(t, "turn-4 step 2", ids(calls[1].Messages), []string{
		"msg-0 user: " + fact(1),
		"msg-6 user: " + hold,
		`msg-7 assistant: +call(e1 echo {"text":"checking"})`,
		"msg-8 tool(e1 echo): echo: checking",
	})
	if _, err := h.send(ctx, "a", "k", "more"); !errors.Is(err, runtime.ErrPaused) {
		t.Fatalf("Send while the item is open: %v, want ErrPaused", err)
	}

	// Answered, the item is closed: the resume turn may leave it out.
	res, err := h.rt.Answer(ctx, items[0].ID, "go")
	if err != nil || res == nil || res.TurnID != "turn-5" {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	calls = turnCalls(h.rec, "a", "turn-5")
	checkLines(t, "resume turn", ids(calls[0].Messages), []string{"msg-0 user: " + fact(1), "msg-10 user: The hold was answered: go"})
	if n := len(fm.requests()); n != 0 {
		t.Errorf("the summariser was asked %d times, want 0", n)
	}
}

// TestCondenseSurvivesRestart: summaries and truncation marks are stored:
// after a restart on the same badger data, the full history, the
// effective history and the next model call are as before it.
func TestCondenseSurvivesRestart(t *testing.T) {
	sc, err := scripted.Parse("script.yaml", []byte(condenseScript))
	if err != nil {
		t.Fatal(err)
	}
	var failed sync.Once
	w := &windowModel{p: sc, fail: func(_ context.Context, req *model.Request, _ int) error {
		var err error
		if req.Turn == 10 {
			failed.Do(func() { err = ctxWindowErr })
		}
		return err
	}}
	rec := &recorder{p: w}
	p := newPersistent(t, `
data: data
agents:
  - name: a
    `+condenseModel+`
    extensions: [{name: condense}]
`, condenseScript, runtime.WithModel(rec))
	send := func(rt *runtime.Runtime, n int) {
		t.Helper()
		if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(fact(n))); err != nil {
			t.Fatalf("fact %d: %v", n, err)
		}
	}
	lastCall := func(turnID string) []string {
		t.Helper()
		calls := turnCalls(rec, "a", turnID)
		if len(calls) == 0 {
			t.Fatalf("no call in %s", turnID)
		}
		return ids(calls[len(calls)-1].Messages)
	}

	rt := p.mustOpen()
	for n := 1; n <= 8; n++ {
		send(rt, n)
	}
	full, eff := markedAll(mustHistory(t, rt, "a", "k")), ids(mustEffective(t, rt, "a", "k"))
	if len(full) != 17 || len(eff) != 5 || !strings.HasPrefix(eff[1], "msg-15 user: "+summaryHead) {
		t.Fatalf("before the restart: full\n%s\neffective\n%s", strings.Join(full, "\n"), strings.Join(eff, "\n"))
	}
	mustClose(t, rt)

	rt = p.mustOpen()
	checkLines(t, "full history after a restart", markedAll(mustHistory(t, rt, "a", "k")), full)
	checkLines(t, "effective history after a restart", ids(mustEffective(t, rt, "a", "k")), eff)
	send(rt, 9)
	checkLines(t, "turn-9 request", lastCall("turn-9"), append(slices.Clone(eff), "msg-17 user: "+fact(9)))
	// A context-window error truncates the oldest: the summary, then the
	// 7th answer.
	send(rt, 10)
	want := []string{
		"msg-0 user: " + fact(1),
		"msg-14 user: " + fact(8),
		"msg-16 assistant: " + noted(8),
		"msg-17 user: " + fact(9),
		"msg-18 assistant: " + noted(9),
		"msg-19 user: " + fact(10),
	}
	checkLines(t, "turn-10 request after the reduction", lastCall("turn-10"), want)
	mustClose(t, rt)

	rt = p.mustOpen()
	full = markedAll(mustHistory(t, rt, "a", "k"))
	for i, wantMark := range map[int]string{13: " [truncated]", 15: " [truncated] [summary map[by:self messages:12]]", 1: " [condensed_by msg-15]"} {
		if !strings.HasSuffix(full[i], wantMark) {
			t.Errorf("after the second restart, message %d = %q, want the mark %q", i, full[i], wantMark)
		}
	}
	want = append(want, "msg-20 assistant: "+noted(10))
	checkLines(t, "effective history after the second restart", ids(mustEffective(t, rt, "a", "k")), want)
	send(rt, 11)
	checkLines(t, "turn-11 request", lastCall("turn-11"), append(slices.Clone(want), "msg-21 user: "+fact(11)))
}

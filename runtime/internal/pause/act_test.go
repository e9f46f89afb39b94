package pause

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/store"
)

// errGuard is why the fixture's agent "b" did not load.
var errGuard = errors.New(`agent unavailable: extension "guard": no such module`)

// TestActRefusals: an action Act refuses returns no result and the exact
// error, runs no turn, releases the instance's slot, and changes nothing
// stored; the kind sees only the actions the runtime does not refuse first.
func TestActRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"))
	f.agent("b", q.pendingKind("question"))
	f.unavailable["b"] = errGuard
	f.holdErr["a/elsewhere"] = fmt.Errorf(`pending item "p-7": %w`, seam.ErrMoved)
	f.create("p-1", "a", "k", "turn-1")
	f.create("p-2", "a", "k", "turn-1")
	f.create("p-3", "a", "k", "turn-1", expires(time.Minute))
	f.create("p-4", "b", "k", "turn-1")
	f.create("p-5", "a", "k", "turn-1", func(it *ledger.Item) { it.Kind = "approval" })
	f.create("p-6", "a", "k", "turn-1", func(it *ledger.Item) { it.Extension = "removed" })
	f.create("p-7", "a", "elsewhere", "turn-1")
	if _, err := f.ledger.Resolve(ctx, "p-2", ledger.Resolution{Status: ledger.Answered, Answer: "7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ledger.Resolve(ctx, "p-3", ledger.Resolution{Status: ledger.Timeout}); err != nil {
		t.Fatal(err)
	}
	paused := map[string]string{"p-1": "turn-1", "p-3": "turn-1", "p-5": "turn-1", "p-6": "turn-1"}
	f.inst("a", "k").Paused = maps.Clone(paused)

	tests := []struct {
		name     string
		id       string
		act      extensions.Action
		is       error
		want     string
		resolves int // the kind's Resolve calls the action makes
	}{
		{"unknown item", "p-404", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			ledger.ErrNotFound, `pending item "p-404": not found`, 0},
		{"answered item", "p-2", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			ledger.ErrResolved, `pending item "p-2": already resolved (it is answered)`, 0},
		{"expired item", "p-3", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			ledger.ErrResolved, `pending item "p-3": already resolved (it is timeout)`, 0},
		{"action its kind refuses", "p-1", extensions.Action{Kind: extensions.ActionSkip},
			extensions.ErrInvalidAction, `pending item "p-1": invalid action: a question is answered, not skipped`, 1},
		{"edit of an item that holds no call", "p-1", extensions.Action{Kind: extensions.ActionEdit, Value: `{}`},
			extensions.ErrInvalidAction, `pending item "p-1": invalid action: a question item cannot be edited: only an item that holds a paused tool call can`, 0},
		{"agent unavailable", "p-4", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			errGuard, `pending item "p-4": agent unavailable: extension "guard": no such module`, 0},
		{"kind nobody handles", "p-5", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			nil, `pending item "p-5": agent "a" has no extension "ext" handling approval items (is it still in the config?)`, 0},
		{"extension no longer in the config", "p-6", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			nil, `pending item "p-6": agent "a" has no extension "removed" handling question items (is it still in the config?)`, 0},
		{"instance owned by another process", "p-7", extensions.Action{Kind: extensions.ActionAnswer, Value: "x"},
			seam.ErrMoved, `pending item "p-7": instance owned by another process`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, resolves := f.all(), q.count()
			res, err := f.p.Act(ctx, tt.id, tt.act)
			if res != nil || errText(err) != tt.want {
				t.Fatalf("Act = %+v, %v\nwant nil, %s", res, err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Act's error %v does not match %v", err, tt.is)
			}
			if n := q.count() - resolves; n != tt.resolves {
				t.Errorf("the kind's Resolve ran %d times, want %d", n, tt.resolves)
			}
			sameItems(t, before, f.all())
			_, runs, unreleased := f.calls()
			if len(runs) != 0 || unreleased != 0 {
				t.Errorf("%d turns run, %d holds not released; want none", len(runs), unreleased)
			}
			if got := f.inst("a", "k").Paused; !reflect.DeepEqual(got, paused) {
				t.Errorf("the instance waits for %v, want %v", got, paused)
			}
		})
	}
	if holds, _, _ := f.calls(); len(holds) == 0 || holds[0] != (hold{`pending item "p-2"`, "a", "k"}) {
		t.Errorf("holds = %+v; want the first for the answered item p-2 (an unknown item is not held)", holds)
	}
}

// TestActResumesOnLastItem: an action on one of several open items of a
// paused turn records it and runs nothing; the action that closes the
// last one runs the resume turn once, with the items' messages, IDs,
// failures and traces, and marks the items resumed by it. Items of other
// instances and turns are not part of it.
func TestActResumesOnLastItem(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"), q.pendingKind("dependency"))
	trace := func(tr string) func(*ledger.Item) { return func(it *ledger.Item) { it.Trace = tr } }
	f.create("p-1", "a", "k", "turn-1", trace("tr-1"))
	f.create("p-2", "a", "k", "turn-1", trace("tr-1"), func(it *ledger.Item) { it.Kind = "dependency" })
	f.create("p-3", "a", "k", "turn-1", trace("tr-2"), func(it *ledger.Item) { it.Kind = "dependency" })
	f.create("p-4", "a", "other", "turn-1")
	f.create("p-5", "a", "k", "turn-0")
	in := f.inst("a", "k")
	in.Paused = map[string]string{"p-1": "turn-1", "p-2": "turn-1", "p-3": "turn-1", "p-5": "turn-0"}

	steps := []struct {
		id   string
		act  extensions.Action
		want ledger.Status
	}{
		{"p-1", extensions.Action{Kind: extensions.ActionAnswer, Value: "7"}, ledger.Answered},
		{"p-2", extensions.Action{Kind: extensions.ActionReject, Reason: "we do not use Stripe"}, ledger.Rejected},
	}
	for _, s := range steps {
		res, err := f.p.Act(ctx, s.id, s.act)
		if res != nil || err != nil {
			t.Fatalf("Act(%s) with open items left = %+v, %v; want nil, nil", s.id, res, err)
		}
		if it := f.get(s.id); it.Status != s.want || it.Open || it.ResumedBy != "" {
			t.Fatalf("%s = %s open=%v resumed by %q; want %s, closed, not resumed", s.id, it.Status, it.Open, it.ResumedBy, s.want)
		}
		if _, ok := in.Paused[s.id]; ok {
			t.Errorf("the instance still waits for %s", s.id)
		}
	}
	if _, runs, _ := f.calls(); len(runs) != 0 {
		t.Fatalf("a turn ran with an item open: %+v", runs)
	}

	res, err := f.p.Act(ctx, "p-3", extensions.Action{Kind: extensions.ActionProvide, Value: "sk-live-1"})
	if err != nil || res == nil || res.TurnID != "turn-10" {
		t.Fatalf("Act on the last item = %+v, %v; want the resume turn's result", res, err)
	}
	holds, runs, unreleased := f.calls()
	if len(runs) != 1 {
		t.Fatalf("turns run = %+v, want one", runs)
	}
	want := run{agent: "a", key: "k", links: []string{"tr-1", "tr-2"}, ev: pipeline.InputEvent{
		Kind: pipeline.InputResume, Text: "Answer: 7\n\nProvided p-3",
		Metadata: map[string]any{"resumes": "turn-1", "pending": []string{"p-1", "p-2", "p-3"}, "failed": "we do not use Stripe"},
	}}
	if !reflect.DeepEqual(runs[0], want) {
		t.Errorf("resume turn = %+v\nwant          %+v", runs[0], want)
	}
	for _, id := range []string{"p-1", "p-2", "p-3"} {
		if it := f.get(id); it.ResumedBy != "turn-10" {
			t.Errorf("%s resumed by %q, want turn-10", id, it.ResumedBy)
		}
	}
	for _, id := range []string{"p-4", "p-5"} {
		if it := f.get(id); !it.Open || it.ResumedBy != "" {
			t.Errorf("%s of another instance or turn = %+v, want untouched", id, it)
		}
	}
	if want := map[string]string{"p-5": "turn-0"}; !reflect.DeepEqual(in.Paused, want) {
		t.Errorf("the instance waits for %v, want %v", in.Paused, want)
	}
	if want := []secret{{"a", "k", "API_KEY", "sk-live-1"}}; !reflect.DeepEqual(f.secrets, want) {
		t.Errorf("secrets stored = %+v, want %+v", f.secrets, want)
	}
	if it := f.get("p-3"); it.Answer != "" || it.Message != "Provided p-3" {
		t.Errorf("the provided item keeps %q / %q; want no value stored in it", it.Answer, it.Message)
	}
	wantHolds := []hold{{`pending item "p-1"`, "a", "k"}, {`pending item "p-2"`, "a", "k"}, {`pending item "p-3"`, "a", "k"}}
	if !slices.Equal(holds, wantHolds) || unreleased != 0 {
		t.Errorf("holds = %+v (%d not released), want %+v, all released", holds, unreleased, wantHolds)
	}
}

// TestActSecretNotSealed: when the provided secret cannot be stored, the
// item stays open and no turn runs.
func TestActSecretNotSealed(t *testing.T) {
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("dependency"))
	f.create("p-1", "a", "k", "turn-1", func(it *ledger.Item) { it.Kind = "dependency" })
	f.secretErr = fmt.Errorf("store: put secret: %w", store.ErrUnavailable)
	before := f.all()
	res, err := f.p.Act(context.Background(), "p-1", extensions.Action{Kind: extensions.ActionProvide, Value: "sk-live-1"})
	if want := `pending item "p-1": store: put secret: store: unavailable`; res != nil || errText(err) != want || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Act = %+v, %v\nwant nil, %s", res, err, want)
	}
	sameItems(t, before, f.all())
	if _, runs, _ := f.calls(); len(runs) != 0 {
		t.Errorf("turns run: %+v", runs)
	}
}

// TestActResumeOutcomes: how the resume turn ended decides whether the
// items are marked resumed: not when the turn never began, when the
// runtime's stop cut it, or when the store did not save it (fenced, or
// unavailable: then the resume is tried again in the background). The
// answer itself is taken in every case.
func TestActResumeOutcomes(t *testing.T) {
	errFenced := fmt.Errorf("store: commit: nothing written: %w", store.ErrFenced)
	errLost := fmt.Errorf("store: commit: no answer: %w", store.ErrUnavailable)
	errFailed := fmt.Errorf(`agent "a" instance "k" turn-10: %w: required dependency X was rejected`, ErrTaskFailed)
	tests := []struct {
		name    string
		closing bool // the runtime stops
		res     pipeline.TurnResult
		err     error
		want    string // Act's error
		is      error
		marked  string // the turn that marks the item resumed
		retried bool
	}{
		{"turn ended", false, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishText}, nil, "<nil>", nil, "turn-10", false},
		{"turn failed the task", false, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishError}, errFailed,
			errFailed.Error(), ErrTaskFailed, "turn-10", false},
		{"turn never began", false, pipeline.TurnResult{FinishReason: pipeline.FinishError}, errGuard, errGuard.Error(), errGuard, "", false},
		{"caller gave up", false, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishAborted}, context.Canceled,
			"context canceled", context.Canceled, "turn-10", false},
		{"stop cut it", true, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishAborted}, errors.New("cut"),
			"pending item p-1: the answer was taken, but its resume turn turn-10 did not end: closed: the runtime stopped before the turn ended; the instance's next owner finishes it",
			nil, "", false},
		{"fenced", false, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishError}, errFenced,
			"pending item p-1: the answer was taken, but its resume turn turn-10 was not saved: store: commit: nothing written: store: fenced; the instance's new owner finishes it",
			store.ErrFenced, "", false},
		{"store unavailable", false, pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishError}, errLost,
			"pending item p-1: the answer was taken, but its resume turn turn-10 was not saved: store: commit: no answer: store: unavailable; it is tried again by itself",
			store.ErrUnavailable, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var q kind
			f.agent("a", q.pendingKind("question"))
			f.create("p-1", "a", "k", "turn-1")
			if tt.closing {
				f.gate.close()
			}
			f.onRun = func(*engine.Instance, pipeline.InputEvent) (*pipeline.TurnResult, error) {
				res := tt.res
				return &res, tt.err
			}
			res, err := f.p.Act(context.Background(), "p-1", extensions.Action{Kind: extensions.ActionAnswer, Value: "7"})
			if errText(err) != tt.want {
				t.Fatalf("Act's error = %v\nwant           %s", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Act's error does not match %v", tt.is)
			}
			if tt.closing && !errors.Is(err, f.cut) {
				t.Errorf("Act's error does not match the runtime's Cut")
			}
			if res == nil || !reflect.DeepEqual(*res, tt.res) {
				t.Errorf("Act's result = %+v, want the turn's %+v", res, tt.res)
			}
			if it := f.get("p-1"); it.Status != ledger.Answered || it.Open || it.ResumedBy != tt.marked {
				t.Errorf("item = %s open=%v resumed by %q; want answered, resumed by %q", it.Status, it.Open, it.ResumedBy, tt.marked)
			}
			_, retried := f.p.resuming.Load("a\x00k\x00turn-1")
			if retried != tt.retried {
				t.Errorf("resume tried again: %v, want %v", retried, tt.retried)
			}
		})
	}
}

// TestResumeTriedAgain: a resume the store did not save is tried again in
// the background, under the gate and the instance's slot, until it is;
// then the items are marked resumed by the turn that was saved.
func TestResumeTriedAgain(t *testing.T) {
	waits := engine.RetryWaits
	engine.RetryWaits = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"))
	f.create("p-1", "a", "k", "turn-1")
	f.onRun = func(_ *engine.Instance, ev pipeline.InputEvent) (*pipeline.TurnResult, error) {
		_, runs, _ := f.calls()
		if len(runs) < 3 {
			return &pipeline.TurnResult{TurnID: fmt.Sprintf("turn-%d", 9+len(runs)), FinishReason: pipeline.FinishError},
				fmt.Errorf("store: commit: %w", store.ErrUnavailable)
		}
		return &pipeline.TurnResult{TurnID: "turn-12", FinishReason: pipeline.FinishText}, nil
	}
	if _, err := f.p.Act(context.Background(), "p-1", extensions.Action{Kind: extensions.ActionAnswer, Value: "7"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Act = %v, want the store's outage", err)
	}
	waitFor(t, "the resume to be tried again and saved", func() bool { return f.get("p-1").ResumedBy == "turn-12" })
	// The loop read RetryWaits before its first Hold, which the calls
	// below follow.
	holds, runs, _ := f.calls()
	engine.RetryWaits = waits
	wantHolds := []hold{{`pending item "p-1"`, "a", "k"}, {"paused turn-1", "a", "k"}, {"paused turn-1", "a", "k"}}
	if !slices.Equal(holds, wantHolds) {
		t.Errorf("holds = %+v\nwant    %+v", holds, wantHolds)
	}
	if len(runs) != 3 || !reflect.DeepEqual(runs[1].ev, runs[0].ev) || !reflect.DeepEqual(runs[2].ev, runs[0].ev) {
		t.Errorf("turns run = %+v, want the same resume three times", runs)
	}
	waitFor(t, "the retry loop to end", func() bool {
		_, running := f.p.resuming.Load("a\x00k\x00turn-1")
		_, _, inside := f.gate.counts()
		_, _, unreleased := f.calls()
		return !running && inside == 0 && unreleased == 0
	})
	if entered, _, _ := f.gate.counts(); entered != 2 {
		t.Errorf("the retries entered the gate %d times, want 2", entered)
	}
}

// TestActEdit: an edit is checked against the paused call's tool before
// the kind sees it; only an edit that fits reaches the kind's Resolve.
func TestActEdit(t *testing.T) {
	f := newFixture(t)
	var q kind
	approval := q.pendingKind("approval")
	approval.Resume = func(context.Context, ledger.Item, extensions.ResumeCall) error { return nil }
	a := f.agent("a", approval, q.pendingKind("note"))
	a.Tools = []pipeline.Tool{{ToolSpec: pipeline.ToolSpec{Name: "count",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}}}
	in := f.inst("a", "k")
	in.History().Append(engine.Entry{Seq: 1, Msg: &pipeline.Message{ID: "m-1", Role: pipeline.RoleAssistant,
		Source: pipeline.Source{Type: pipeline.SourceModel}, ToolCalls: []pipeline.ToolCall{
			{ID: "call-1", Name: "count", Arguments: json.RawMessage(`{"n":1}`)},
			{ID: "call-2", Name: "delete", Arguments: json.RawMessage(`{}`)},
		}}})
	call := func(kind, id string) func(*ledger.Item) {
		return func(it *ledger.Item) { it.Kind, it.CallID = kind, id }
	}
	f.create("p-1", "a", "k", "turn-1", call("approval", "call-1"))
	f.create("p-2", "a", "k", "turn-1", call("approval", "call-9"))
	f.create("p-3", "a", "k", "turn-1", call("approval", "call-2"))
	f.create("p-4", "a", "k", "turn-1", call("note", "call-1"))

	tests := []struct {
		name, id, args string
		want           string // "" if accepted
		invalid        bool   // the refusal matches extensions.ErrInvalidAction
	}{
		{"args that do not fit", "p-1", `{"n":"two"}`,
			`pending item "p-1": invalid action: the edited arguments of the count call: arguments do not match the schema: /n: got string, want integer`, true},
		{"call not in the history", "p-2", `{"n":2}`, `pending item "p-2": the call call-9 is not in the history`, false},
		{"tool not the agent's", "p-3", `{}`, `pending item "p-3": invalid action: the call's tool "delete" is not one of agent "a"'s tools`, true},
		{"kind without Resume", "p-4", `{"n":2}`,
			`pending item "p-4": invalid action: a note item cannot be edited: only an item that holds a paused tool call can`, true},
		{"args that fit", "p-1", `{"n": 2}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, resolves := f.all(), q.count()
			_, err := f.p.Act(context.Background(), tt.id, extensions.Action{Kind: extensions.ActionEdit, Value: tt.args})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := q.resolved[len(q.resolved)-1]; q.count() != resolves+1 || got != (extensions.Action{Kind: extensions.ActionEdit, Value: tt.args}) {
					t.Errorf("Resolve saw %+v, want the edit as given", got)
				}
				return
			}
			if errText(err) != tt.want || errors.Is(err, extensions.ErrInvalidAction) != tt.invalid {
				t.Fatalf("Act = %v\nwant  %s (invalid action: %v)", err, tt.want, tt.invalid)
			}
			if q.count() != resolves {
				t.Error("the kind's Resolve saw a refused edit")
			}
			sameItems(t, before, f.all())
		})
	}
}

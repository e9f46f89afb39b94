package pause

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// expiring returns kind name whose timeouts end as expire says.
func expiring(name string, expire func(ledger.Item) extensions.Outcome) extensions.PendingKind {
	var q kind
	k := q.pendingKind(name)
	k.Expire = expire
	return k
}

// TestExpire: Expire expires the items whose deadline is not after now,
// as their kinds say (by default: status timeout, with a message for the
// model), and resumes their turns; it leaves alone the items not due, the
// items without a deadline, those of an agent that failed to load, and
// those of an instance another process owns. What fails to expire is its
// error, and the other items expire all the same.
func TestExpire(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"),
		expiring("optional", func(ledger.Item) extensions.Outcome {
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Skipped, Message: "took the default: 30"}}
		}),
		expiring("required", func(ledger.Item) extensions.Outcome {
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, KeepOpen: true, Reason: "a required question"}}
		}),
		expiring("secretive", func(ledger.Item) extensions.Outcome {
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Provided}, Secret: &extensions.Secret{Name: "K", Value: "v"}}
		}))
	f.agent("b", q.pendingKind("question"))
	f.unavailable["b"] = errGuard
	f.holdErr["a/elsewhere"] = fmt.Errorf(`pending item "p-7": %w`, seam.ErrMoved)
	of := func(k string) func(*ledger.Item) { return func(it *ledger.Item) { it.Kind = k } }
	f.create("p-1", "a", "k1", "turn-1", expires(time.Hour))
	f.create("p-2", "a", "k2", "turn-1", expires(30*time.Minute), of("optional"))
	f.create("p-3", "a", "k3", "turn-1", expires(time.Minute), of("required"))
	f.create("p-4", "a", "k4", "turn-1", expires(time.Hour+time.Second))
	f.create("p-5", "a", "k5", "turn-1")
	f.create("p-6", "b", "k6", "turn-1", expires(time.Minute))
	f.create("p-7", "a", "elsewhere", "turn-1", expires(time.Minute))
	f.create("p-8", "a", "k8", "turn-1", expires(time.Minute), of("secretive"))
	f.create("p-9", "gone", "k9", "turn-1", expires(time.Minute))

	before := f.all()
	if got, err := f.p.Expire(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Expire before any deadline = %+v, %v; want nothing", got, err)
	}
	sameItems(t, before, f.all())
	if holds, _, _ := f.calls(); len(holds) != 0 {
		t.Fatalf("Expire before any deadline held %+v", holds)
	}

	f.clock.advance(time.Hour) // p-1's deadline is now: it is due
	got, err := f.p.Expire(ctx)
	wantErr := `pending item "p-8": a timeout cannot provide a secret` + "\n" +
		`pending item "p-9" belongs to agent "gone", which the config does not define`
	if errText(err) != wantErr {
		t.Errorf("Expire's error = %v\nwant %s", err, wantErr)
	}
	type outcome struct {
		id             string
		status         ledger.Status
		open           bool
		reason, msg    string
		resumedBy      string
		returnedExpire bool
	}
	want := []outcome{
		{"p-1", ledger.Timeout, false, "no answer by 2026-03-01T13:00:00Z", "Nobody answered pending item p-1 (question) in time.", "turn-10", true},
		{"p-2", ledger.Skipped, false, "no answer by 2026-03-01T12:30:00Z", "took the default: 30", "turn-11", true},
		{"p-3", ledger.Timeout, true, "a required question", "", "", true},
		{"p-4", ledger.Pending, true, "", "", "", false},
		{"p-5", ledger.Pending, true, "", "", "", false},
		{"p-6", ledger.Pending, true, "", "", "", false},
		{"p-7", ledger.Pending, true, "", "", "", false},
		{"p-8", ledger.Pending, true, "", "", "", false},
		{"p-9", ledger.Pending, true, "", "", "", false},
	}
	var wantGot []string
	for _, w := range want {
		it := f.get(w.id)
		if g := (outcome{it.ID, it.Status, it.Open, it.Reason, it.Message, it.ResumedBy, w.returnedExpire}); g != w {
			t.Errorf("after Expire %+v\nwant             %+v", g, w)
		}
		if w.returnedExpire {
			wantGot = append(wantGot, w.id)
		}
	}
	var gotIDs []string
	for i, it := range got {
		gotIDs = append(gotIDs, it.ID)
		if stored := f.get(it.ID); !reflect.DeepEqual(it, stored) {
			t.Errorf("Expire returned %d as %+v, stored as %+v", i, it, stored)
		}
	}
	if !slices.Equal(gotIDs, wantGot) {
		t.Errorf("Expire returned %v, want %v", gotIDs, wantGot)
	}
	_, runs, unreleased := f.calls()
	var texts []string
	for _, r := range runs {
		texts = append(texts, r.key+": "+r.ev.Text)
	}
	wantTexts := []string{"k1: Nobody answered pending item p-1 (question) in time.", "k2: took the default: 30"}
	if !slices.Equal(texts, wantTexts) || unreleased != 0 {
		t.Errorf("resume turns %q (%d holds not released), want %q", texts, unreleased, wantTexts)
	}

	// Expired once: a second Expire finds only what failed before.
	_, err = f.p.Expire(ctx)
	if errText(err) != wantErr {
		t.Errorf("second Expire's error = %v, want the same failures", err)
	}
	if _, again, _ := f.calls(); len(again) != len(runs) {
		t.Errorf("second Expire ran %d more turns", len(again)-len(runs))
	}
}

// TestExpireResumesTurnOnLastItem: an item that expires with another of
// its turn still open resumes nothing; once the last expires, its turn
// resumes with both, and a required item's failure fails it: the resume's
// error is Expire's, and the item that made it is not returned.
func TestExpireResumesTurnOnLastItem(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"), expiring("dependency", func(it ledger.Item) extensions.Outcome {
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, Fails: true,
			Reason: "required dependency X_KEY was not provided in time"}}
	}))
	f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
	f.create("p-2", "a", "k", "turn-1", expires(time.Hour), func(it *ledger.Item) { it.Kind = "dependency" })
	failed := fmt.Errorf(`agent "a" instance "k" turn-10: %w: required dependency X_KEY was not provided in time`, ErrTaskFailed)
	f.onRun = func(*engine.Instance, pipeline.InputEvent) (*pipeline.TurnResult, error) {
		return &pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishError}, failed
	}

	f.clock.advance(time.Minute)
	got, err := f.p.Expire(ctx)
	if err != nil || len(got) != 1 || got[0].ID != "p-1" || got[0].ResumedBy != "" {
		t.Fatalf("Expire with p-2 open = %+v, %v; want p-1 expired, not resumed", got, err)
	}
	if _, runs, _ := f.calls(); len(runs) != 0 {
		t.Fatalf("a turn ran with p-2 open: %+v", runs)
	}
	if next, ok := f.p.NextDeadline(); !ok || !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("NextDeadline = %v, %v; want p-2's", next, ok)
	}

	f.clock.advance(time.Hour)
	got, err = f.p.Expire(ctx)
	if len(got) != 0 || !errors.Is(err, ErrTaskFailed) || errText(err) != failed.Error() {
		t.Fatalf("Expire of the last item = %+v, %v; want nothing returned, the resume's error", got, err)
	}
	_, runs, _ := f.calls()
	want := pipeline.InputEvent{Kind: pipeline.InputResume, Text: "Nobody answered pending item p-1 (question) in time.",
		Metadata: map[string]any{"resumes": "turn-1", "pending": []string{"p-1", "p-2"}, "failed": "required dependency X_KEY was not provided in time"}}
	if len(runs) != 1 || !reflect.DeepEqual(runs[0].ev, want) {
		t.Fatalf("resume turns = %+v\nwant one of %+v", runs, want)
	}
	for _, id := range []string{"p-1", "p-2"} {
		if it := f.get(id); it.ResumedBy != "turn-10" {
			t.Errorf("%s resumed by %q, want turn-10", id, it.ResumedBy)
		}
	}
	if _, ok := f.p.NextDeadline(); ok {
		t.Error("NextDeadline found a deadline with every item expired")
	}
}

// TestTimedOutItemStaysAnswerable: an item its kind keeps open when it
// times out is expired once, has no deadline left, and a human's action
// still resumes its turn.
func TestTimedOutItemStaysAnswerable(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.agent("a", expiring("question", func(ledger.Item) extensions.Outcome {
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, KeepOpen: true}}
	}))
	f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
	f.clock.advance(time.Minute)
	if got, err := f.p.Expire(ctx); err != nil || len(got) != 1 || got[0].Status != ledger.Timeout || !got[0].Open {
		t.Fatalf("Expire = %+v, %v; want p-1 timed out and open", got, err)
	}
	if next, ok := f.p.NextDeadline(); ok {
		t.Errorf("NextDeadline = %v; want none (p-1 timed out already)", next)
	}
	if got, err := f.p.Expire(ctx); err != nil || len(got) != 0 {
		t.Errorf("second Expire = %+v, %v; want nothing", got, err)
	}
	res, err := f.p.Act(ctx, "p-1", extensions.Action{Kind: extensions.ActionAnswer, Value: "41"})
	if err != nil || res == nil || res.TurnID != "turn-10" {
		t.Fatalf("Act after the timeout = %+v, %v; want the resume turn", res, err)
	}
	if it := f.get("p-1"); it.Status != ledger.Answered || it.Open || it.ResumedBy != "turn-10" {
		t.Errorf("item = %+v, want answered and resumed", it)
	}
}

// TestNextDeadline: the earliest deadline of a pending item, leaving out
// resolved items and those of an agent that failed to load.
func TestNextDeadline(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(f *fixture)
		want  time.Duration // after t0; 0: none
	}{
		{"no items", func(*fixture) {}, 0},
		{"no deadline", func(f *fixture) { f.create("p-1", "a", "k", "turn-1") }, 0},
		{"earliest of several", func(f *fixture) {
			f.create("p-1", "a", "k", "turn-1", expires(3*time.Hour))
			f.create("p-2", "a", "k2", "turn-1", expires(2*time.Hour))
			f.create("p-3", "a", "k3", "turn-1")
			f.create("p-4", "a", "k4", "turn-1", expires(4*time.Hour))
		}, 2 * time.Hour},
		{"past deadline", func(f *fixture) {
			f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
			f.clock.advance(time.Hour)
		}, time.Minute},
		{"resolved item left out", func(f *fixture) {
			f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
			f.create("p-2", "a", "k", "turn-1", expires(time.Hour))
			if _, err := f.ledger.Resolve(ctx, "p-1", ledger.Resolution{Status: ledger.Answered}); err != nil {
				t.Fatal(err)
			}
		}, time.Hour},
		{"unavailable agent's item left out", func(f *fixture) {
			f.create("p-1", "b", "k", "turn-1", expires(time.Minute))
			f.create("p-2", "a", "k", "turn-1", expires(time.Hour))
		}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.unavailable["b"] = errGuard
			tt.setup(f)
			next, ok := f.p.NextDeadline()
			if ok != (tt.want != 0) || (ok && !next.Equal(t0.Add(tt.want))) {
				t.Errorf("NextDeadline = %v, %v; want t0+%v", next, ok, tt.want)
			}
		})
	}
}

// TestRecover: Recover resumes, once, the turns whose items were all
// resolved but not resumed, and expires the items whose deadline passed;
// a second Recover runs nothing. Turns with an item open, turns resumed
// already, an unavailable agent's turns and another process's instances
// are left alone.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"))
	f.agent("b", q.pendingKind("question"))
	f.unavailable["b"] = errGuard
	f.holdErr["a/elsewhere"] = fmt.Errorf("paused turn-5: %w", seam.ErrMoved)
	resolve := func(id string) {
		t.Helper()
		if _, err := f.ledger.Resolve(ctx, id, ledger.Resolution{Status: ledger.Answered, Message: "Answer to " + id}); err != nil {
			t.Fatal(err)
		}
	}
	f.create("p-1", "a", "k", "turn-1")
	f.create("p-2", "a", "k", "turn-1")
	f.create("p-3", "a", "k2", "turn-2")
	f.create("p-4", "a", "k2", "turn-2")
	f.create("p-5", "a", "k3", "turn-3")
	f.create("p-6", "b", "k", "turn-4")
	f.create("p-7", "a", "elsewhere", "turn-5")
	f.create("p-8", "a", "k8", "turn-6", expires(time.Minute))
	for _, id := range []string{"p-1", "p-2", "p-3", "p-5", "p-6", "p-7"} {
		resolve(id)
	}
	if err := f.ledger.MarkResumed(ctx, []string{"p-5"}, "turn-9"); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(time.Hour)

	if err := f.p.Recover(ctx); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	holds, runs, unreleased := f.calls()
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprintf("%s/%s %v %v", r.agent, r.key, r.ev.Metadata["resumes"], r.ev.Metadata["pending"]))
	}
	want := []string{"a/k turn-1 [p-1 p-2]", "a/k8 turn-6 [p-8]"}
	if !slices.Equal(got, want) || unreleased != 0 {
		t.Fatalf("Recover ran %q (%d holds not released), want %q", got, unreleased, want)
	}
	for id, by := range map[string]string{"p-1": "turn-10", "p-2": "turn-10", "p-3": "", "p-4": "", "p-5": "turn-9", "p-6": "", "p-7": "", "p-8": "turn-11"} {
		if it := f.get(id); it.ResumedBy != by {
			t.Errorf("%s resumed by %q, want %q", id, it.ResumedBy, by)
		}
	}
	wantHolds := []hold{{"paused turn-1", "a", "k"}, {"paused turn-2", "a", "k2"}, {"paused turn-5", "a", "elsewhere"}, {`pending item "p-8"`, "a", "k8"}}
	if !slices.Equal(holds, wantHolds) {
		t.Errorf("holds = %+v\nwant    %+v", holds, wantHolds)
	}

	if err := f.p.Recover(ctx); err != nil {
		t.Fatalf("second Recover: %v", err)
	}
	if _, again, _ := f.calls(); len(again) != len(runs) {
		t.Errorf("second Recover ran %d more turns: %+v", len(again)-len(runs), again[len(runs):])
	}
}

// TestRecoverResumeThatBegan: a resume turn whose input is stored already
// began before the process stopped: Recover marks the items resumed by it
// if it ended, and runs it again, to go on where it stopped, if not.
func TestRecoverResumeThatBegan(t *testing.T) {
	input := &pipeline.Message{ID: "m-2", Role: pipeline.RoleUser, Source: pipeline.Source{Type: pipeline.SourceRuntime},
		Content: "Answer: 7", Metadata: map[string]any{"resumes": "turn-1", "turn_id": "turn-7", "pending": []string{"p-1"}}}
	answer := &pipeline.Message{ID: "m-3", Role: pipeline.RoleAssistant, Source: pipeline.Source{Type: pipeline.SourceModel}, Content: "Got 7"}
	tests := []struct {
		name    string
		history []*pipeline.Message
		runs    int
		by      string
	}{
		{"it ended", []*pipeline.Message{input, answer}, 0, "turn-7"},
		{"it was cut", []*pipeline.Message{input}, 1, "turn-10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var q kind
			f.agent("a", q.pendingKind("question"))
			f.create("p-1", "a", "k", "turn-1")
			if _, err := f.ledger.Resolve(context.Background(), "p-1", ledger.Resolution{Status: ledger.Answered, Message: "Answer: 7"}); err != nil {
				t.Fatal(err)
			}
			in := f.inst("a", "k")
			for i, m := range tt.history {
				in.History().Append(engine.Entry{Msg: m, Seq: uint64(i + 1)})
			}
			for range 2 {
				if err := f.p.Recover(context.Background()); err != nil {
					t.Fatalf("Recover: %v", err)
				}
			}
			if _, runs, _ := f.calls(); len(runs) != tt.runs {
				t.Errorf("turns run = %+v, want %d", runs, tt.runs)
			}
			if it := f.get("p-1"); it.ResumedBy != tt.by {
				t.Errorf("p-1 resumed by %q, want %q", it.ResumedBy, tt.by)
			}
		})
	}
}

// TestRecoverErrors: Recover returns what failed, but for the tasks a
// required item's timeout failed, which it logs at info; every failure is
// logged.
func TestRecoverErrors(t *testing.T) {
	failed := fmt.Errorf(`agent "a" instance "k" turn-10: %w: required dependency X was not provided in time`, ErrTaskFailed)
	tests := []struct {
		name   string
		setup  func(f *fixture)
		want   string
		logged string
		level  string
		runErr error
	}{
		{"a task the timeout failed", func(f *fixture) {
			f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
		}, "<nil>", "a required pending item timed out; its task failed", "INFO", failed},
		{"an expiry that failed", func(f *fixture) {
			f.create("p-1", "gone", "k", "turn-1", expires(time.Minute))
		}, `pending item "p-1" belongs to agent "gone", which the config does not define`, "expiry of pending items failed", "ERROR", nil},
		{"a resume that failed", func(f *fixture) {
			f.create("p-1", "gone", "k", "turn-1")
			if _, err := f.ledger.Resolve(context.Background(), "p-1", ledger.Resolution{Status: ledger.Answered}); err != nil {
				t.Fatal(err)
			}
		}, `paused turn-1 belongs to agent "gone", which the config does not define`, "resume of answered pending items failed", "ERROR", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var q kind
			f.agent("a", q.pendingKind("question"))
			f.onRun = func(*engine.Instance, pipeline.InputEvent) (*pipeline.TurnResult, error) {
				return &pipeline.TurnResult{TurnID: "turn-10", FinishReason: pipeline.FinishError}, tt.runErr
			}
			tt.setup(f)
			f.clock.advance(time.Hour)
			err := f.p.Recover(context.Background())
			if errText(err) != tt.want {
				t.Errorf("Recover = %v\nwant      %s", err, tt.want)
			}
			logs := f.logs.String()
			if !strings.Contains(logs, "level="+tt.level+` msg="`+tt.logged+`"`) {
				t.Errorf("logs = %s\nwant a line at %s: %s", logs, tt.level, tt.logged)
			}
		})
	}
}

// TestExpiryLoop: the loop expires what is due when it starts and what a
// wake finds due; Stop ends it, and after it nothing expires.
func TestExpiryLoop(t *testing.T) {
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"))
	f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
	f.clock.advance(time.Minute)
	f.p.Start()
	status := func(id string) func() bool {
		return func() bool { return f.get(id).Status == ledger.Timeout }
	}
	waitFor(t, "the loop to expire p-1", status("p-1"))

	// A deadline added, then passed, and the loop woken.
	f.create("p-2", "a", "k2", "turn-1", expires(time.Hour))
	f.clock.advance(time.Hour)
	f.p.wake()
	waitFor(t, "the loop to expire p-2", status("p-2"))

	f.p.Stop()
	f.p.Stop() // again: it returns
	waitFor(t, "the loop's goroutine to end", func() bool { return !loopRuns() })
	entered, _, inside := f.gate.counts()
	if entered == 0 || inside != 0 {
		t.Errorf("the loop entered the gate %d times, %d still inside; want it entered and left", entered, inside)
	}
	f.create("p-3", "a", "k3", "turn-1", expires(time.Minute))
	f.p.wake() // nothing receives it; it must not block
	time.Sleep(50 * time.Millisecond)
	if it := f.get("p-3"); it.Status != ledger.Pending {
		t.Errorf("after Stop, p-3 = %s; want pending", it.Status)
	}
	if n, _, _ := f.gate.counts(); n != entered {
		t.Errorf("after Stop the gate was entered %d more times", n-entered)
	}
}

// TestStopWithoutStart: Stop of a loop that never started returns.
func TestStopWithoutStart(t *testing.T) {
	f := newFixture(t)
	f.p.Stop()
	if loopRuns() {
		t.Error("an expiry loop runs")
	}
}

// TestExpiryLoopGateClosed: while the runtime stops (its gate refuses),
// the loop expires nothing, and Stop still ends it.
func TestExpiryLoopGateClosed(t *testing.T) {
	f := newFixture(t)
	var q kind
	f.agent("a", q.pendingKind("question"))
	f.create("p-1", "a", "k", "turn-1", expires(time.Minute))
	f.clock.advance(time.Minute)
	f.gate.close()
	f.p.Start()
	waitFor(t, "the loop to ask the gate", func() bool { _, refused, _ := f.gate.counts(); return refused > 0 })
	f.p.Stop()
	f.p.Stop() // again: it returns
	waitFor(t, "the loop's goroutine to end", func() bool { return !loopRuns() })
	if it := f.get("p-1"); it.Status != ledger.Pending {
		t.Errorf("p-1 = %s with the gate closed; want pending", it.Status)
	}
	if holds, _, _ := f.calls(); len(holds) != 0 {
		t.Errorf("holds with the gate closed: %+v", holds)
	}
}

// TestExpiryLoopWaitsOnWhatStaysDue: a deadline that stays passed after
// the loop fired (its item failed to expire, or the runtime stops and its
// gate refuses) is tried again only after a wait, not at once over and
// over. With nothing changing, the loop tries at most twice in a window
// five times shorter than its first wait (a second).
func TestExpiryLoopWaitsOnWhatStaysDue(t *testing.T) {
	tests := []struct {
		name  string
		agent string
		shut  bool
	}{
		{"item of an agent the config no longer defines", "gone", false},
		{"runtime stopping", "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var q kind
			f.agent("a", q.pendingKind("question"))
			f.create("p-1", tt.agent, "k", "turn-1", expires(time.Minute))
			f.clock.advance(time.Minute)
			if tt.shut {
				f.gate.close()
			}
			tries := func() int {
				holds, _, _ := f.calls()
				_, refused, _ := f.gate.counts()
				return len(holds) + refused
			}
			f.p.Start()
			waitFor(t, "the loop to fire", func() bool { return tries() > 0 })
			time.Sleep(200 * time.Millisecond)
			n := tries()
			f.p.Stop()
			if n > 2 {
				t.Errorf("the loop tried the passed deadline %d times in 200ms with nothing changed; want at most 2", n)
			}
			if lines := strings.Count(f.logs.String(), "expiry of pending items failed"); lines > 2 {
				t.Errorf("the loop logged its failure %d times in 200ms", lines)
			}
			if it := f.get("p-1"); it.Status != ledger.Pending {
				t.Errorf("p-1 = %s, want pending", it.Status)
			}
		})
	}
}

// TestLoopWait: the expiry loop sleeps until the next deadline; while a
// passed deadline stays (its item cannot expire here), it tries again
// after its backoff, but never later than a deadline still to come.
func TestLoopWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		next   time.Time
		passed bool
		again  time.Duration
		want   time.Duration
		wantOK bool
	}{
		{"nothing to wait for", time.Time{}, false, 0, 0, false},
		{"a deadline to come", now.Add(time.Hour), false, 0, time.Hour, true},
		{"a passed deadline, first fire", time.Time{}, true, 0, 0, true},
		{"a passed deadline, backing off", time.Time{}, true, 4 * time.Second, 4 * time.Second, true},
		{"a deadline to come sooner than the backoff", now.Add(300 * time.Millisecond), true, time.Minute, 300 * time.Millisecond, true},
		{"the backoff sooner than the deadline to come", now.Add(time.Hour), true, time.Minute, time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := loopWait(now, tt.next, tt.passed, tt.again)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("loopWait = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

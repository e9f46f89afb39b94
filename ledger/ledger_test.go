package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// clock is a settable clock.
type clock struct{ at atomic.Int64 }

func (c *clock) now() time.Time          { return base.Add(time.Duration(c.at.Load())) }
func (c *clock) advance(d time.Duration) { c.at.Add(int64(d)) }

type fixture struct {
	l      *ledger.Ledger
	clock  *clock
	mu     sync.Mutex
	topics []string
}

func newFixture(t *testing.T, st store.Store) *fixture {
	f := &fixture{clock: &clock{}}
	bus := events.NewBus()
	bus.Subscribe("pending.*", func(ev events.Event) {
		f.mu.Lock()
		defer f.mu.Unlock()
		it := ev.Data.(ledger.Item)
		f.topics = append(f.topics, ev.Topic+":"+it.ID)
	})
	f.l = ledger.New(st, ledger.WithEvents(bus), ledger.WithClock(f.clock.now))
	return f
}

func question(id string) ledger.Item {
	return ledger.Item{ID: id, Kind: "question", Agent: "a", Instance: "k", TurnID: "turn-1", Step: 2,
		Request: json.RawMessage(`{"question":"Which plan?","options":["free","pro"]}`), Required: true}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	it, err := f.l.Create(ctx, ledger.Item{Kind: "question", Agent: "a", Instance: "k", TurnID: "turn-1", Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(it.ID) != len("p-")+12 || it.Status != ledger.Pending || !it.CreatedAt.Equal(base) || string(it.Request) != "null" {
		t.Errorf("created = %+v", it)
	}
	f.clock.advance(time.Minute)
	done, err := f.l.Resolve(ctx, it.ID, ledger.Resolution{Status: ledger.Answered, Answer: "pro", Agent: "a", Instance: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != ledger.Answered || done.Answer != "pro" || !done.UpdatedAt.Equal(base.Add(time.Minute)) || !done.CreatedAt.Equal(base) {
		t.Errorf("resolved = %+v", done)
	}
	got, err := f.l.Get(ctx, it.ID)
	if err != nil || got.Status != ledger.Answered {
		t.Errorf("Get = %+v, %v", got, err)
	}
	want := []string{"pending.created:" + it.ID, "pending.answered:" + it.ID}
	if len(f.topics) != 2 || f.topics[0] != want[0] || f.topics[1] != want[1] {
		t.Errorf("events = %q, want %q", f.topics, want)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	if _, err := f.l.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Create(ctx, question("q2")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Resolve(ctx, "q2", ledger.Resolution{Status: ledger.Skipped}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		do      func() error
		want    string
		wantErr error
	}{
		{"create without kind", func() error { _, err := f.l.Create(ctx, ledger.Item{Agent: "a", Instance: "k"}); return err },
			"ledger: an item needs a kind", nil},
		{"create with bad request", func() error {
			_, err := f.l.Create(ctx, ledger.Item{Kind: "question", Agent: "a", Instance: "k", Request: json.RawMessage(`{`)})
			return err
		}, "ledger: question item: request is not valid JSON", nil},
		{"create an existing ID", func() error { _, err := f.l.Create(ctx, question("q1")); return err },
			`ledger: pending item "q1" already exists`, nil},
		{"create with a bad ID", func() error { _, err := f.l.Create(ctx, question("q 3")); return err },
			`ledger: store: invalid pending item ID "q 3": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`, nil},
		{"create for a bad instance", func() error {
			it := question("q4")
			it.Instance = ""
			_, err := f.l.Create(ctx, it)
			return err
		}, `ledger: store: invalid instance key "": empty (want 1 to 256 bytes of UTF-8 without NUL)`, nil},
		{"get unknown", func() error { _, err := f.l.Get(ctx, "nope"); return err },
			`pending item "nope": not found`, ledger.ErrNotFound},
		{"resolve unknown", func() error {
			_, err := f.l.Resolve(ctx, "nope", ledger.Resolution{Status: ledger.Answered})
			return err
		},
			`pending item "nope": not found`, ledger.ErrNotFound},
		{"resolve twice", func() error { _, err := f.l.Resolve(ctx, "q2", ledger.Resolution{Status: ledger.Answered}); return err },
			`pending item "q2": already resolved (it is skipped)`, ledger.ErrResolved},
		{"resolve for another instance", func() error {
			_, err := f.l.Resolve(ctx, "q1", ledger.Resolution{Status: ledger.Answered, Agent: "a", Instance: "other"})
			return err
		}, `pending item "q1" belongs to another instance: it is agent "a" instance "k"'s, not agent "a" instance "other"'s`, ledger.ErrWrongInstance},
		{"resolve as pending", func() error { _, err := f.l.Resolve(ctx, "q1", ledger.Resolution{Status: ledger.Pending}); return err },
			`pending item "q1": cannot resolve as "pending" (want answered, provided, rejected, skipped, timeout or failed)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantErr)
			}
		})
	}
	// Nothing changed.
	if it, _ := f.l.Get(ctx, "q1"); it.Status != ledger.Pending {
		t.Errorf("q1 = %+v after refused resolutions", it)
	}
	if it, _ := f.l.Get(ctx, "q2"); it.Status != ledger.Skipped || it.Answer != "" {
		t.Errorf("q2 = %+v after a refused second answer", it)
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	for _, it := range []ledger.Item{
		{ID: "a1", Kind: "question", Agent: "a", Instance: "k"},
		{ID: "a2", Kind: "dependency", Agent: "a", Instance: "j"},
		{ID: "b1", Kind: "approval", Agent: "b", Instance: "k"},
	} {
		if _, err := f.l.Create(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.l.Resolve(ctx, "a2", ledger.Resolution{Status: ledger.Provided}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		f    ledger.Filter
		want string
	}{
		{ledger.Filter{}, "a1 a2 b1"},
		{ledger.Filter{Agent: "a"}, "a1 a2"},
		{ledger.Filter{Agent: "a", Instance: "k"}, "a1"},
		{ledger.Filter{Status: ledger.Pending}, "a1 b1"},
		{ledger.Filter{Status: ledger.Provided}, "a2"},
		{ledger.Filter{Agent: "c"}, ""},
	}
	for _, tt := range tests {
		items, err := f.l.List(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i, it := range items {
			if i > 0 {
				got += " "
			}
			got += it.ID
		}
		if got != tt.want {
			t.Errorf("List(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestResolveOnce: many answers at once, one wins.
func TestResolveOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	if _, err := f.l.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	var wins, refused atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err := f.l.Resolve(ctx, "q1", ledger.Resolution{Status: ledger.Answered, Answer: "free"})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ledger.ErrResolved):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || refused.Load() != 31 {
		t.Errorf("wins = %d, refused = %d", wins.Load(), refused.Load())
	}
}

// TestSurvivesRestart: items live in the store; one that expired while the
// process was down is handled when the next one starts.
func TestSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := badger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, st)
	it := question("q1")
	it.ExpiresAt = base.Add(time.Hour)
	created, err := f.l.Create(ctx, it)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = badger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f = newFixture(t, st)
	got, err := f.l.Get(ctx, "q1")
	if err != nil || got.Status != ledger.Pending || string(got.Request) != string(created.Request) || !got.CreatedAt.Equal(created.CreatedAt) || got.Step != 2 {
		t.Fatalf("after restart = %+v, %v", got, err)
	}
	if !got.ExpiresAt.Equal(it.ExpiresAt) {
		t.Fatalf("deadline after restart = %v, want %v", got.ExpiresAt, it.ExpiresAt)
	}
	expired, err := f.l.Resolve(ctx, "q1", ledger.Resolution{Status: ledger.Timeout})
	if err != nil || expired.Status != ledger.Timeout || expired.Open {
		t.Fatalf("timeout after restart = %+v, %v", expired, err)
	}
}

// TestExpireKeepOpen: a timeout that keeps the item open (a required
// question) records the timeout, leaves the items due for expiry (status
// pending), and can still be answered, once.
func TestExpireKeepOpen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	it := question("q")
	it.ExpiresAt = base.Add(time.Hour)
	if _, err := f.l.Create(ctx, it); err != nil {
		t.Fatal(err)
	}
	got, err := f.l.Resolve(ctx, "q", ledger.Resolution{Status: ledger.Timeout, KeepOpen: true, Message: "still waiting"})
	if err != nil || got.Status != ledger.Timeout || !got.Open || got.Message != "still waiting" {
		t.Fatalf("timeout = %+v, %v", got, err)
	}
	if due, err := f.l.List(ctx, ledger.Filter{Status: ledger.Pending}); err != nil || len(due) != 0 {
		t.Fatalf("List(pending) after the timeout = %+v, %v; want nothing to expire again", due, err)
	}
	open, err := f.l.List(ctx, ledger.Filter{Open: true, TurnID: "turn-1"})
	if err != nil || len(open) != 1 || open[0].ID != "q" {
		t.Fatalf("List(open) = %+v, %v", open, err)
	}
	done, err := f.l.Resolve(ctx, "q", ledger.Resolution{Status: ledger.Answered, Answer: "pro"})
	if err != nil || done.Open || done.Status != ledger.Answered || done.Message != "" {
		t.Fatalf("Resolve after timeout = %+v, %v", done, err)
	}
	_, err = f.l.Resolve(ctx, "q", ledger.Resolution{Status: ledger.Answered, Answer: "free"})
	if !errors.Is(err, ledger.ErrResolved) || err.Error() != `pending item "q": already resolved (it is answered)` {
		t.Fatalf("second Resolve: %v", err)
	}
	if open, _ := f.l.List(ctx, ledger.Filter{Open: true}); len(open) != 0 {
		t.Fatalf("open after answer = %+v", open)
	}
}

func TestMarkResumed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, store.NewMemory())
	for _, id := range []string{"a", "b"} {
		if _, err := f.l.Create(ctx, question(id)); err != nil {
			t.Fatal(err)
		}
	}
	err := f.l.MarkResumed(ctx, []string{"a"}, "turn-2")
	if err == nil || err.Error() != `pending item "a" is still open; it cannot be marked resumed` {
		t.Fatalf("MarkResumed(open) = %v", err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := f.l.Resolve(ctx, id, ledger.Resolution{Status: ledger.Answered, Answer: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.l.MarkResumed(ctx, []string{"a"}, "turn-2"); err != nil {
		t.Fatal(err)
	}
	// A mark is kept: "a" stays turn-2's.
	if err := f.l.MarkResumed(ctx, []string{"a", "b"}, "turn-3"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"a": "turn-2", "b": "turn-3"} {
		if it, _ := f.l.Get(ctx, id); it.ResumedBy != want {
			t.Errorf("%s resumed by %q, want %q", id, it.ResumedBy, want)
		}
	}
	if err := f.l.MarkResumed(ctx, []string{"zzz"}, "turn-4"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("MarkResumed(unknown) = %v", err)
	}
}

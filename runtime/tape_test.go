package runtime_test

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// session is what a run of the pause session leaves to compare.
type session struct {
	results []*pipeline.TurnResult
	history []pipeline.Message
	items   []ledger.Item
	events  []events.Event
}

// runPauses runs pauseScript on a runtime with opts: a turn that asks a
// question and a key, the question skipped, the key provided, and the
// resumed turn's command. It returns everything the session made, times
// and IDs included. All of it runs on the caller's goroutine, so the
// clock is read in one order: a replay gives every reading back where it
// was taken. (Turns that run at once, a delegation's, may get each
// other's readings in a replay: the transcripts of package cassettetest
// leave times out for that.)
func runPauses(t *testing.T, opts ...runtime.Option) session {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	rt, err := runtime.New(ctx, append([]runtime.Option{runtime.WithConfig(parseConfig(t, dir, modelLine+pauseConfig)),
		runtime.WithMemoryStore(), runtime.WithoutExpiryTimer()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	rt.Events().Subscribe("*", func(ev events.Event) {
		if d, ok := ev.Data.(events.ToolFinishedData); ok {
			d.DurationMS = 0 // measured, not read from the clock
			ev.Data = d
		}
		evs = append(evs, ev)
	})
	var s session
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("start"))
	if err != nil {
		t.Fatal(err)
	}
	s.results = append(s.results, res)
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 2 {
		t.Fatalf("pending = %v, %v", items, err)
	}
	slices.SortFunc(items, func(a, b ledger.Item) int { return strings.Compare(b.Kind, a.Kind) }) // question, then dependency
	if res, err = rt.Skip(ctx, items[0].ID); err != nil {
		t.Fatal(err)
	}
	s.results = append(s.results, res)
	if res, err = rt.Provide(ctx, items[1].ID, "sk-bitforbit-0123456789"); err != nil {
		t.Fatal(err)
	}
	s.results = append(s.results, res)
	s.history = mustHistory(t, rt, "a", "k")
	if s.items, err = rt.Pending(ctx, ledger.Filter{}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	s.events = evs
	return s
}

// TestReplayIsBitForBit: a session replayed from its cassette, without
// the model or the command it ran, makes the same IDs, times, results,
// history, pending items and events.
func TestReplayIsBitForBit(t *testing.T) {
	sc, err := scripted.Parse("script.yaml", []byte(pauseScript))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	live := runPauses(t, runtime.WithModel(sc), runtime.WithTape(rec))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	player := cassette.NewPlayer(c)
	replay := runPauses(t, runtime.WithTape(player))
	if d := player.Divergences(); len(d) > 0 {
		t.Fatalf("divergences: %v", d)
	}
	for _, x := range []struct {
		what       string
		live, back any
	}{
		{"results", live.results, replay.results},
		{"history", live.history, replay.history},
		{"pending items", live.items, replay.items},
	} {
		if !reflect.DeepEqual(x.live, x.back) {
			t.Errorf("%s:\n%+v\nreplayed:\n%+v", x.what, x.live, x.back)
		}
	}
	if len(live.events) != len(replay.events) {
		t.Fatalf("%d events, replayed %d", len(live.events), len(replay.events))
	}
	for i := range live.events {
		if !reflect.DeepEqual(live.events[i], replay.events[i]) {
			t.Errorf("event %d:\n%+v\nreplayed:\n%+v", i, live.events[i], replay.events[i])
		}
	}
}

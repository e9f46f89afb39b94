package runtime_test

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// session is what a run of the delegation session leaves to compare.
type session struct {
	report    *runtime.Report
	histories map[string][]pipeline.Message
	tasks     []runtime.Task
	events    []events.Event
}

// runDelegation asks lead to delegate to coder on a runtime with opts,
// and returns everything the session made, times and IDs included.
func runDelegation(t *testing.T, opts ...runtime.Option) session {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	rt, err := runtime.New(ctx, append([]runtime.Option{runtime.WithConfig(parseConfig(t, dir, modelLine+singleConfig)),
		runtime.WithMemoryStore(), runtime.WithoutExpiryTimer()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		evs []events.Event
	)
	rt.Events().Subscribe("*", func(ev events.Event) {
		if d, ok := ev.Data.(events.ToolFinishedData); ok {
			d.DurationMS = 0 // measured, not read from the clock
			ev.Data = d
		}
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	rep, err := rt.Ask(ctx, "lead", "s", "build a parser")
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	s := session{report: rep, histories: map[string][]pipeline.Message{}}
	for _, agent := range []string{"lead", "coder"} {
		s.histories[agent] = mustHistory(t, rt, agent, "s")
	}
	if s.tasks, err = rt.Tasks(ctx, "lead", "s"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	s.events = evs
	mu.Unlock()
	return s
}

// TestReplayIsBitForBit: a session replayed from its cassette, without
// the model, makes the same IDs, times, histories, tasks and events.
func TestReplayIsBitForBit(t *testing.T) {
	sc, err := scripted.Parse("script.yaml", []byte(singleScript))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	live := runDelegation(t, runtime.WithModel(sc), runtime.WithTape(rec))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	player := cassette.NewPlayer(c)
	replay := runDelegation(t, runtime.WithTape(player))
	if d := player.Divergences(); len(d) > 0 {
		t.Fatalf("divergences: %v", d)
	}
	if !reflect.DeepEqual(live.report, replay.report) {
		t.Errorf("report:\n%+v\nreplayed:\n%+v", live.report, replay.report)
	}
	for agent, h := range live.histories {
		if !reflect.DeepEqual(h, replay.histories[agent]) {
			t.Errorf("%s's history:\n%+v\nreplayed:\n%+v", agent, h, replay.histories[agent])
		}
	}
	if !reflect.DeepEqual(live.tasks, replay.tasks) {
		t.Errorf("tasks:\n%+v\nreplayed:\n%+v", live.tasks, replay.tasks)
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

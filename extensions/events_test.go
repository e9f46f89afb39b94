package extensions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
)

// fixedTime is the time the test buses stamp on every event.
var fixedTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newBus() *events.Bus {
	return events.NewBus(events.WithClock(func() time.Time { return fixedTime }))
}

func TestEventsPublish(t *testing.T) {
	bus := newBus()
	api := extensions.NewAPI("audit", extensions.Host{Agent: "assistant", Bus: bus})
	var got []events.Event
	unsub := bus.Subscribe("*", func(ev events.Event) { got = append(got, ev) })
	defer unsub()

	api.Events.Publish("audit.tool_call", "i1", map[string]any{"tool": "read_file"})
	api.Events.Publish("audit.summary", "", 3)
	want := []events.Event{
		{Topic: "audit.tool_call", Time: fixedTime, Agent: "assistant", Instance: "i1", Source: "audit", Data: map[string]any{"tool": "read_file"}},
		{Topic: "audit.summary", Time: fixedTime, Agent: "assistant", Source: "audit", Data: 3},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
}

func TestEventsSubscribe(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		// topics are published in this order, by the runtime (r:) or by
		// another extension (e:).
		topics []string
		want   []string // "source topic" of the events received
	}{
		{name: "exact", pattern: "turn.finished",
			topics: []string{"r:turn.started", "r:turn.finished", "e:turn.finished"},
			want:   []string{"runtime turn.finished", "other turn.finished"}},
		{name: "prefix", pattern: "tool.*",
			topics: []string{"r:tool.started", "r:turn.started", "e:tool.custom", "r:toolbox"},
			want:   []string{"runtime tool.started", "other tool.custom"}},
		{name: "everything", pattern: "*",
			topics: []string{"r:turn.started", "e:x"},
			want:   []string{"runtime turn.started", "other x"}},
		{name: "nothing matches", pattern: "approval.*",
			topics: []string{"r:turn.started"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newBus()
			api := extensions.NewAPI("listener", extensions.Host{Agent: "a", Bus: bus})
			other := extensions.NewAPI("other", extensions.Host{Agent: "a", Bus: bus})
			var got []string
			unsub, err := api.Events.Subscribe(tt.pattern, func(ev events.Event) { got = append(got, ev.Source+" "+ev.Topic) })
			if err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			for _, tp := range tt.topics {
				if topic, ok := strings.CutPrefix(tp, "r:"); ok {
					bus.Publish(events.Event{Topic: topic, Agent: "a", Source: "runtime"})
				} else {
					other.Events.Publish(strings.TrimPrefix(tp, "e:"), "", nil)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("received %q, want %q", got, tt.want)
			}
			// The returned function unsubscribes; Close after it is harmless.
			unsub()
			got = nil
			for _, tp := range tt.topics {
				other.Events.Publish(strings.TrimPrefix(strings.TrimPrefix(tp, "r:"), "e:"), "", nil)
			}
			if len(got) != 0 {
				t.Errorf("received %q after unsubscribing", got)
			}
			api.Events.Close()
			unsub()
		})
	}
}

func TestEventsClose(t *testing.T) {
	bus := newBus()
	api := extensions.NewAPI("listener", extensions.Host{Agent: "a", Bus: bus})
	var mu sync.Mutex
	var got []string
	record := func(tag string) events.Handler {
		return func(ev events.Event) { mu.Lock(); got = append(got, tag+" "+ev.Topic); mu.Unlock() }
	}
	for _, p := range []string{"*", "x.*", "x.y"} {
		if _, err := api.Events.Subscribe(p, record(p)); err != nil {
			t.Fatal(err)
		}
	}
	// A subscription of someone else survives the extension's Close.
	unsubOther := bus.Subscribe("x.y", record("bus"))
	defer unsubOther()

	bus.Publish(events.Event{Topic: "x.y"})
	if want := []string{"* x.y", "x.* x.y", "x.y x.y", "bus x.y"}; !slices.Equal(got, want) {
		t.Errorf("before Close: %q, want %q", got, want)
	}
	got = nil
	api.Events.Close()
	bus.Publish(events.Event{Topic: "x.y"})
	api.Events.Publish("x.y", "", nil)
	if want := []string{"bus x.y", "bus x.y"}; !slices.Equal(got, want) {
		t.Errorf("after Close: %q, want %q", got, want)
	}
	unsubOther()
	if bus.Active() {
		t.Error("bus still has subscribers after Close and unsubscribing")
	}
	// Close is idempotent.
	api.Events.Close()

	// Close racing with Subscribe and Publish: run with -race.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := api.Events.Subscribe("race.*", func(events.Event) {}); err != nil {
					t.Error(err)
				}
				api.Events.Publish("race.x", "", nil)
			}
		})
		wg.Go(func() {
			for range 50 {
				api.Events.Close()
			}
		})
	}
	wg.Wait()
	api.Events.Close()
	if bus.Active() {
		t.Error("bus still has subscribers after the last Close")
	}
}

func TestEventsNoBus(t *testing.T) {
	api := extensions.NewAPI("x", extensions.Host{Agent: "a"})
	called := false
	unsub, err := api.Events.Subscribe("*", func(events.Event) { called = true })
	checkErr(t, err, `extension "x": subscribe: no event bus`)
	if !errors.Is(err, extensions.ErrNoBus) {
		t.Errorf("errors.Is(%v, ErrNoBus) = false", err)
	}
	if unsub != nil {
		t.Error("Subscribe without a bus returned an unsubscribe function")
	}
	// Publish and Close without a bus do nothing.
	api.Events.Publish("x.y", "i", 1)
	api.Events.Close()
	if called {
		t.Error("a handler was called")
	}
}

package events_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		{"*", "turn.started", true},
		{"turn.started", "turn.started", true},
		{"turn.started", "turn.finished", false},
		{"turn.*", "turn.finished", true},
		{"turn.*", "turnover", false},
		{"turn.*", "turn", false},
		{"turn*", "turnover", false},
		{"audit.*", "audit.tool.call", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.topic, func(t *testing.T) {
			if got := events.Match(tt.pattern, tt.topic); got != tt.want {
				t.Fatalf("Match(%q, %q) = %v", tt.pattern, tt.topic, got)
			}
		})
	}
}

func TestBusDeliveryAndUnsubscribe(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := events.NewBus(events.WithClock(func() time.Time { return now }))
	if b.Active() {
		t.Fatal("new bus is active")
	}
	var got []string
	unsub := b.Subscribe("turn.*", func(ev events.Event) { got = append(got, ev.Topic+"@"+ev.Time.Format(time.RFC3339)) })
	b.Subscribe("tool.finished", func(ev events.Event) { got = append(got, "tool:"+ev.Data.(string)) })
	b.Publish(events.Event{Topic: "turn.started"})
	b.Publish(events.Event{Topic: "tool.finished", Data: "read_file"})
	b.Publish(events.Event{Topic: "step.finished"})
	unsub()
	unsub() // idempotent
	b.Publish(events.Event{Topic: "turn.finished"})
	want := []string{"turn.started@2026-01-02T03:04:05Z", "tool:read_file"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPanickingHandlerIsRemoved(t *testing.T) {
	b := events.NewBus()
	calls := 0
	b.Subscribe("*", func(events.Event) { calls++; panic("bad handler") })
	ok := 0
	b.Subscribe("*", func(events.Event) { ok++ })
	b.Publish(events.Event{Topic: "x"})
	b.Publish(events.Event{Topic: "x"})
	if calls != 1 || ok != 2 {
		t.Fatalf("panicking handler calls = %d (want 1), healthy = %d (want 2)", calls, ok)
	}
}

func TestConcurrentPublishSubscribe(t *testing.T) {
	b := events.NewBus()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				un := b.Subscribe("x.*", func(events.Event) { mu.Lock(); n++; mu.Unlock() })
				b.Publish(events.Event{Topic: "x.y"})
				un()
			}
		})
	}
	wg.Wait()
	if n < 1600 { // each publisher sees at least its own subscription
		t.Fatalf("deliveries = %d, want >= 1600", n)
	}
}

func BenchmarkPublishNoSubscribers(b *testing.B) {
	bus := events.NewBus()
	for b.Loop() {
		if bus.Active() {
			bus.Publish(events.Event{Topic: "turn.started"})
		}
	}
}

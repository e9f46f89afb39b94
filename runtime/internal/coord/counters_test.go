package coord

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCountersAddAcrossProcesses: two processes adding to one counter at
// once lose nothing; each answer is the sum so far; counters of other
// keys and fields are apart; Forget zeroes a key's.
func TestCountersAddAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	ncs, jss := connect(t, 2)
	var cs []*Counters
	for i := range 2 {
		c, err := OpenCounters(ctx, ncs[i], jss[i], "budgets", 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	const each = 50
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	for _, c := range cs {
		wg.Go(func() {
			for range each {
				v, err := c.Add(ctx, "root.1", "turns", 2)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[v] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 2*each || !seen[2] || !seen[4*each] {
		t.Errorf("%d distinct sums answered, want %d, from 2 to %d", len(seen), 2*each, 4*each)
	}
	tests := []struct {
		key, field string
		want       int64
	}{
		{"root.1", "turns", 4 * each},
		{"root.1", "tokens", 0},
		{"root.2", "turns", 0},
	}
	for _, tt := range tests {
		if got, err := cs[1].Get(ctx, tt.key, tt.field); err != nil || got != tt.want {
			t.Errorf("Get(%s, %s) = %d, %v; want %d", tt.key, tt.field, got, err, tt.want)
		}
	}
	if v, err := cs[0].Add(ctx, "root.1", "turns", -3); err != nil || v != 4*each-3 {
		t.Errorf("Add of -3 = %d, %v; want %d", v, err, 4*each-3)
	}
	if _, err := cs[0].Add(ctx, "root.1", "tokens", 7); err != nil {
		t.Fatal(err)
	}
	if err := cs[1].Forget(ctx, "root.1"); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"turns", "tokens"} {
		if got, err := cs[0].Get(ctx, "root.1", field); err != nil || got != 0 {
			t.Errorf("after Forget, %s = %d, %v; want 0", field, got, err)
		}
	}
}

// TestOpenCountersNeedsCounterStreams: a stream of the same name that is
// not a counter stream cannot be reused for counters, and the error says
// what it needs.
func TestOpenCountersNeedsCounterStreams(t *testing.T) {
	ctx := context.Background()
	ncs, jss := connect(t, 1)
	if _, err := OpenWaits(ctx, ncs[0], jss[0], "taken"); err != nil {
		t.Fatal(err)
	}
	_, err := OpenCounters(ctx, ncs[0], jss[0], "KV_taken", 1, time.Hour)
	if err == nil || !strings.Contains(err.Error(), `cluster: open counters "KV_taken" (NATS server 2.12 or later): `) {
		t.Fatalf("OpenCounters over a key-value bucket's stream: %v", err)
	}
}

package wasm

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// loadNoop loads testdata/noop.wasm, closed when the test ends.
func loadNoop(t *testing.T) *Extension {
	t.Helper()
	e, err := NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	x, err := e.Load(context.Background(), "noop", filepath.Join("testdata", "noop.wasm"), Limits{}, Grants{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// burst takes n instances of x at once, then gives them back, in order.
func burst(t *testing.T, x *Extension, n int) []*instance {
	t.Helper()
	ins := take(t, x, n)
	for _, in := range ins {
		x.release(in, nil)
	}
	return ins
}

// TestTrimIdle: after a burst, the instances idle for trimIdleAfter are
// closed down to keepIdle, the one used last kept; those idle for less
// stay; and the pool grows again on the next burst.
func TestTrimIdle(t *testing.T) {
	x := loadNoop(t)
	pool := func() (idle, count, live int) {
		x.mu.Lock()
		idle, count = len(x.idle), x.count
		x.mu.Unlock()
		x.liveMu.Lock()
		defer x.liveMu.Unlock()
		return idle, count, len(x.live)
	}
	ins := burst(t, x, 4)
	now := x.clock.Load()
	x.trimIdle(now + int64(trimIdleAfter) - int64(time.Millisecond))
	if idle, count, live := pool(); idle != 4 || count != 4 || live != 4 {
		t.Fatalf("before trimIdleAfter: %d idle, %d alive, %d tracked; want all 4 kept", idle, count, live)
	}
	x.trimIdle(now + int64(trimIdleAfter) + int64(time.Second))
	if idle, count, live := pool(); idle != keepIdle || count != keepIdle || live != keepIdle {
		t.Fatalf("after trimIdleAfter: %d idle, %d alive, %d tracked; want %d", idle, count, live, keepIdle)
	}
	if x.idle[0] != ins[len(ins)-1] {
		t.Error("the instance kept is not the one released last")
	}
	for _, in := range ins[:len(ins)-1] {
		if !in.isBroken() {
			t.Error("a trimmed instance was not closed")
		}
	}
	burst(t, x, 3)
	if idle, count, _ := pool(); idle != 3 || count != 3 {
		t.Fatalf("after another burst: %d idle, %d alive; want 3", idle, count)
	}
}

// TestTrimIdleDropsAll: an extension that ran no call for dropIdleAfter
// keeps no instance, unless one is busy; the next call makes one.
func TestTrimIdleDropsAll(t *testing.T) {
	tests := []struct {
		name      string
		busy      int // instances still running a call
		wantIdle  int
		wantCount int
	}{
		{"none busy", 0, 0, 0},
		{"one busy", 1, keepIdle, keepIdle + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := loadNoop(t)
			busy := take(t, x, tt.busy)
			burst(t, x, 3)
			x.trimIdle(x.clock.Load() + int64(dropIdleAfter) + int64(time.Second))
			if count, idle, _ := poolState(x); idle != tt.wantIdle || count != tt.wantCount {
				t.Fatalf("after dropIdleAfter: %d idle, %d alive; want %d, %d", idle, count, tt.wantIdle, tt.wantCount)
			}
			x.liveMu.Lock()
			live := len(x.live)
			x.liveMu.Unlock()
			if live != tt.wantCount {
				t.Errorf("%d instances tracked, want %d", live, tt.wantCount)
			}
			for _, in := range busy {
				x.release(in, nil)
			}
			in, _, err := x.acquire(context.Background())
			if err != nil || in.isBroken() {
				t.Fatalf("acquire after the drop: %v", err)
			}
			x.release(in, nil)
		})
	}
}

// TestClockTrimsIdle: the extension's clock goroutine trims the pool by
// itself once its instances have idled trimIdleAfter (so it waits that
// long, in parallel with the other tests).
func TestClockTrimsIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the pool to idle")
	}
	t.Parallel()
	x := loadNoop(t)
	burst(t, x, 3)
	wait := trimIdleAfter + 5*time.Second
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		x.mu.Lock()
		idle := len(x.idle)
		x.mu.Unlock()
		if idle == keepIdle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d instances still idle %v after the burst, want %d", idle, wait, keepIdle)
		}
	}
}

// TestFirstInstanceKept: the instance a load makes (to run the module's
// init) joins the pool idle since the load, so it serves the first calls,
// and goes like any other once unused for dropIdleAfter. It joined idle
// since the epoch, so the first trim, a second after the load, dropped it.
func TestFirstInstanceKept(t *testing.T) {
	for _, tc := range []struct {
		name      string
		after     time.Duration
		wantCount int
	}{
		{"a second after the load", time.Second, 1},
		{"unused for dropIdleAfter", dropIdleAfter + time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := loadNoop(t)
			x.trimIdle(x.clock.Load() + int64(tc.after))
			if count, idle, _ := poolState(x); count != tc.wantCount || idle != tc.wantCount {
				t.Fatalf("%d alive, %d idle; want %d of each", count, idle, tc.wantCount)
			}
		})
	}
}

package wasm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadPool loads testdata/noop.wasm with at most max instances.
func loadPool(t *testing.T, max int) *Extension {
	t.Helper()
	e, err := NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	x, err := e.Load(context.Background(), "noop", filepath.Join("testdata", "noop.wasm"), Limits{MaxInstances: max}, Grants{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// poolState is what the pool holds: instances alive (or being made),
// idle, and calls waiting.
func poolState(x *Extension) (count, idle, waiters int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.count, len(x.idle), len(x.waiters)
}

type acquired struct {
	in  *instance
	err error
}

// waitFor acquires an instance of x in a goroutine, once the pool is full
// and the call is queued.
func waitFor(t *testing.T, ctx context.Context, x *Extension) <-chan acquired {
	t.Helper()
	_, _, before := poolState(x)
	got := make(chan acquired, 1)
	go func() {
		in, _, err := x.acquire(ctx)
		got <- acquired{in, err}
	}()
	for {
		if _, _, w := poolState(x); w > before {
			return got
		}
		select {
		case a := <-got:
			t.Fatalf("acquire returned %p, %v with the pool full; want it to wait", a.in, a.err)
		case <-time.After(time.Millisecond):
		}
	}
}

// take acquires n instances of x.
func take(t *testing.T, x *Extension, n int) []*instance {
	t.Helper()
	var ins []*instance
	for range n {
		in, _, err := x.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	return ins
}

// TestPool: calls take idle instances or make new ones up to
// MaxInstances, then wait; what a call releases goes to the oldest
// waiter; a waiter's ended context, a broken instance and Close each
// leave the pool counting what it holds.
func TestPool(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, x *Extension, busy []*instance)
		// the pool afterwards
		count, idle int
	}{
		{"a released instance goes to the oldest waiter", func(t *testing.T, x *Extension, busy []*instance) {
			first := waitFor(t, context.Background(), x)
			second := waitFor(t, context.Background(), x)
			x.release(busy[1], nil)
			if a := <-first; a.err != nil || a.in != busy[1] {
				t.Fatalf("the first waiter got %p, %v; want the released %p", a.in, a.err, busy[1])
			}
			x.release(busy[0], nil)
			a := <-second
			if a.err != nil || a.in != busy[0] {
				t.Fatalf("the second waiter got %p, %v; want the released %p", a.in, a.err, busy[0])
			}
			x.release(a.in, nil)
			x.release(busy[1], nil)
		}, 2, 2},
		{"a waiter whose context ends leaves the queue", func(t *testing.T, x *Extension, busy []*instance) {
			ctx, cancel := context.WithCancel(context.Background())
			got := waitFor(t, ctx, x)
			cancel()
			a := <-got
			if a.in != nil || !errors.Is(a.err, context.Canceled) || a.err.Error() != "waiting for an instance: context canceled" {
				t.Fatalf("acquire = %p, %v; want waiting for an instance: context canceled", a.in, a.err)
			}
			for _, in := range busy {
				x.release(in, nil)
			}
		}, 2, 2},
		{"a broken instance's place goes to a waiter, who makes a new one", func(t *testing.T, x *Extension, busy []*instance) {
			got := waitFor(t, context.Background(), x)
			busy[0].broken.Store(true)
			x.release(busy[0], nil)
			a := <-got
			if a.err != nil || a.in == nil || a.in == busy[0] || a.in == busy[1] || a.in.isBroken() {
				t.Fatalf("the waiter got %p (broken %v), %v; want a new instance", a.in, a.in != nil && a.in.isBroken(), a.err)
			}
			x.release(a.in, nil)
			x.release(busy[1], nil)
		}, 2, 2},
		{"a broken instance with no waiter is not counted", func(t *testing.T, x *Extension, busy []*instance) {
			busy[0].broken.Store(true)
			x.release(busy[0], nil)
			x.release(busy[1], nil)
		}, 1, 1},
		{"Close wakes the waiters", func(t *testing.T, x *Extension, busy []*instance) {
			got := waitFor(t, context.Background(), x)
			x.Close()
			if a := <-got; a.in != nil || a.err == nil || a.err.Error() != "the extension is closed" {
				t.Fatalf("acquire = %p, %v; want the extension is closed", a.in, a.err)
			}
			for _, in := range busy {
				x.release(in, nil)
				if !in.isBroken() {
					t.Error("an instance released after Close was not closed")
				}
			}
			if _, _, err := x.acquire(context.Background()); err == nil || err.Error() != "the extension is closed" {
				t.Errorf("acquire after Close: %v; want the extension is closed", err)
			}
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := loadPool(t, 2)
			busy := take(t, x, 2)
			tt.run(t, x, busy)
			if count, idle, waiters := poolState(x); count != tt.count || idle != tt.idle || waiters != 0 {
				t.Errorf("the pool holds %d instances, %d idle, %d waiters; want %d, %d, 0", count, idle, waiters, tt.count, tt.idle)
			}
		})
	}
}

// TestPoolUnderContention: many calls with contexts that end at random
// points, some while they are being granted an instance, never hold more
// than MaxInstances at once, and leave every instance in the pool.
func TestPoolUnderContention(t *testing.T) {
	const max = 2
	x := loadPool(t, max)
	var busy, most atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 150 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration((g+i)%5)*20*time.Microsecond)
				in, _, err := x.acquire(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("acquire: %v", err)
					}
					continue
				}
				n := busy.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(10 * time.Microsecond)
				busy.Add(-1)
				x.release(in, nil)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > max {
		t.Errorf("%d instances were busy at once; MaxInstances is %d", m, max)
	}
	if count, idle, waiters := poolState(x); count > max || idle != count || waiters != 0 {
		t.Errorf("afterwards the pool holds %d instances, %d idle, %d waiters; want at most %d, all idle, none waiting", count, idle, waiters, max)
	}
}

// TestPoolGrantAsContextEnds: a call whose context ends just as an
// instance (or the right to make one) is handed to it passes the grant on,
// to the next waiting call or back to the pool: nothing is kept or lost.
// The seams order the race: the context ends first, and the grant reaches
// the call only once it has found itself granted.
func TestPoolGrantAsContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		broken      bool // the released instance is broken: the grant is the right to make one
		nextWaiting bool // another call waits behind the one whose context ends
	}{
		{"instance to the pool", false, false},
		{"instance to the next call", false, true},
		{"right to make one to the pool", true, false},
		{"right to make one to the next call", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := loadPool(t, 1)
			held := take(t, x, 1)[0]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := waitFor(t, ctx, x)
			var next <-chan acquired
			if tc.nextWaiting {
				next = waitFor(t, context.Background(), x)
			}
			late := make(chan struct{})
			var once sync.Once
			x.onGrant = func() {
				once.Do(func() {
					cancel()
					<-late // the call has taken ctx.Done, and found itself granted
				})
			}
			x.onLateGrant = func() { close(late) }
			if tc.broken {
				held.broken.Store(true)
			}
			x.release(held, nil)
			a := <-first
			if a.in != nil || !errors.Is(a.err, context.Canceled) || !strings.Contains(a.err.Error(), "waiting for an instance") {
				t.Fatalf("the call whose context ended got %p, %v; want no instance and its context's error", a.in, a.err)
			}
			if tc.nextWaiting {
				var b acquired
				select {
				case b = <-next:
				case <-time.After(5 * time.Second):
					t.Fatal("the next call got nothing in 5 s: the grant was lost")
				}
				if b.err != nil || b.in == nil || b.in == held && tc.broken {
					t.Fatalf("the next call got %p, %v; want the instance handed on (or a new one for a broken)", b.in, b.err)
				}
				x.release(b.in, nil)
			}
			if count, idle, waiters := poolState(x); count > 1 || idle != count || waiters != 0 {
				t.Errorf("afterwards the pool holds %d instances, %d idle, %d waiters; want at most 1, all idle, none waiting", count, idle, waiters)
			}
			// The pool still serves: a call gets an instance at once.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel2()
			in, _, err := x.acquire(ctx2)
			if err != nil {
				t.Fatalf("acquire after: %v", err)
			}
			x.release(in, nil)
		})
	}
}

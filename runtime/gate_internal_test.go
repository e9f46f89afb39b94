package runtime

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	t.Run("close waits for the admitted turns", func(t *testing.T) {
		var g gate
		for range 2 {
			if !g.Enter() {
				t.Fatal("an open gate refused a turn")
			}
		}
		closed := make(chan bool)
		go func() { closed <- g.close() }()
		// Once close has begun, the gate refuses new turns, and close
		// still waits for the two admitted ones.
		for g.state.Load()&gateClosed == 0 {
			time.Sleep(time.Millisecond)
		}
		for range 3 {
			if g.Enter() {
				t.Fatal("a closing gate admitted a turn")
			}
		}
		g.Leave()
		select {
		case <-closed:
			t.Fatal("close returned with a turn still running")
		case <-time.After(20 * time.Millisecond):
		}
		g.Leave()
		if !<-closed {
			t.Fatal("the first close reported the gate closed already")
		}
		if g.close() {
			t.Error("a second close reported that it closed the gate")
		}
		if g.Enter() {
			t.Error("a closed gate admitted a turn")
		}
	})
	t.Run("close of an idle gate returns at once", func(t *testing.T) {
		var g gate
		g.Enter()
		g.Leave()
		if !g.close() {
			t.Fatal("close of an open gate reported false")
		}
		// Refused turns after close leave the count at zero and do not
		// close the drained channel a second time (that would panic).
		for range 3 {
			if g.Enter() {
				t.Fatal("a closed gate admitted a turn")
			}
		}
		if n := g.state.Load(); n != gateClosed {
			t.Errorf("state = %#x, want %#x", n, int64(gateClosed))
		}
	})
	t.Run("concurrent turns and close", func(t *testing.T) {
		for range 50 {
			var g gate
			var inside atomic.Int64 // turns between a successful enter and their leave
			var running sync.WaitGroup
			for range 8 {
				running.Go(func() {
					for range 100 {
						if !g.Enter() {
							return
						}
						inside.Add(1)
						inside.Add(-1)
						g.Leave()
					}
				})
			}
			if !g.close() {
				t.Fatal("close reported false")
			}
			if n := inside.Load(); n != 0 {
				t.Fatalf("close returned with %d turns inside", n)
			}
			running.Wait()
			if n := g.state.Load(); n != gateClosed {
				t.Fatalf("state = %#x after every turn left, want %#x", n, int64(gateClosed))
			}
		}
	})
}

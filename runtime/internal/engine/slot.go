package engine

import (
	"context"
	"sync/atomic"
)

// Slot is an instance's turn slot: its turns run one at a time, and Go
// serves the goroutines blocked on a channel send in arrival order, so
// queued turns run first come, first served. Init makes it ready.
type Slot struct {
	queue   chan struct{}
	waiting atomic.Int32
}

// Init makes the slot ready, before it is shared.
func (s *Slot) Init() { s.queue = make(chan struct{}, 1) }

// Acquire waits for the slot, or for ctx to end.
func (s *Slot) Acquire(ctx context.Context) error {
	select {
	case s.queue <- struct{}{}:
		return nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case s.queue <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes the slot if it is free.
func (s *Slot) TryAcquire() bool {
	select {
	case s.queue <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release gives the slot back.
func (s *Slot) Release() { <-s.queue }

// Waiting reports how many turns wait in Acquire, for tests that need to
// know a turn has queued before sending the next.
func (s *Slot) Waiting() int { return int(s.waiting.Load()) }

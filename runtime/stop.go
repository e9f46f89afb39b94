package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// life is the runtime's life: the turns it admits, and the forwarded ones
// it waits for, until its stop; and how a stop cuts the turns still
// running when its time is up.
type life struct {
	gate gate // running turns; Close waits for them
	// forwards are the turns and actions this process sent to another
	// in a cluster and waits for (runtime/cluster): a stop waits for their
	// answers as it waits for its own turns, before its connection closes.
	forwards gate
	// cut ends env.Halt when a stop cuts the turns still running, with
	// errCut: every turn runs under it (see bound).
	cut context.CancelCauseFunc
}

// Close is [Runtime.Shutdown] with a context that never ends: it waits for
// running turns, then releases everything, the store too unless it came
// from [WithStore]. Calling it again returns nil; calls that run turns
// return [ErrClosed].
func (r *Runtime) Close() error {
	return r.Shutdown(context.Background())
}

// Shutdown refuses new turns ([ErrClosed]), cuts background task turns
// (they run again later), lets running turns finish until ctx ends, and
// releases everything. If ctx ends first, it cuts the turns still running
// (their callers get [ErrClosed]; nothing is lost) and returns an error
// wrapping ctx's. Calling it again returns nil.
func (r *Runtime) Shutdown(ctx context.Context) error {
	// Task turns running in the background are aborted: their tasks stay
	// stored and run again at the next start.
	if r.tasks != nil {
		r.tasks.Stop()
	}
	r.place.Refuse() // before the gate closes: sent back, not refused
	drained, ok := r.life.gate.shut()
	if !ok {
		return nil
	}
	if fwd, ok := r.life.forwards.shut(); ok {
		drained = both(drained, fwd)
	}
	var errs []error
	select {
	case <-drained:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("runtime: stop: turns still ran when its time was up, and were cut: %w", ctx.Err()))
		r.life.cut(errCut)
		select {
		case <-drained:
		case <-time.After(cutGrace):
			r.logger.Warn("runtime: stop: turns cut by the stop did not end in time; releasing anyway", "grace", cutGrace)
		}
	}
	if r.pauses != nil {
		r.pauses.Stop()
	}
	return errors.Join(append(errs, r.release())...)
}

// both returns a channel closed once a and b are.
func both(a, b <-chan struct{}) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		<-a
		<-b
		close(c)
	}()
	return c
}

// errCut is the error of a turn that a stop cut ([Runtime.Shutdown]'s
// context ended before the turn did).
var errCut = fmt.Errorf("%w: the runtime stopped before the turn ended", ErrClosed)

// cutGrace is how long Shutdown waits for the turns it cut to end before
// it releases what they use anyway.
const cutGrace = 2 * time.Second

// bound returns ctx, cut when the runtime's stop cuts its turns
// ([Runtime.Shutdown]), with context.Cause errCut then; stop frees it. A
// turn of context.Background (most turns the runtime starts itself) runs
// under r.env.Halt itself, which costs it nothing.
func (r *Runtime) bound(ctx context.Context) (_ context.Context, stop func()) {
	if ctx == context.Background() {
		return r.env.Halt, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	unwatch := context.AfterFunc(r.env.Halt, func() { cancel(errCut) })
	return ctx, func() { unwatch(); cancel(nil) }
}

// gate admits turns until it is closed, and lets its closer wait for the
// turns already admitted. Unlike a RWMutex, a turn that starts another turn
// (an agent calling an agent) while Close waits is refused, not deadlocked.
//
// Every turn enters and leaves it, so both are one atomic add: a mutex
// here cost two lock pairs a turn, and every turn of the process queued
// on it.
type gate struct {
	// state counts the admitted turns, plus gateClosed once closed.
	state   atomic.Int64
	closeMu sync.Mutex // serialises shut
	// drained is made by shut before it sets the closed bit, and closed
	// (once) when no admitted turn is left.
	drained chan struct{}
	drain   sync.Once
}

// gateClosed is gate.state's closed bit, far above any count of turns.
const gateClosed = 1 << 62

// Enter admits a turn, or reports false once the gate is closed.
func (g *gate) Enter() bool {
	if g.state.Add(1)&gateClosed != 0 {
		g.Leave() // refused: it never ran, but it may be the last to leave
		return false
	}
	return true
}

// Leave ends an admitted turn.
func (g *gate) Leave() {
	if g.state.Add(-1) == gateClosed {
		g.drain.Do(func() { close(g.drained) })
	}
}

// shut closes the gate and returns a channel closed once the running
// turns have left; it reports false if the gate was already closed.
func (g *gate) shut() (drained <-chan struct{}, ok bool) {
	g.closeMu.Lock()
	defer g.closeMu.Unlock()
	if g.state.Load()&gateClosed != 0 {
		return nil, false
	}
	g.drained = make(chan struct{})
	if g.state.Add(gateClosed) == gateClosed {
		g.drain.Do(func() { close(g.drained) })
	}
	return g.drained, true
}

// close closes the gate and waits for the running turns; it reports false
// if the gate was already closed.
func (g *gate) close() bool {
	drained, ok := g.shut()
	if ok {
		<-drained
	}
	return ok
}

// Closing reports whether the gate was closed: the runtime stops.
func (g *gate) Closing() bool { return g.state.Load()&gateClosed != 0 }

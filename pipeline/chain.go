package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// Hook names one of the three middleware kinds.
type Hook uint8

// The middleware kinds, from outermost to innermost.
const (
	HookTurn Hook = iota + 1
	HookStep
	HookToolCall
)

// String returns "turn", "step" or "toolCall".
func (h Hook) String() string {
	switch h {
	case HookTurn:
		return "turn"
	case HookStep:
		return "step"
	case HookToolCall:
		return "toolCall"
	}
	return fmt.Sprintf("Hook(%d)", uint8(h))
}

// OnError says what a failing middleware layer does to its call.
type OnError uint8

// The failure policies (on_error): FailClosed, the default, fails the call
// with a [*MiddlewareError]; FailOpen skips the layer (Next's outcome stands
// if it called Next).
const (
	FailClosed OnError = iota
	FailOpen
)

// String returns "fail_closed" or "fail_open".
func (o OnError) String() string {
	if o == FailOpen {
		return "fail_open"
	}
	return "fail_closed"
}

// ParseOnError parses "fail_closed" or "fail_open"; "" means fail_closed.
func ParseOnError(s string) (OnError, error) {
	switch s {
	case "", "fail_closed":
		return FailClosed, nil
	case "fail_open":
		return FailOpen, nil
	}
	return FailClosed, fmt.Errorf("on_error %q: want fail_closed or fail_open", s)
}

// ErrNextCalledTwice is the cause when a middleware calls Next twice; the
// second call runs nothing.
var ErrNextCalledTwice = errors.New("next called more than once")

// errNoResult is the cause when a middleware or handler returns neither a
// result nor an error.
var errNoResult = errors.New("returned no result and no error")

// errNextOutsideChain is returned by Next when it is called from no running
// layer: after the layer returned, or from a context the chain did not start.
var errNextOutsideChain = errors.New("next called outside a running middleware")

// MiddlewareError is the error of a layer that failed the call itself: an
// error of its own, a panic ([*PanicError]), a broken onion rule. Errors
// from Next pass through unwrapped.
type MiddlewareError struct {
	Extension string
	Hook      Hook
	Err       error
}

func (e *MiddlewareError) Error() string {
	return fmt.Sprintf("extension %q: %s middleware: %v", e.Extension, e.Hook, e.Err)
}

func (e *MiddlewareError) Unwrap() error { return e.Err }

// PanicError is a recovered panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Skip describes the failure of a fail_open layer that was skipped.
type Skip struct {
	Hook        Hook
	Owner       Owner
	Err         error
	Agent       string
	InstanceKey string
	TurnID      string
}

// identity is what every context tells about its turn.
type identity interface {
	Agent() string
	InstanceKey() string
	TurnID() string
}

// Owner identifies who registered a layer and how its failures are handled.
type Owner struct {
	Extension string
	OnError   OnError
}

type layer[C any, R comparable] struct {
	owner    Owner
	priority int
	fn       func(context.Context, C) (R, error)
}

// chain is the onion for one hook. It is immutable once built.
type chain[C any, R comparable] struct {
	hook   Hook
	layers []layer[C, R]
	final  func(context.Context, C) (R, error)
	onSkip func(Skip)
	// start and end are Handlers.ObserveStart and ObserveEnd; nil leaves
	// the layers unobserved, at no cost.
	start func(context.Context, Hook, Owner) context.Context
	end   func(context.Context, Hook, Owner, error, bool)
	// text and mark are set on the turn chain only, whose result records
	// the layer that made it: text reads a result's answer, mark names its
	// maker ([TurnResult.AnsweredBy]). Functions, not an interface: a
	// type assertion per layer cost the chain a third of its speed.
	text func(R) string
	mark func(R, string)
}

// cursor is the per-call state of a chain run, kept in the context so that
// running the chain allocates nothing.
type cursor[R comparable] struct {
	depth   int    // layer that is running; len(layers) for the final handler; -1 when idle
	called  uint64 // bit i: layer i has called next
	more    []bool // the same for layers 64 and up
	nextRes R      // outcome of the latest next call
	nextErr error
	// nextText is nextRes's answer text as next returned it, for a result
	// that has one (answerer): a layer that changes it made the answer.
	nextText string
	// skips holds, by layer, the failure of a layer skipped in this run,
	// when the chain is observed (callObserved): its layer reports it.
	// Kept across resets of its context, whose layers do not change;
	// callObserved clears a layer's entry before it runs.
	// observing is 1 + the layer callObserved is about to run.
	skips     []error
	observing int
}

func (c *cursor[R]) markCalled(i int) (already bool) {
	if i < 64 {
		bit := uint64(1) << uint(i)
		already = c.called&bit != 0
		c.called |= bit
		return already
	}
	i -= 64
	if i >= len(c.more) {
		c.more = append(c.more, make([]bool, i+1-len(c.more))...)
	}
	already = c.more[i]
	c.more[i] = true
	return already
}

func (c *cursor[R]) hasCalled(i int) bool {
	if i < 64 {
		return c.called&(uint64(1)<<uint(i)) != 0
	}
	i -= 64
	return i < len(c.more) && c.more[i]
}

func (ch *chain[C, R]) run(ctx context.Context, c C, cur *cursor[R]) (r R, err error) {
	cur.called = 0
	clear(cur.more)
	cur.nextErr = nil
	cur.depth = 0
	defer func() {
		// A panic of a fail_closed layer unwinds to here; cur.depth names the
		// layer that was running. fail_open layers and the final handler
		// recover their own panics.
		if v := recover(); v != nil {
			d := cur.depth
			cur.depth = -1
			var zero R
			r, err = zero, ch.blame(d, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	r, err = ch.call(ctx, c, cur, 0)
	cur.depth = -1
	return r, err
}

// next runs the rest of the chain for the layer at cur.depth.
func (ch *chain[C, R]) next(ctx context.Context, c C, cur *cursor[R]) (R, error) {
	d := cur.depth
	if d < 0 || d >= len(ch.layers) {
		var zero R
		return zero, errNextOutsideChain
	}
	if cur.markCalled(d) {
		var zero R
		return zero, ch.blame(d, ErrNextCalledTwice)
	}
	cur.depth = d + 1
	var r R
	var err error
	if i := d + 1; i < len(ch.layers) && ch.start == nil && ch.layers[i].owner.OnError == FailClosed {
		// call's common case, in place: a call frame fewer is a third of
		// a pass-through layer's cost.
		r, err = ch.layers[i].fn(ctx, c)
		if err != nil || r == *new(R) || ch.text != nil {
			r, err = ch.settle(cur, i, r, err)
		}
	} else {
		r, err = ch.call(ctx, c, cur, i)
	}
	cur.depth = d
	if ch.text != nil {
		if err == nil && r != *new(R) {
			cur.nextText = ch.text(r)
		}
		cur.nextRes = r
	} else if ch.layers[d].owner.OnError == FailOpen {
		cur.nextRes = r
	}
	cur.nextErr = err
	return r, err
}

// own records, on the turn chain (ch.text set), that layer i made r: it
// returned a result without calling next, another than next returned, or
// next's with another answer text.
func (ch *chain[C, R]) own(cur *cursor[R], i int, r R) {
	if cur.hasCalled(i) && r == cur.nextRes && ch.text(r) == cur.nextText {
		return
	}
	ch.mark(r, ch.layers[i].owner.Extension)
}

// call runs layer i, or the final handler when i == len(layers).
func (ch *chain[C, R]) call(ctx context.Context, c C, cur *cursor[R], i int) (R, error) {
	if i == len(ch.layers) {
		return ch.callFinal(ctx, c)
	}
	if ch.start != nil && cur.observing != i+1 {
		return ch.callObserved(ctx, c, cur, i)
	}
	if ch.layers[i].owner.OnError == FailOpen {
		return ch.callOpen(ctx, c, cur, i)
	}
	r, err := ch.layers[i].fn(ctx, c)
	if err != nil || r == *new(R) || ch.text != nil {
		return ch.settle(cur, i, r, err)
	}
	return r, nil
}

// settle is the outcome of fail_closed layer i that returned r and err,
// when it is not simply r: its failure if it failed or returned nothing;
// on the turn chain, r with its maker recorded.
func (ch *chain[C, R]) settle(cur *cursor[R], i int, r R, err error) (R, error) {
	if err != nil {
		if cur.nextErr != nil && cur.hasCalled(i) && errors.Is(err, cur.nextErr) {
			return r, err // came from further in: not this layer's failure
		}
		var zero R
		return zero, ch.blame(i, err)
	}
	if r == *new(R) {
		return r, ch.blame(i, errNoResult)
	}
	if ch.text != nil {
		ch.own(cur, i, r)
	}
	return r, nil
}

// callObserved runs layer i between the observer's start and end.
func (ch *chain[C, R]) callObserved(ctx context.Context, c C, cur *cursor[R], i int) (r R, err error) {
	owner := ch.layers[i].owner
	ctx = ch.start(ctx, ch.hook, owner)
	if len(cur.skips) < len(ch.layers) {
		cur.skips = make([]error, len(ch.layers))
	}
	cur.skips[i] = nil
	ended := false
	defer func() {
		if ended {
			return
		}
		if v := recover(); v != nil {
			if cur.depth == i { // its own panic, not a deeper layer's
				ch.end(ctx, ch.hook, owner, &PanicError{Value: v}, false)
			} else {
				ch.end(ctx, ch.hook, owner, nil, false)
			}
			panic(v) // the chain's own recovery handles it
		}
	}()
	cur.observing = i + 1 // call runs the layer itself, not its observation again
	r, err = ch.call(ctx, c, cur, i)
	ended = true
	switch {
	case cur.skips[i] != nil:
		ch.end(ctx, ch.hook, owner, cur.skips[i], true)
	case err != nil && ch.owns(err, owner):
		ch.end(ctx, ch.hook, owner, err, false)
	default:
		ch.end(ctx, ch.hook, owner, nil, false)
	}
	return r, err
}

// owns reports whether err is the failure of a layer of owner on this
// chain, not one that came from further in.
func (ch *chain[C, R]) owns(err error, owner Owner) bool {
	var me *MiddlewareError
	return errors.As(err, &me) && me.Extension == owner.Extension && me.Hook == ch.hook
}

func (ch *chain[C, R]) callFinal(ctx context.Context, c C) (r R, err error) {
	defer func() {
		if v := recover(); v != nil {
			var zero R
			r, err = zero, fmt.Errorf("%s handler: %w", ch.hook, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	r, err = ch.final(ctx, c)
	if err == nil && r == *new(R) {
		err = fmt.Errorf("%s handler: %w", ch.hook, errNoResult)
	}
	return r, err
}

// callOpen runs fail_open layer i: its own failure is skipped.
func (ch *chain[C, R]) callOpen(ctx context.Context, c C, cur *cursor[R], i int) (r R, err error) {
	failed := false
	defer func() {
		if failed {
			return
		}
		if v := recover(); v != nil {
			if cur.depth != i {
				panic(v) // a deeper fail_closed layer's panic: not ours to skip
			}
			r, err = ch.skip(ctx, c, cur, i, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	r, err = ch.layers[i].fn(ctx, c)
	if err == nil && r == *new(R) {
		err = errNoResult
	} else if err == nil {
		if ch.text != nil {
			ch.own(cur, i, r)
		}
		return r, nil
	} else if cur.nextErr != nil && cur.hasCalled(i) && errors.Is(err, cur.nextErr) {
		return r, err
	}
	failed = true
	return ch.skip(ctx, c, cur, i, err)
}

// skip reports the failure err of fail_open layer i and goes on without it.
func (ch *chain[C, R]) skip(ctx context.Context, c C, cur *cursor[R], i int, err error) (R, error) {
	if ch.start != nil {
		cur.skips[i] = ch.blame(i, err)
	}
	if ch.onSkip != nil {
		sk := Skip{Hook: ch.hook, Owner: ch.layers[i].owner, Err: ch.blame(i, err)}
		if id, ok := any(c).(identity); ok {
			sk.Agent, sk.InstanceKey, sk.TurnID = id.Agent(), id.InstanceKey(), id.TurnID()
		}
		ch.onSkip(sk)
	}
	if cur.hasCalled(i) {
		return cur.nextRes, cur.nextErr
	}
	cur.depth = i
	return ch.next(ctx, c, cur)
}

// blame returns err as the failure of layer i.
func (ch *chain[C, R]) blame(i int, err error) error {
	if i < 0 || i >= len(ch.layers) {
		return err
	}
	ext := ch.layers[i].owner.Extension
	var me *MiddlewareError
	if errors.As(err, &me) && me.Extension == ext && me.Hook == ch.hook {
		return err // already its own, e.g. the error of its second Next call
	}
	return &MiddlewareError{Extension: ext, Hook: ch.hook, Err: err}
}

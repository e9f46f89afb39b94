package wasm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// frame is one hook call: the context its handle names, and what the
// guest did with it.
type frame struct {
	handle int32
	kind   int32
	ctx    context.Context // the hook's context
	turn   *pipeline.TurnContext
	step   *pipeline.StepContext
	call   *pipeline.ToolCallContext
	ev     *events.Event
	pend   *pendingCall      // a pending hook's
	reply  *pipeline.Message // a reply hook's: the model's reply
	// paused is the pending item this hook opened last (pause), "" if
	// none: a step then ends paused, a call waits.
	paused string

	// next is the context the rest of the chain runs with: it marks the
	// instance as re-enterable. It lives in the frame so that a call does
	// not allocate it.
	next nextCtx

	nextDone  bool
	inNext    bool // the rest of the chain runs: set_field is PHASE
	nextTwice bool // the guest called next again: refused
	nextErr   error
	nextPanic *panicked // the rest of the chain panicked
	set       bool      // the guest set a result
	turnRes   *pipeline.TurnResult
	stepRes   *pipeline.StepResult
	toolRes   *pipeline.ToolResult
	kept      *kept // an answer of window_apply or complete that did not fit

	budget   int64 // guest time left, in nanoseconds
	resumeAt int64 // the coarse clock when guest code last started running
	stack    [2]uint64
}

// nextCtx is the context of next: the hook's, plus the re-entry mark.
type nextCtx struct {
	context.Context
	key reentryKey
	re  reentry
}

func (c *nextCtx) Value(key any) any {
	if k, ok := key.(reentryKey); ok && k == c.key {
		return &c.re
	}
	return c.Context.Value(key)
}

// bind sets the frame's contexts for a call of in.
func (f *frame) bind(ctx context.Context, in *instance) {
	f.ctx = ctx
	f.next.Context, f.next.key = ctx, reentryKey{in.x}
	f.next.re.in = in
	f.next.re.claimed.Store(false)
}

// takeFrame returns a cleared frame for a call of the instance.
func (in *instance) takeFrame() *frame {
	if n := len(in.free); n > 0 {
		f := in.free[n-1]
		in.free = in.free[:n-1]
		return f
	}
	return new(frame)
}

// putFrame clears f and keeps it for the instance's next call.
func (in *instance) putFrame(f *frame) {
	*f = frame{}
	in.free = append(in.free, f)
}

// outcome is what the call produced.
func (f *frame) outcome() hookOut {
	var o hookOut
	switch f.kind {
	case kindTurn:
		o.turn, o.err = f.turnResult()
	case kindStep:
		o.step, o.err = f.stepResult()
	case kindToolCall:
		o.tool, o.err = f.toolResult()
	case kindTool:
		o.tool = f.toolRes
	case kindPending:
		if f.pend.phase == phaseResume {
			o.tool, o.err = f.toolResult()
		}
	case kindReply:
		o.paused = f.paused != ""
	}
	return o
}

// GuestError is a hook's own failure: it returned 1, with the message it
// gave set_error.
type GuestError struct {
	Msg string
}

func (e *GuestError) Error() string { return e.Msg }

// invoke runs hook id for f in the instance, one level deeper than the
// hooks already running in it.
func (in *instance) invoke(f *frame, id int32) error {
	d := len(in.frames)
	if d >= in.x.limits.MaxDepth {
		return fmt.Errorf("the instance is re-entered deeper than max_depth %d", in.x.limits.MaxDepth)
	}
	fn := in.functions(d)[f.kind]
	if fn == nil {
		return fmt.Errorf("the guest registered a %s hook but does not export %s", kindName(f.kind), hookExport(f.kind))
	}
	in.seq++
	if in.seq <= 0 {
		in.seq = 1
	}
	f.handle = in.seq
	in.guestErr = ""
	if d == 0 {
		in.spent = quota{}
	}
	in.frames = append(in.frames, f)
	f.budget = int64(in.x.limits.Timeout)
	in.resume(f)
	f.stack[0], f.stack[1] = uint64(uint32(f.handle)), uint64(uint32(id))
	in.fillInbox(f)
	// Guest code runs: for the backstop, not in a host call, even when
	// this call is nested in one (next).
	inHost := in.inHost.Swap(0)
	err := fn.CallWithStack(in.gctx, f.stack[:])
	in.inHost.Store(inHost)
	in.deadline.Store(0)
	in.frames = in.frames[:d]
	if err != nil {
		in.broken.Store(true)
		return in.callError(hookExport(f.kind), err)
	}
	if in.isBroken() {
		// A hook nested in this one trapped: the instance is discarded,
		// and this call fails with the nested failure next returned.
		return &TrapError{Export: hookExport(f.kind), Reason: "trap", Err: cmpOr(f.nextErr, errors.New("a nested call trapped"))}
	}
	switch code := int32(f.stack[0]); {
	case code == 0:
		return nil
	case code == 2:
		return &guestPanic{value: in.takeGuestErr()}
	case f.nextTwice:
		// As a native middleware that returns the second Next's error.
		in.guestErr = ""
		return pipeline.ErrNextCalledTwice
	}
	return &GuestError{Msg: in.takeGuestErr()}
}

// guestPanic is a hook that returned 2: it panicked (or threw). The host
// raises it again as a panic of the middleware, so the pipeline treats it
// as a native panic ([pipeline.PanicError], fail_open).
type guestPanic struct{ value string }

func (p *guestPanic) Error() string { return "panic: " + p.value }

// resume starts f's guest time running.
func (in *instance) resume(f *frame) {
	f.resumeAt = in.x.clock.Load()
	in.deadline.Store(f.resumeAt + f.budget)
}

// park stops f's guest time while the host runs the rest of the chain.
func (in *instance) park(f *frame) {
	in.deadline.Store(0)
	f.budget -= in.x.clock.Load() - f.resumeAt
}

// frame returns the running frame with handle h.
func (in *instance) frame(h int32) *frame {
	for i := len(in.frames) - 1; i >= 0; i-- {
		if in.frames[i].handle == h {
			return in.frames[i]
		}
	}
	return nil
}

func (f *frame) turnResult() (*pipeline.TurnResult, error) {
	if f.set {
		return f.turnRes, nil
	}
	if f.nextDone {
		return f.turnRes, f.nextErr
	}
	return nil, nil // the chain reports "returned no result"
}

func (f *frame) stepResult() (*pipeline.StepResult, error) {
	if f.nextDone {
		if f.paused != "" && f.nextErr == nil && f.stepRes != nil {
			f.stepRes.Stop = pipeline.FinishPaused
		}
		return f.stepRes, f.nextErr
	}
	if f.set {
		return nil, errors.New("a step middleware that does not call next cannot answer the step")
	}
	return nil, nil
}

func (f *frame) toolResult() (*pipeline.ToolResult, error) {
	if f.set {
		return f.toolRes, nil
	}
	if f.paused != "" {
		return f.pausedResult(), nil
	}
	if f.nextDone {
		return f.toolRes, f.nextErr
	}
	return nil, nil
}

// instanceKey is the instance the frame's context belongs to.
func (f *frame) instanceKey() string {
	switch {
	case f.turn != nil:
		return f.turn.InstanceKey()
	case f.step != nil:
		return f.step.InstanceKey()
	case f.call != nil:
		return f.call.InstanceKey()
	case f.ev != nil:
		return f.ev.Instance
	case f.pend != nil:
		return f.pend.item.Instance
	}
	return ""
}

// conversation is the frame's conversation, for turn and step hooks.
func (f *frame) conversation() pipeline.Conversation {
	switch {
	case f.turn != nil:
		return f.turn.Conversation()
	case f.step != nil:
		return f.step.Conversation()
	}
	return nil
}

func cmpOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Extension is a loaded WASM module: an [extensions.Extension] whose
// middleware, tools and event handlers run in instances of the module. It
// keeps a pool of instances; a hook call takes one, or re-enters the one
// its outer hook runs in. Safe for concurrent use.
type Extension struct {
	name     string
	path     string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	limits   Limits
	grants   Grants
	logger   *slog.Logger
	manifest *Manifest
	regs     []registration
	api      *extensions.API
	config   []byte // the CONFIG field
	// workspace is the agent's workspace, opened at Register for a
	// manifest that asks for files (files.go); nil otherwise.
	workspace *os.Root

	mu      sync.Mutex
	idle    []*instance
	count   int          // instances alive, idle or busy, or being made: at most MaxInstances
	waiters []chan grant // calls waiting for an instance, oldest first
	closed  bool

	stopClock    chan struct{} // closed by Close: stops tickClock
	clockDone    chan struct{}
	crashes      atomic.Int64 // crashed calls in a row
	backoffUntil atomic.Int64 // Unix nanoseconds
	// clock is a coarse clock (Unix nanoseconds) the ticker advances: guest time is measured with it, which costs an atomic load
	// where time.Now costs ~60 ns on a VM. Deadlines are as coarse as the
	// tick, a small fraction of the timeout.
	clock atomic.Int64

	liveMu sync.Mutex
	live   map[*instance]struct{} // every instance, for the backstop
	// onRunaway replaces the backstop's panic (a test seam).
	onRunaway func(msg string)
	// onGrant runs as pass hands a grant to a waiting call, before the
	// call can receive it; onLateGrant as a call whose context ended
	// finds itself granted (test seams, for the race between the two).
	onGrant, onLateGrant func()

	logMu      sync.Mutex
	logTokens  int64 // bytes the guest may still log now (see allowLog)
	logAt      int64 // the clock when logTokens was computed
	logDropped int   // records dropped since the last notice
}

// Guest logging (log, stdout, stderr) is rate-limited per extension,
// across calls and instances, in bytes (a record counts its text and
// logRecordCost): logRate a second, in bursts of up to logBurst.
const (
	logRate       = 1 << 20
	logBurst      = 1 << 20
	logRecordCost = 64
)

// allowLog reports whether a record of n bytes may be logged now, and
// takes it from the budget if so. The first record refused after one was
// allowed is noted in the log.
func (x *Extension) allowLog(n int) bool {
	cost := int64(n + logRecordCost)
	now := x.clock.Load()
	x.logMu.Lock()
	defer x.logMu.Unlock()
	if x.logAt == 0 {
		x.logTokens, x.logAt = logBurst, now
	}
	if dt := now - x.logAt; dt > 0 {
		x.logTokens = min(logBurst, x.logTokens+dt*logRate/int64(time.Second))
		x.logAt = now
	}
	if x.logTokens < cost {
		if x.logDropped == 0 {
			x.logger.Warn("the guest logs faster than its rate limit; dropping records", "rate_bytes_per_second", logRate)
		}
		x.logDropped++
		return false
	}
	x.logTokens -= cost
	x.logDropped = 0
	return true
}

var _ extensions.Extension = (*Extension)(nil)

// Register registers the hooks, tools and subscriptions the module's init
// declared.
func (x *Extension) Register(api *extensions.API) error {
	if err := x.openWorkspace(api); err != nil {
		return err
	}
	x.api = api
	for _, r := range x.regs {
		var opts []pipeline.LayerOption
		if r.hasPriority {
			opts = append(opts, pipeline.Priority(r.priority))
		}
		id := r.id
		switch r.kind {
		case kindTurn:
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				out, err := x.run(ctx, id, hookArgs{kind: kindTurn, turn: t})
				if err != nil {
					return nil, err
				}
				return out.turn, out.err
			}, opts...)
		case kindStep:
			api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
				out, err := x.run(ctx, id, hookArgs{kind: kindStep, step: s})
				if err != nil {
					return nil, err
				}
				return out.step, out.err
			}, opts...)
		case kindToolCall:
			api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				out, err := x.run(ctx, id, hookArgs{kind: kindToolCall, call: c})
				if err != nil {
					return nil, err
				}
				return out.tool, out.err
			}, opts...)
		case kindTool:
			t := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: r.tool.Name, Description: r.tool.Description,
				Parameters: r.tool.Parameters, Category: pipeline.ToolCategory(r.tool.Category)}}
			t.Func = func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				out, err := x.run(ctx, id, hookArgs{kind: kindTool, call: c})
				if err != nil {
					return nil, err
				}
				if out.tool == nil {
					return nil, errors.New("the tool set no result")
				}
				return out.tool, nil
			}
			if err := api.Tools.Register(t); err != nil {
				return err
			}
		case kindEvent:
			if _, err := api.Events.Subscribe(r.pattern, func(ev events.Event) {
				// A guest sees its own agent's events (and those of no
				// agent), never another agent's conversations.
				if ev.Agent != "" && ev.Agent != api.Agent {
					return
				}
				if _, err := x.run(context.Background(), id, hookArgs{kind: kindEvent, ev: &ev}); err != nil {
					x.logger.Warn("event handler failed", "topic", ev.Topic, "err", err)
				}
			}); err != nil {
				return err
			}
		case kindPending:
			if err := api.Pending.Handle(x.pendingKind(id, r.pending)); err != nil {
				return err
			}
		case kindReply:
			api.Pipeline.Step(x.replyLayer(id), opts...)
		}
	}
	return nil
}

// reentryKey marks, in the context a guest's next runs with, the instance
// that is parked in next: an inner hook of the same extension may re-enter
// it rather than take another instance.
type reentryKey struct{ x *Extension }

type reentry struct {
	in      *instance
	claimed atomic.Bool
}

// hookArgs are the context of one hook call.
type hookArgs struct {
	kind  int32
	turn  *pipeline.TurnContext
	step  *pipeline.StepContext
	call  *pipeline.ToolCallContext
	ev    *events.Event
	pend  *pendingCall
	reply *pipeline.Message
}

// hookOut is what a hook call produced: a result, or the error of next
// that the guest passed on.
type hookOut struct {
	turn *pipeline.TurnResult
	step *pipeline.StepResult
	tool *pipeline.ToolResult
	err  error
	// paused: the hook opened a pending item (a reply hook's step then
	// ends paused).
	paused bool
}

// Crash handling: after backoffAfter consecutive crashed calls (traps,
// exits, deadlines) the extension refuses calls for a while, doubling the
// pause each time; after quarantineAfter it refuses every call until the
// runtime restarts. A call that returns normally resets the count.
const (
	backoffAfter    = 5
	quarantineAfter = 20
	backoffBase     = 100 * time.Millisecond
)

// errQuarantined is matched by the error of a call to an extension that
// crashed too often.
var errQuarantined = errors.New("quarantined")

// admit refuses a call while the extension backs off or is quarantined.
func (x *Extension) admit() error {
	n := x.crashes.Load()
	switch {
	case n >= quarantineAfter:
		return fmt.Errorf("extension %q is %w after %d crashed calls in a row; restart the runtime after fixing it", x.name, errQuarantined, n)
	case n >= backoffAfter:
		if until := x.backoffUntil.Load(); time.Now().UnixNano() < until {
			return fmt.Errorf("extension %q backs off after %d crashed calls in a row (until %s)", x.name, n, time.Unix(0, until).UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// crashed counts a crashed call and sets the back-off.
func (x *Extension) crashed() {
	n := x.crashes.Add(1)
	if n >= backoffAfter && n < quarantineAfter {
		pause := backoffBase << (n - backoffAfter)
		x.backoffUntil.Store(time.Now().Add(pause).UnixNano())
		x.logger.Warn("extension crashed repeatedly; backing off", "crashes", n, "pause", pause)
	} else if n == quarantineAfter {
		x.logger.Error("extension crashed too often; quarantined", "crashes", n)
	}
}

// run runs hook id in an instance and returns its outcome; err is the
// hook's own failure.
func (x *Extension) run(ctx context.Context, id int32, a hookArgs) (hookOut, error) {
	if err := x.admit(); err != nil {
		return hookOut{}, err
	}
	in, re, err := x.acquire(ctx)
	if err != nil {
		return hookOut{}, err
	}
	f := in.takeFrame()
	f.kind, f.turn, f.step, f.call, f.ev, f.pend, f.reply = a.kind, a.turn, a.step, a.call, a.ev, a.pend, a.reply
	f.bind(ctx, in)
	var out hookOut
	err = in.invoke(f, id)
	if err == nil {
		out = f.outcome()
		x.clearCrashes()
	} else {
		x.counted(err)
	}
	reraise := f.nextPanic
	in.putFrame(f)
	x.release(in, re)
	// Panics go on as panics, so that the pipeline handles them as a
	// native middleware's (PanicError, fail_open): one from further in the
	// chain, which next kept, or the guest's own (a hook that returned 2).
	if reraise != nil {
		panic(reraise.value)
	}
	if err != nil && a.kind != kindEvent && a.kind != kindPending {
		if gp, ok := err.(*guestPanic); ok {
			panic(gp.value)
		}
	}
	return out, err
}

// counted counts a failed call toward the crash back-off: a trap, an exit
// or a deadline is a crash; the guest's own failure is not. It lives apart
// from run so that the error targets errors.As needs escape only here, on
// the failure path.
func (x *Extension) counted(err error) {
	var te *TrapError
	if errors.As(err, &te) {
		x.crashed()
		return
	}
	x.clearCrashes()
}

// clearCrashes ends a run of crashed calls. It reads before it writes:
// a store is a locked instruction, on every call of every instance, where
// the count is almost always 0 already.
func (x *Extension) clearCrashes() {
	if x.crashes.Load() != 0 {
		x.crashes.Store(0)
	}
}

// acquire returns the instance to run a hook in: the one parked in the
// caller's next, if no other goroutine re-entered it (parallel tool calls
// share their step's context), else an idle or new one, or, with
// Limits.MaxInstances busy, the first one released.
//
// The pool is one mutex: an idle instance costs a lock, not a semaphore's
// channel operations as well (they were a fifth of a hook call's host
// side, BENCHMARKS.md). count never exceeds MaxInstances, so a call finds
// an idle instance or may make one unless MaxInstances are busy; then it
// queues, and release hands its instance to the oldest waiter.
func (x *Extension) acquire(ctx context.Context) (*instance, *reentry, error) {
	if re, ok := ctx.Value(reentryKey{x}).(*reentry); ok && !re.in.isBroken() && re.claimed.CompareAndSwap(false, true) {
		return re.in, re, nil
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil, nil, errClosed
	}
	if n := len(x.idle); n > 0 {
		in := x.idle[n-1]
		x.idle = x.idle[:n-1]
		x.mu.Unlock()
		return in, nil, nil
	}
	if x.count < x.limits.MaxInstances {
		x.count++
		x.mu.Unlock()
		return x.create(ctx)
	}
	w := make(chan grant, 1)
	x.waiters = append(x.waiters, w)
	x.mu.Unlock()
	select {
	case g := <-w:
		return x.take(ctx, g)
	case <-ctx.Done():
	}
	x.mu.Lock()
	if i := slices.Index(x.waiters, w); i >= 0 {
		x.waiters = slices.Delete(x.waiters, i, i+1)
		x.mu.Unlock()
	} else {
		// Granted as the context ended: the grant is on its way (pass
		// sends after unlocking); hand it on.
		x.mu.Unlock()
		if x.onLateGrant != nil {
			x.onLateGrant()
		}
		if g := <-w; !g.closed {
			x.pass(g)
		}
	}
	return nil, nil, fmt.Errorf("waiting for an instance: %w", ctx.Err())
}

// errClosed is a call on a closed extension.
var errClosed = errors.New("the extension is closed")

// grant is what a waiting call is given: a released instance, or, when
// in is nil, the right to make one (counted already), or the news that
// the extension closed.
type grant struct {
	in     *instance
	closed bool
}

// take runs a hook's call on what it was granted.
func (x *Extension) take(ctx context.Context, g grant) (*instance, *reentry, error) {
	switch {
	case g.closed:
		return nil, nil, errClosed
	case g.in != nil:
		return g.in, nil, nil
	}
	return x.create(ctx)
}

// create makes an instance counted already; if it fails, the count goes
// to a waiter or back.
func (x *Extension) create(ctx context.Context) (*instance, *reentry, error) {
	in, err := x.newInstance(ctx)
	if err != nil {
		x.pass(grant{})
		return nil, nil, fmt.Errorf("new instance: %w", err)
	}
	return in, nil, nil
}

// pass gives g to the oldest waiting call, or back to the pool: its
// instance to the idle ones, or its count back. On a closed extension
// the instance is closed instead.
func (x *Extension) pass(g grant) {
	x.mu.Lock()
	if len(x.waiters) > 0 && !x.closed {
		w := x.waiters[0]
		x.waiters = slices.Delete(x.waiters, 0, 1)
		x.mu.Unlock()
		if x.onGrant != nil {
			x.onGrant()
		}
		w <- g // buffered: never blocks
		return
	}
	if g.in != nil && !x.closed {
		g.in.idleSince = x.clock.Load()
		x.idle = append(x.idle, g.in)
		x.mu.Unlock()
		return
	}
	x.count--
	x.mu.Unlock()
	if g.in != nil {
		g.in.close()
	}
}

// release gives the instance back: to the outer hook it was re-entered
// from, to a waiting call or the idle pool, or, if it broke, to nobody
// (a waiting call then makes a new one).
func (x *Extension) release(in *instance, re *reentry) {
	if re != nil {
		re.claimed.Store(false)
		return
	}
	if !in.isBroken() {
		x.pass(grant{in: in})
		return
	}
	in.close()
	x.pass(grant{})
	// A broken instance may leave up to its memory cap (and wazero's
	// stack, up to 50 MB) as garbage; a module that crashes call after
	// call would pile it up faster than the collector's pace returns it.
	// Collecting now bounds what a module makes the process hold
	// (BENCHMARKS.md). Crashed calls are rare, and back off.
	goruntime.GC()
}

// The idle pool shrinks back after a burst: instances idle for
// trimIdleAfter are closed, down to keepIdle, so that a process whose
// extensions once ran many calls at once does not keep their memories
// (a Go guest's is a few MB) for good. An instance costs milliseconds to
// make again (the guest's runtime starts), which a pause this long makes
// small. An extension that ran no call for dropIdleAfter keeps none: a
// Go guest's instance holds 4 to 8 MB, and the first call after a quiet
// minute pays its 2 to 6 ms (BENCHMARKS.md, issue 19).
const (
	trimIdleAfter = 10 * time.Second
	keepIdle      = 1
	dropIdleAfter = time.Minute
)

// trimIdle closes the instances idle since before now-trimIdleAfter, but
// the keepIdle used last, or all of them if none is busy and the last was
// released before now-dropIdleAfter.
func (x *Extension) trimIdle(now int64) {
	x.mu.Lock()
	// idle is a stack: the instances released last are at its end.
	keep := keepIdle
	if last := len(x.idle) - 1; last >= 0 && len(x.idle) == x.count && x.idle[last].idleSince < now-int64(dropIdleAfter) {
		keep = 0
	}
	n := 0
	for n < len(x.idle)-keep && x.idle[n].idleSince < now-int64(trimIdleAfter) {
		n++
	}
	if n == 0 {
		x.mu.Unlock()
		return
	}
	old := slices.Clone(x.idle[:n])
	x.idle = slices.Delete(x.idle, 0, n)
	x.count -= n
	kept := len(x.idle)
	x.mu.Unlock()
	for _, in := range old {
		in.close()
	}
	x.logger.Debug("closed idle instances", "closed", n, "kept", kept)
}

// tickClock advances the coarse clock that guest deadlines are read on
// (see Extension.clock and instance.yield), and runs the backstop
// (instance.backstop), until Close.
func (x *Extension) tickClock() {
	defer close(x.clockDone)
	t := time.NewTicker(min(max(x.limits.Timeout/8, time.Millisecond), 50*time.Millisecond))
	defer t.Stop()
	// The dead-man switch (killTimer): re-armed every rearmEvery while
	// this goroutine runs, it fires only if the process stalls and a
	// goroutine still burns CPU, which is guest code stuck in native code.
	var kill killTimer
	defer kill.close()
	// On CPU time, a healthy process may use GOMAXPROCS seconds a second:
	// the switch fires only if this goroutine did not run for the
	// backstop's bound and a second more while every P was busy.
	const rearmEvery = 100 * time.Millisecond
	killAfter := time.Duration(goruntime.GOMAXPROCS(0)) * (x.backstopAfter() + time.Second)
	kill.arm(killAfter)
	armed, trimmed := time.Now(), time.Now()
	for {
		select {
		case <-x.stopClock:
			return
		case now := <-t.C:
			x.clock.Store(now.UnixNano())
			if now.Sub(armed) >= rearmEvery {
				kill.arm(killAfter)
				armed = now
			}
			if now.Sub(trimmed) >= time.Second {
				x.trimIdle(now.UnixNano())
				trimmed = now
			}
			var runaway bool
			x.liveMu.Lock()
			for in := range x.live {
				runaway = in.backstop(now.UnixNano()) || runaway
			}
			x.liveMu.Unlock()
			if runaway {
				x.runaway()
			}
		}
	}
}

// runaway is the backstop's end (see instance.backstop): guest code that
// metering did not stop cannot be stopped, so the process ends.
func (x *Extension) runaway() {
	msg := fmt.Sprintf("wasm: extension %q: guest code ran %v past its deadline (timeout %v) and metering did not stop it: "+
		"ending the process, since nothing else can stop it (a host bug: please report it)", x.name, x.backstopAfter(), x.limits.Timeout)
	x.logger.Error(msg)
	if x.onRunaway != nil {
		x.onRunaway(msg)
		return
	}
	panic(msg)
}

// backstopAfter is how long guest code may run past its deadline before
// the backstop fires.
func (x *Extension) backstopAfter() time.Duration {
	return max(backstopFactor*x.limits.Timeout, backstopMin)
}

// track adds in to the instances the backstop watches; untrack removes it.
func (x *Extension) track(in *instance) {
	x.liveMu.Lock()
	if x.live == nil {
		x.live = map[*instance]struct{}{}
	}
	x.live[in] = struct{}{}
	x.liveMu.Unlock()
}

func (x *Extension) untrack(in *instance) {
	x.liveMu.Lock()
	delete(x.live, in)
	x.liveMu.Unlock()
}

// Close stops the clock and closes every instance and the module.
func (x *Extension) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	idle, waiters := x.idle, x.waiters
	x.idle, x.waiters = nil, nil
	x.mu.Unlock()
	for _, w := range waiters {
		w <- grant{closed: true}
	}
	close(x.stopClock)
	if x.clockDone != nil {
		<-x.clockDone
	}
	for _, in := range idle {
		in.close()
	}
	if x.workspace != nil {
		x.workspace.Close()
	}
	return x.rt.Close(context.Background())
}

// Info describes a loaded module, for people and tools (ganglion ext inspect).
type Info struct {
	Manifest      Manifest `json:"manifest"`
	Hooks         []string `json:"hooks"`          // "turn", "step", "tool_call", in registration order
	Tools         []string `json:"tools"`          // the tools it registered
	Subscriptions []string `json:"subscriptions"`  // the event patterns it subscribed to
	Imports       []string `json:"imports"`        // "module.name"
	Exports       []string `json:"exports"`        // exported functions
	Size          int      `json:"size,omitempty"` // bytes of the module, if known
}

// InitError is the error of a module whose ganglion_init failed after it
// declared its manifest, most often because it checks its config and was
// given none: what it declared can still be shown (ganglion ext inspect).
type InitError struct {
	Manifest Manifest
	Err      error
}

func (e *InitError) Error() string { return e.Err.Error() }

func (e *InitError) Unwrap() error { return e.Err }

// Info describes the module: its manifest, what its init registered, and
// its imports and exports.
func (x *Extension) Info() Info {
	info := Info{Manifest: *x.manifest, Hooks: []string{}, Tools: []string{}, Subscriptions: []string{}}
	for _, r := range x.regs {
		switch r.kind {
		case kindTool:
			info.Tools = append(info.Tools, r.tool.Name)
		case kindEvent:
			info.Subscriptions = append(info.Subscriptions, r.pattern)
		default:
			info.Hooks = append(info.Hooks, kindName(r.kind))
		}
	}
	for _, f := range x.compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, mod+"."+name)
	}
	for name := range x.compiled.ExportedFunctions() {
		info.Exports = append(info.Exports, name)
	}
	slices.Sort(info.Exports)
	return info
}

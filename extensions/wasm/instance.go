package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// instance is one instantiation of an extension's module. Its guest code
// runs on one goroutine at a time; next may re-enter it one level deeper
// (see reentry).
type instance struct {
	x    *Extension
	mod  api.Module
	mem  api.Memory
	fns  []hookFunctions // per nesting depth
	seq  int32           // handle generator
	init *initState      // during ganglion_init only

	gctx   *hostCtx // the context of every guest call; see hostCtx
	frames []*frame // running hook calls, outermost first
	free   []*frame // frames to reuse

	// deadline is when the running guest code must have returned, in Unix
	// nanoseconds on the extension's coarse clock, or 0 while no guest code
	// runs (parked in next, idle). yield checks it.
	deadline atomic.Int64
	why      string      // why yield stopped the guest, for callError
	broken   atomic.Bool // trapped, stopped or exited: never used again
	// inHost counts the host calls the guest code running now is in (0
	// while guest code runs): the backstop watches guest code only.
	inHost atomic.Int32
	// seen and since are the backstop's own record, kept by the clock
	// goroutine only: the deadline of the run it last saw past it, and
	// when it first saw that (0: none).
	seen, since int64
	fired       bool // the backstop fired

	// idleSince is when it went back to the idle pool, on the coarse
	// clock; guarded by the extension's mu.
	idleSince int64

	lastErr  string // the last failed host call's message
	guestErr string // the guest's set_error

	spent quota // what the running call handed the host

	inbox inboxSlots // the guest's inbox, if it registered one
}

// Per call into the guest (a hook call and the calls nested in it, or an
// init), the guest may hand the host at most this much; beyond it, the
// import answers TOO_LARGE (and stdout and stderr fail), naming the limit.
// They bound what a guest that loops on these imports makes the host do
// and hold before its deadline stops it.
const (
	maxPublishCalls = 256     // publish calls
	maxPublishBytes = 4 << 20 // bytes of event data
	maxEmitCalls    = 256     // emit calls
	maxEmitBytes    = 4 << 20 // bytes of message events
	maxLogRecords   = 1024    // log calls, and lines written to stdout and stderr
	maxLogBytes     = 1 << 20 // bytes of those
)

// quota counts what a call handed the host.
type quota struct {
	publish, publishBytes   int
	emit, emitBytes         int
	log, logBytes           int
	complete, completeBytes int
	pause, pauseBytes       int
	files                   fileQuota
	http, httpBytes         int
}

// spend counts one more use of size bytes against the limits (maxCalls,
// maxBytes) of what, or returns TOO_LARGE if it would pass one.
func (in *instance) spend(what, unit string, calls, bytes *int, size, maxCalls, maxBytes int) int32 {
	if *calls >= maxCalls {
		return in.fail(codeTooLarge, "%s: over the limit of %d %s per hook call", what, maxCalls, unit)
	}
	if *bytes+size > maxBytes {
		return in.fail(codeTooLarge, "%s: over the limit of %d bytes per hook call", what, maxBytes)
	}
	*calls++
	*bytes += size
	return 0
}

// initState collects what ganglion_init declares.
type initState struct {
	abi      int // what ganglion_abi_version returned
	manifest *Manifest
	regs     []registration
}

var instanceSeq atomic.Uint64

// newInstance instantiates the module and runs its init. The first instance
// sets the extension's manifest and registrations; later ones must declare
// the same.
func (x *Extension) newInstance(ctx context.Context) (*instance, error) {
	in := &instance{x: x}
	in.gctx = &hostCtx{Context: context.Background(), in: in}
	x.track(in)
	cfg := wazero.NewModuleConfig().
		WithName(x.name + "#" + strconv.FormatUint(instanceSeq.Add(1), 10)).
		WithStartFunctions(). // _initialize is called below, under the deadline
		WithStdout(&logWriter{in: in, level: slog.LevelInfo, stream: "stdout"}).
		WithStderr(&logWriter{in: in, level: slog.LevelWarn, stream: "stderr"})
	if x.grants.Clock {
		cfg = cfg.WithSysWalltime().WithSysNanotime()
	}
	// A start section runs inside InstantiateModule: under the deadline,
	// with the instance's context, where imports answer PHASE.
	in.deadline.Store(x.clock.Load() + int64(x.limits.Timeout))
	mod, err := x.rt.InstantiateModule(in.gctx, x.compiled, cfg)
	in.deadline.Store(0)
	if err != nil {
		x.untrack(in)
		return nil, fmt.Errorf("instantiate: %w", in.callError("start", err))
	}
	in.mod = mod
	in.mem = mod.Memory()
	ok := false
	defer func() {
		if !ok {
			in.close()
		}
	}()
	if fn := mod.ExportedFunction("_initialize"); fn != nil {
		if _, err := in.callPlain(ctx, fn, "_initialize"); err != nil {
			return nil, err
		}
	}
	res, err := in.callPlain(ctx, mod.ExportedFunction(exportVersion), exportVersion)
	if err != nil {
		return nil, err
	}
	if len(res) != 1 || !abiSupported(int(int32(res[0]))) {
		got := "nothing"
		if len(res) == 1 {
			got = strconv.Itoa(int(int32(res[0])))
		}
		return nil, fmt.Errorf("guest ABI version %s, %s: rebuild the extension with a matching SDK", got, abiHost)
	}
	in.init = &initState{abi: int(int32(res[0]))}
	res, err = in.callPlain(ctx, mod.ExportedFunction(exportInit), exportInit)
	st := in.init
	in.init = nil
	if err != nil {
		return nil, err
	}
	if len(res) != 1 || int32(res[0]) != 0 {
		err := fmt.Errorf("%s failed: %s", exportInit, in.takeGuestErr())
		if st.manifest != nil {
			return nil, &InitError{Manifest: *st.manifest, Err: err}
		}
		return nil, err
	}
	if st.manifest == nil {
		if in.lastErr != "" { // manifest was called, and refused
			return nil, fmt.Errorf("%s declared no valid manifest: %s", exportInit, in.lastErr)
		}
		return nil, fmt.Errorf("%s declared no manifest (call manifest first; see sdk/ABI.md)", exportInit)
	}
	if x.manifest == nil {
		if err := x.checkRegistrations(st); err != nil {
			return nil, err
		}
		x.manifest, x.regs = st.manifest, st.regs
	} else if !sameRegistrations(x.regs, st.regs) {
		return nil, errors.New("a new instance registered other hooks or tools than the first: ganglion_init must be deterministic")
	}
	ok = true
	return in, nil
}

// callPlain calls an export without a hook context, under the timeout.
func (in *instance) callPlain(ctx context.Context, fn api.Function, name string) ([]uint64, error) {
	if fn == nil {
		return nil, fmt.Errorf("does not export %s", name)
	}
	in.guestErr = ""
	in.spent = quota{}
	in.deadline.Store(in.x.clock.Load() + int64(in.x.limits.Timeout))
	res, err := fn.Call(in.gctx, nil...)
	in.deadline.Store(0)
	if err != nil {
		in.broken.Store(true)
		return nil, in.callError(name, err)
	}
	return res, nil
}

// callError describes a failed export call. A message the guest gave
// set_error before trapping (AssemblyScript reports its errors by trapping)
// is kept.
func (in *instance) callError(name string, err error) error {
	msg := in.guestErr
	in.guestErr = ""
	if why := in.why; why != "" {
		return &TrapError{Export: name, Reason: why, Message: msg, deadline: why == whyDeadline, Err: err}
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		return &TrapError{Export: name, Reason: fmt.Sprintf("the guest exited with code %d", ee.ExitCode()), Message: msg, Err: err}
	}
	return &TrapError{Export: name, Reason: "trap", Message: msg, Err: err}
}

const whyDeadline = "deadline exceeded"

// Backstop.
//
// Metering (meter.go) stops a guest at its deadline only if the metered
// code calls the host. A bug in the rewriter, or a module that defeated
// it, would mean guest code that never returns: a goroutine stuck in
// native code, at 100 % CPU, that Go can neither preempt nor stop, and
// that stalls the whole process at its next garbage collection. wazero can
// stop native code only when compiled with WithCloseOnContextDone, which
// costs every call a goroutine and every loop iteration an exit to Go
// (5 to 8 times the cost of a layer, RATIONALE.md) and still misses a
// recursion without a loop. So the backstop is a fail-stop: the
// extension's clock goroutine watches every instance, and when guest code
// (not a host call) has run backstopFactor times its budget, and at least
// backstopMin, past a deadline that metering should have enforced, the
// host ends the process with an error that says so, rather than hang for
// ever. The runtime's state is crash-consistent; a supervisor restarts
// the process. Should the process stall first (the collector waits for the
// stuck goroutine, and so does the clock goroutine), a kill timer on the
// process's CPU time ends it a second later (killtimer_linux.go). It never
// fires unless metering is broken.

// backstopFactor and backstopMin are how long guest code may run past its
// deadline before the backstop fires: generous, so that it never races
// metering, even on a loaded machine.
const (
	backstopFactor = 3
	backstopMin    = 5 * time.Second
)

// backstop checks the instance at time now, on the clock goroutine, and
// reports whether its guest code has run past its deadline for longer
// than the backstop allows. It measures on its own observations (when it
// first saw the run past its deadline), not on the deadline alone, which
// was computed from the coarse clock, which lags when the machine is
// loaded.
func (in *instance) backstop(now int64) bool {
	d := in.deadline.Load()
	if d == 0 || in.x.clock.Load() <= d || in.inHost.Load() != 0 || in.fired {
		in.seen, in.since = 0, 0
		return false
	}
	if d != in.seen {
		in.seen, in.since = d, now
		return false
	}
	if now-in.since <= int64(in.x.backstopAfter()) {
		return false
	}
	in.fired = true
	return true
}

// TrapError is the failure of a guest call that did not return normally:
// a trap, an exit, the deadline. The instance is discarded. It matches
// context.DeadlineExceeded when the deadline was the cause.
type TrapError struct {
	Export string // the export that was running
	Reason string // "trap", "deadline exceeded", "the guest exited with code 2", ...
	// Message is what the guest gave set_error before it trapped, if anything.
	Message  string
	deadline bool
	Err      error
}

func (e *TrapError) Error() string {
	s := e.Export + ": "
	if e.Message != "" {
		s += e.Message + ": "
	}
	if e.Reason == "trap" {
		return s + e.Err.Error()
	}
	return s + e.Reason
}

func (e *TrapError) Unwrap() []error {
	if e.deadline {
		return []error{e.Err, context.DeadlineExceeded}
	}
	return []error{e.Err}
}

// logWriter passes what a guest writes to stdout or stderr to the
// extension's logger, a line per record; a line longer than maxLogLine is
// cut into records of that size.
type logWriter struct {
	in     *instance
	level  slog.Level
	stream string
	buf    []byte
}

const maxLogLine = 4096

func (w *logWriter) Write(p []byte) (int, error) {
	in := w.in
	// A write is a host call: its time counts at once, and it is bounded
	// as log is (a line per record).
	defer in.yield()
	lines := max(bytes.Count(p, []byte{'\n'}), 1)
	switch {
	case in.spent.log+lines > maxLogRecords:
		return 0, fmt.Errorf("%s: over the limit of %d records per hook call", w.stream, maxLogRecords)
	case in.spent.logBytes+len(p) > maxLogBytes:
		return 0, fmt.Errorf("%s: over the limit of %d bytes per hook call", w.stream, maxLogBytes)
	}
	in.spent.log += lines
	in.spent.logBytes += len(p)
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(w.buf)
			if len(p) < room {
				w.buf = append(w.buf, p...)
				break
			}
			w.buf = append(w.buf, p[:room]...)
			p = p[room:]
			w.flush()
			continue
		}
		w.buf = append(w.buf, p[:i]...)
		p = p[i+1:]
		w.flush()
	}
	return n, nil
}

func (w *logWriter) flush() {
	x := w.in.x
	if !x.allowLog(len(w.buf)) {
		w.buf = w.buf[:0]
		return
	}
	logger := x.logger
	if x.api != nil {
		logger = x.api.Logger
	}
	logger.Log(context.Background(), w.level, string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD"))), "stream", w.stream)
	w.buf = w.buf[:0]
}

// yield is the metering call (meter.go), made every few thousand loop
// iterations and function entries: it traps a guest that overran its
// deadline. It runs on the guest's goroutine, so why needs no lock.
func (in *instance) yield() {
	if d := in.deadline.Load(); d != 0 && in.x.clock.Load() > d {
		in.stop()
	}
}

// meterYield is yield for the metering call, which comes after some 10 to
// 50 µs of guest work at the most. It also reads the real clock (~60 ns),
// so that a clock goroutine running late on a loaded machine does not
// delay the deadline by more than lateClock. Not by less: the deadline
// was computed on the coarse clock, which may have been late already then,
// and the real clock would cut the call's budget by as much (a call with
// a 1 ms timeout would fail at once).
func (in *instance) meterYield() {
	if d := in.deadline.Load(); d != 0 && (in.x.clock.Load() > d || time.Now().UnixNano() > d+int64(lateClock)) {
		in.stop()
	}
}

// lateClock is how late the coarse clock may be before meterYield goes by
// the real one.
const lateClock = 50 * time.Millisecond

// stop traps the guest at its deadline.
func (in *instance) stop() {
	in.why = whyDeadline
	panic(errors.New(whyDeadline)) // wazero turns a host function's panic into a trap
}

// hostCtx is the context of every guest call of an instance: host
// functions find their instance through it. The hook's own context
// (values, cancellation) is the frame's.
type hostCtx struct {
	context.Context
	in *instance
}

// functions returns the call engines for nesting depth d.
func (in *instance) functions(d int) *hookFunctions {
	for len(in.fns) <= d {
		var f hookFunctions
		for k := int32(kindTurn); k <= kindReply; k++ {
			f[k] = in.mod.ExportedFunction(hookExport(k))
		}
		in.fns = append(in.fns, f)
	}
	return &in.fns[d]
}

func (in *instance) isBroken() bool { return in.broken.Load() }

// close closes the module; the instance is not used again.
func (in *instance) close() {
	in.broken.Store(true)
	in.x.untrack(in)
	_ = in.mod.Close(context.Background())
}

func (in *instance) takeGuestErr() string {
	s := in.guestErr
	in.guestErr = ""
	if s == "" {
		return "the guest gave no reason (it should call set_error)"
	}
	return s
}

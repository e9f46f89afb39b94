package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

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

	lastErr  string // the last failed host call's message
	guestErr string // the guest's set_error
}

// initState collects what ganglion_init declares.
type initState struct {
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
	cfg := wazero.NewModuleConfig().
		WithName(x.name + "#" + strconv.FormatUint(instanceSeq.Add(1), 10)).
		WithStartFunctions(). // _initialize is called below, under the deadline
		WithStdout(&logWriter{x: x, level: slog.LevelInfo, stream: "stdout"}).
		WithStderr(&logWriter{x: x, level: slog.LevelWarn, stream: "stderr"})
	if x.grants.Clock {
		cfg = cfg.WithSysWalltime().WithSysNanotime()
	}
	// A start section runs inside InstantiateModule: under the deadline,
	// with the instance's context, where imports answer PHASE.
	in.deadline.Store(x.clock.Load() + int64(x.limits.Timeout))
	mod, err := x.rt.InstantiateModule(in.gctx, x.compiled, cfg)
	in.deadline.Store(0)
	if err != nil {
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
	if len(res) != 1 || int32(res[0]) != ABIVersion {
		got := "nothing"
		if len(res) == 1 {
			got = strconv.Itoa(int(int32(res[0])))
		}
		return nil, fmt.Errorf("guest ABI version %s, host ABI version %d: rebuild the extension with a matching SDK", got, ABIVersion)
	}
	in.init = &initState{}
	res, err = in.callPlain(ctx, mod.ExportedFunction(exportInit), exportInit)
	st := in.init
	in.init = nil
	if err != nil {
		return nil, err
	}
	if len(res) != 1 || int32(res[0]) != 0 {
		return nil, fmt.Errorf("%s failed: %s", exportInit, in.takeGuestErr())
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
	x      *Extension
	level  slog.Level
	stream string
	buf    []byte
}

const maxLogLine = 4096

func (w *logWriter) Write(p []byte) (int, error) {
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
	logger := w.x.logger
	if w.x.api != nil {
		logger = w.x.api.Logger
	}
	logger.Log(context.Background(), w.level, string(bytes.ToValidUTF8(w.buf, []byte("\uFFFD"))), "stream", w.stream)
	w.buf = w.buf[:0]
}

// yield is the metering call (meter.go), made every few thousand loop
// iterations and function entries: it traps a guest that overran its
// deadline. It runs on the guest's goroutine, so why needs no lock.
func (in *instance) yield() {
	if d := in.deadline.Load(); d != 0 && in.x.clock.Load() > d {
		in.why = whyDeadline
		panic(errors.New(whyDeadline)) // wazero turns a host function's panic into a trap
	}
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
		for k := int32(kindTurn); k <= kindEvent; k++ {
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

package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Pending items from a guest (ABI version 2, sdk/ABI.md "Pending items").
//
// A guest declares the kinds of item it opens in its manifest, the config
// grants them, and ganglion_init registers a handler for each (register
// kind 6). The host makes each an [extensions.PendingKind] whose Resolve,
// Expire and Resume call the guest's ganglion_pending export, so a
// guest's items are stored, listed, answered and resumed as a native
// extension's are: the runtime knows no difference.

// Per hook call (with the calls nested in it), a guest may open at most
// maxPauseCalls items: each is a stored record a human must answer.
const (
	maxPauseCalls = 16
	maxPauseBytes = 1 << 20 // bytes of requests
)

// The phases of a pending hook, its PENDING_PHASE field.
const (
	phaseResolve = "resolve" // a human acted on the item: decide the outcome
	phaseExpire  = "expire"  // nobody acted in time: decide the outcome
	phaseResume  = "resume"  // the paused call's turn resumes: decide its result
)

// pendingSpec is a registered kind: its name, and whether its hook
// resumes the calls its items pause.
type pendingSpec struct {
	name   string
	resume bool
}

// pendingCall is the context of one call of a pending hook.
type pendingCall struct {
	phase string
	item  ledger.Item
	act   extensions.Action     // resolve
	rc    extensions.ResumeCall // resume
	args  json.RawMessage       // resume: arguments a human edited, set before next
	out   *extensions.Outcome   // resolve, expire: what the guest decided
}

// checkPendingKind checks a kind's name: 1 to 64 lower-case letters,
// digits, '_' or '-'; the ledger, the CLI and webhooks show it.
func checkPendingKind(k string) error {
	if k == "" || len(k) > 64 {
		return fmt.Errorf("kind %q: want 1 to 64 characters", k)
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("kind %q: want lower-case letters, digits, _ or -", k)
		}
	}
	return nil
}

// newer names the first field of m that ABI version 2 adds, or "".
func (m *Manifest) newer() string {
	switch {
	case len(m.Pending) > 0:
		return "pending"
	case slices.Contains(m.Hooks, "reply"):
		return `the hook "reply"`
	}
	return ""
}

// registerPending checks a pending kind's registration.
func (in *instance) registerPending(st *initState, r *registration, spec registerSpec) int32 {
	if spec.Pattern != "" || spec.Priority != nil || spec.Description != "" || spec.Parameters != nil || spec.Category != "" {
		return in.fail(codeInvalid, `register pending: the spec takes only "name" and "resume"`)
	}
	if !slices.Contains(st.manifest.Pending, spec.Name) {
		return in.fail(codeDenied, "register pending %q: the manifest's pending does not list it", spec.Name)
	}
	for _, o := range st.regs {
		if o.pending != nil && o.pending.name == spec.Name {
			return in.fail(codeInvalid, "register pending %q: registered already", spec.Name)
		}
	}
	r.pending = &pendingSpec{name: spec.Name, resume: spec.Resume}
	return 0
}

// pendingKind is the kind the runtime calls for the guest's items of s.
func (x *Extension) pendingKind(id int32, s *pendingSpec) extensions.PendingKind {
	k := extensions.PendingKind{
		Name: s.name,
		Resolve: func(ctx context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
			return x.resolvePending(ctx, id, it, act)
		},
		Expire: func(it ledger.Item) extensions.Outcome { return x.expirePending(id, it) },
	}
	if s.resume {
		k.Resume = func(ctx context.Context, it ledger.Item, rc extensions.ResumeCall) error {
			return x.resumePending(ctx, id, it, rc)
		}
	}
	return k
}

// resolvePending asks the guest what act means for it. A hook that
// refuses the action (returns 1) refuses it with its message, which the
// human sees.
func (x *Extension) resolvePending(ctx context.Context, id int32, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	pc := &pendingCall{phase: phaseResolve, item: it, act: act}
	_, err := x.run(ctx, id, hookArgs{kind: kindPending, pend: pc})
	if ge := (*GuestError)(nil); errors.As(err, &ge) {
		return extensions.Outcome{}, fmt.Errorf("%w: %s", extensions.ErrInvalidAction, withoutValue(ge.Msg, act))
	}
	if err != nil {
		return extensions.Outcome{}, fmt.Errorf("extension %q: its pending hook failed on the %s action: %s", x.name, act.Kind, withoutValue(err.Error(), act))
	}
	if pc.out == nil {
		return extensions.Outcome{}, fmt.Errorf("extension %q: its pending hook decided nothing for the %s action (it sets RESULT to an outcome, or refuses the action)", x.name, act.Kind)
	}
	return *pc.out, nil
}

// withoutValue keeps a provided value, which may be a secret, out of an
// error's text.
func withoutValue(msg string, act extensions.Action) string {
	if act.Kind != extensions.ActionProvide || act.Value == "" {
		return msg
	}
	return strings.ReplaceAll(msg, act.Value, "[redacted]")
}

// expirePending asks the guest what the item's timeout means for it; a
// guest that decides nothing, or fails, gets status timeout.
func (x *Extension) expirePending(id int32, it ledger.Item) extensions.Outcome {
	pc := &pendingCall{phase: phaseExpire, item: it}
	if _, err := x.run(context.Background(), id, hookArgs{kind: kindPending, pend: pc}); err != nil {
		x.logger.Warn("pending hook failed on expiry; the item times out", "item", it.ID, "err", err)
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout}}
	}
	if pc.out == nil {
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout}}
	}
	return *pc.out
}

// resumingKey marks, in the context a resume hook runs the paused call
// with, the item it resumes: the guest's toolCall hook reads it as the
// RESUMING field, and runs the call it had paused.
type resumingKey struct{ x *Extension }

// resumePending lets the guest decide the paused call's result: run it
// (next, with arguments a human edited if it set TOOL_ARGS), or set one.
func (x *Extension) resumePending(ctx context.Context, id int32, it ledger.Item, rc extensions.ResumeCall) error {
	pc := &pendingCall{phase: phaseResume, item: it, rc: rc}
	out, err := x.run(context.WithValue(ctx, resumingKey{x}, &pc.item), id, hookArgs{kind: kindPending, pend: pc})
	if err != nil {
		return fmt.Errorf("extension %q: its pending hook failed to resume: %w", x.name, err)
	}
	if out.err != nil {
		return out.err
	}
	if out.tool == nil {
		return fmt.Errorf("extension %q: its pending hook neither ran the paused call (next) nor set its result", x.name)
	}
	return rc.Result(out.tool.Content, out.tool.IsError)
}

// pauseRequest is the JSON of pause.
type pauseRequest struct {
	Kind      string          `json:"kind"`
	Request   json.RawMessage `json:"request"`
	Required  bool            `json:"required"`
	TimeoutMS int64           `json:"timeout_ms"`
}

// hostPause opens a pending item of one of the guest's kinds: from a step
// hook, the turn ends paused after the step; from a toolCall hook, the
// call waits, and the kind's resume hook decides its result when the turn
// resumes. It is an import that acts: a retry with the same request gets
// the kept answer.
func hostPause(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if f.kind != kindStep && f.kind != kindToolCall && f.kind != kindReply {
		return in.fail(codeInvalid, "pause is for step, reply and tool_call hooks, not %s", kindName(f.kind))
	}
	if f.inNext {
		return in.fail(codePhase, "pause: the %s hook of handle %d is in next", kindName(f.kind), f.handle)
	}
	b, code := in.read(p[1], p[2], "pause request")
	if code != 0 {
		return code
	}
	if v, ok := f.takeKept("pause", b); ok {
		return in.give(p[3], p[4], v)
	}
	if code := in.buffer(p[3], p[4]); code != 0 {
		return code
	}
	if f.kind == kindToolCall {
		switch {
		case f.nextDone:
			return in.fail(codePhase, "pause: the call ran already (next); pause it before next")
		case f.paused != "":
			return in.fail(codePhase, "pause: the call waits for pending item %s already; a call pauses once", f.paused)
		}
	}
	var req pauseRequest
	if err := decodeStrict(b, &req); err != nil {
		return in.fail(codeInvalid, "pause request: %v", err)
	}
	if !slices.Contains(in.x.manifest.Pending, req.Kind) {
		return in.fail(codeDenied, "pause: the manifest's pending does not list the kind %q", req.Kind)
	}
	if !slices.ContainsFunc(in.x.regs, func(r registration) bool { return r.pending != nil && r.pending.name == req.Kind }) {
		return in.fail(codeDenied, "pause: no handler for the kind %q (register it, kind 6, in ganglion_init)", req.Kind)
	}
	if r := bytes.TrimSpace(req.Request); len(r) == 0 || r[0] != '{' {
		return in.fail(codeInvalid, "pause request: request must be a JSON object (what the human is asked)")
	}
	if req.TimeoutMS < 0 {
		return in.fail(codeInvalid, "pause request: timeout_ms %d is negative", req.TimeoutMS)
	}
	if code := in.spend("pause", "pending items", &in.spent.pause, &in.spent.pauseBytes, len(b), maxPauseCalls, maxPauseBytes); code != 0 {
		return code
	}
	it := ledger.Item{Kind: req.Kind, Request: bytes.Clone(req.Request), Required: req.Required}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	// Storing the item is the runtime's work: the guest's time does not run.
	in.park(f)
	var err error
	if f.step != nil {
		it, err = in.x.api.Pending.Pause(f.ctx, f.step, it, timeout)
	} else {
		it, err = in.x.api.Pending.PauseCall(f.ctx, f.call, it, timeout)
	}
	in.resume(f)
	if err != nil {
		return in.fail(codeFailed, "pause: %v", err)
	}
	f.paused = it.ID
	out, _ := json.Marshal(map[string]string{"id": it.ID})
	return in.answer(f, "pause", b, p[3], p[4], out)
}

// outcomeJSON is an outcome as a pending hook sets it in RESULT.
type outcomeJSON struct {
	Status   ledger.Status `json:"status"`
	Answer   string        `json:"answer"`
	Reason   string        `json:"reason"`
	Message  string        `json:"message"`
	KeepOpen bool          `json:"keep_open"`
	Fails    bool          `json:"fails"`
	// Secret keeps the action's value as the instance's secret of this
	// name (a provided API key), encrypted; it must be one the manifest
	// lists.
	Secret string `json:"secret"`
}

// pendingStatuses are the statuses an outcome may set.
var pendingStatuses = []ledger.Status{ledger.Answered, ledger.Provided, ledger.Rejected, ledger.Skipped, ledger.Timeout, ledger.Failed}

// setOutcome sets a resolve or expire hook's outcome.
func (in *instance) setOutcome(f *frame, b []byte) int32 {
	pc := f.pend
	var o outcomeJSON
	if err := decodeStrict(b, &o); err != nil {
		return in.fail(codeInvalid, "outcome: %v", err)
	}
	if !slices.Contains(pendingStatuses, o.Status) {
		return in.fail(codeInvalid, "outcome: status %q (want answered, provided, rejected, skipped, timeout or failed)", o.Status)
	}
	out := extensions.Outcome{Resolution: ledger.Resolution{Status: o.Status, Answer: o.Answer, Reason: o.Reason,
		Message: o.Message, KeepOpen: o.KeepOpen, Fails: o.Fails}}
	if o.Secret != "" {
		switch {
		case pc.phase != phaseResolve || pc.act.Value == "":
			return in.fail(codeInvalid, "outcome: secret %q: only an action with a value can provide a secret", o.Secret)
		case !slices.Contains(in.x.manifest.Secrets, o.Secret):
			return in.fail(codeDenied, "outcome: secret %q: the manifest's secrets do not list it", o.Secret)
		}
		out.Secret = &extensions.Secret{Name: o.Secret, Value: pc.act.Value}
	}
	pc.out = &out
	f.set = true
	return 0
}

// pendingField reads a field of a pending hook.
func (in *instance) pendingField(f *frame, field int32) ([]byte, int32) {
	pc := f.pend
	switch field {
	case fieldPendingPhase:
		return []byte(pc.phase), 0
	case fieldPendingItem:
		b, err := json.Marshal(pc.item)
		if err != nil {
			return nil, in.fail(codeFailed, "encode the item: %v", err)
		}
		return b, 0
	case fieldAction:
		if pc.phase != phaseResolve {
			return nil, in.fail(codeInvalid, "ACTION is read in the resolve phase, not %s", pc.phase)
		}
		b, _ := json.Marshal(map[string]string{"kind": string(pc.act.Kind), "value": pc.act.Value, "reason": pc.act.Reason})
		return b, 0
	case fieldTurnID:
		return []byte(pc.item.TurnID), 0
	case fieldCallID:
		if pc.item.CallID == "" {
			return nil, in.fail(codeNotFound, "the item paused no call")
		}
		return []byte(pc.item.CallID), 0
	}
	return nil, in.fail(codeInvalid, "field %d cannot be read in a pending hook", field)
}

// resuming reads the RESUMING field of a toolCall hook: the guest's own
// item whose resume runs this call.
func (in *instance) resuming(f *frame) ([]byte, int32) {
	if f.kind != kindToolCall {
		return nil, in.fail(codeInvalid, "RESUMING is read in tool_call hooks, not %s", kindName(f.kind))
	}
	it, ok := f.ctx.Value(resumingKey{in.x}).(*ledger.Item)
	if !ok || it.CallID != f.call.CallID() {
		return nil, in.fail(codeNotFound, "no pending item of this extension resumes the call")
	}
	b, err := json.Marshal(it)
	if err != nil {
		return nil, in.fail(codeFailed, "encode the item: %v", err)
	}
	return b, 0
}

// pausedResult is a paused call's result when the guest set none: what
// the model reads until the call's resume decides.
func (f *frame) pausedResult() *pipeline.ToolResult {
	return &pipeline.ToolResult{CallID: f.call.CallID(), Name: f.call.Name(),
		Content: fmt.Sprintf("waiting for a human (pending item %s)", f.paused)}
}

// replyLayer is the step layer of reply hook id: it has the guest read
// each step's reply as the runtime stores it, before the store commits it,
// so that an item the guest opens there commits with the reply that asks
// (the native protocol extension's WatchReply). The step then ends paused.
func (x *Extension) replyLayer(id int32) pipeline.StepFunc {
	return func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
		paused := false
		s.WatchReply(func(ctx context.Context, m *pipeline.Message) error {
			out, err := x.run(ctx, id, hookArgs{kind: kindReply, step: s, reply: m})
			paused = paused || out.paused
			return err
		})
		sr, err := s.Next(ctx)
		if err == nil && sr != nil && paused {
			sr.Stop = pipeline.FinishPaused
		}
		return sr, err
	}
}

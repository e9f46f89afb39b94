package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The window, window_apply and complete imports give a step hook what a
// native step middleware has on its context: the context window of the
// turn ([pipeline.StepContext.Window]) and the agent's model
// ([pipeline.StepContext.Models]), so that an extension that manages the
// context can be written in any language (sdk/ABI.md, "The context
// window").

// windowJSON is the answer of window.
type windowJSON struct {
	Size           int                 `json:"size"`
	ReservedOutput int                 `json:"reserved_output"`
	Tokens         int                 `json:"tokens"`
	Sent           int                 `json:"sent"`
	Messages       []windowMessageJSON `json:"messages"`
}

type windowMessageJSON struct {
	Message pipeline.Message `json:"message"`
	Tokens  int              `json:"tokens"`
	Unit    int              `json:"unit"`
	Keep    bool             `json:"keep"`
	Summary bool             `json:"summary"`
}

// windowRequest is the request of window_apply. The fields an operation
// does not take must be absent.
type windowRequest struct {
	Op      string            `json:"op"`
	IDs     []string          `json:"ids"`
	Reason  string            `json:"reason"`
	Keep    *float64          `json:"keep"`
	Summary *pipeline.Message `json:"summary"`
}

// completeRequest is the request of complete.
type completeRequest struct {
	Model           string             `json:"model"`
	System          string             `json:"system"`
	Messages        []pipeline.Message `json:"messages"`
	MaxOutputTokens int                `json:"max_output_tokens"`
	TimeoutMS       int64              `json:"timeout_ms"`
}

type completionJSON struct {
	Text  string         `json:"text"`
	Usage pipeline.Usage `json:"usage"`
}

// defaultCompleteTimeout bounds a complete call whose request gives no
// timeout_ms: the guest's own time is parked meanwhile, so the deadline
// does not bound it.
const defaultCompleteTimeout = 60 * time.Second

// Per hook call (with the calls nested in it), a guest may make at most
// maxCompleteCalls model calls: the guest's time does not run while the
// model works, so without a bound a guest that loops on complete would
// spend money until the turn ends.
const (
	maxCompleteCalls = 16
	maxCompleteBytes = 4 << 20 // bytes of requests
)

// kept is an answer of window_apply or complete that did not fit the
// guest's buffer. The operation is done once: the guest's next call of the
// same import with the same request gets the answer without doing it
// again (sdk/ABI.md, "Imports that act").
type kept struct {
	op  string
	req []byte
	val []byte
}

// stepHook returns the running step frame for handle h, or a failure code:
// the window and the model are a step middleware's.
func (in *instance) stepHook(h uint64, op string) (*frame, int32) {
	f, code := in.hook(h)
	if code != 0 {
		return nil, code
	}
	if f.kind != kindStep {
		return nil, in.fail(codeInvalid, "%s is for step hooks, not %s: the context window is the step's", op, kindName(f.kind))
	}
	return f, 0
}

// buffer checks that the guest buffer (ptr, n) lies in its memory, before
// an import acts: a bad buffer must not cost a model call.
func (in *instance) buffer(ptr, n uint64) int32 {
	if _, ok := in.mem.Read(uint32(ptr), uint32(n)); !ok {
		return in.fail(codeBounds, "buffer (%d, %d) is outside the guest's memory", uint32(ptr), uint32(n))
	}
	return 0
}

// answer gives val into the guest buffer (ptr, n), keeping it on f when it
// does not fit, for the guest's call again with the same request.
func (in *instance) answer(f *frame, op string, req []byte, ptr, n uint64, val []byte) int32 {
	code := in.give(ptr, n, val)
	if code > 0 && int(code) > int(uint32(n)) {
		f.kept = &kept{op: op, req: bytes.Clone(req), val: val}
	}
	return code
}

// takeKept returns the answer kept for a call of op with req, if the
// previous call on f was that one, and drops any other.
func (f *frame) takeKept(op string, req []byte) ([]byte, bool) {
	k := f.kept
	f.kept = nil
	if k == nil || k.op != op || !bytes.Equal(k.req, req) {
		return nil, false
	}
	return k.val, true
}

func hostWindow(in *instance, p []uint64) int32 {
	f, code := in.stepHook(p[0], "window")
	if code != 0 {
		return code
	}
	w := f.step.Window()
	// Counting is the runtime's work, done once per message (the first
	// count in a process loads the tokenizer): the guest's time does not
	// run meanwhile. Encoding the answer, which a guest may ask for again
	// and again, is charged to it.
	in.park(f)
	msgs, err := w.Messages()
	out := windowJSON{Size: w.Size(), ReservedOutput: w.ReservedOutput(), Tokens: w.Tokens(), Sent: w.Sent()}
	in.resume(f)
	if err != nil {
		return in.fail(codeFailed, "window: %v", err)
	}
	out.Messages = make([]windowMessageJSON, len(msgs))
	for i, m := range msgs {
		out.Messages[i] = windowMessageJSON{Message: m.Message, Tokens: m.Tokens, Unit: m.Unit, Keep: m.Keep, Summary: m.Summary}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return in.fail(codeFailed, "window: encode: %v", err)
	}
	return in.give(p[1], p[2], b)
}

func hostWindowApply(in *instance, p []uint64) int32 {
	f, code := in.stepHook(p[0], "window_apply")
	if code != 0 {
		return code
	}
	if f.inNext {
		// As for emit: a change made now would land inside the step
		// that runs.
		return in.fail(codePhase, "window_apply: the step hook of handle %d is in next; it can change the window once next returns", f.handle)
	}
	b, code := in.read(p[1], p[2], "window request")
	if code != 0 {
		return code
	}
	if code := in.buffer(p[3], p[4]); code != 0 {
		return code
	}
	if val, ok := f.takeKept("window_apply", b); ok {
		return in.answer(f, "window_apply", b, p[3], p[4], val)
	}
	var req windowRequest
	if err := decodeStrict(b, &req); err != nil {
		return in.fail(codeInvalid, "window request: %v", err)
	}
	if code := in.checkWindowRequest(&req); code != 0 {
		return code
	}
	w := f.step.Window()
	// As for window: the runtime's counting and storing are not the
	// guest's time.
	in.park(f)
	defer in.resume(f)
	var out any
	switch req.Op {
	case "truncate":
		if err := w.Truncate(req.IDs, req.Reason); err != nil {
			return in.fail(codeFailed, "%v", err)
		}
		out = struct{}{}
	case "reduce":
		before, after, err := w.Reduce(*req.Keep, req.Reason)
		if err != nil {
			return in.fail(codeFailed, "%v", err)
		}
		out = map[string]int{"before": before, "after": after}
	case "condense":
		s := *req.Summary
		if s.Role == "" {
			s.Role = pipeline.RoleUser
		}
		if s.Source.Type == "" {
			s.Source = pipeline.Source{Type: pipeline.SourceExtension, Extension: in.x.api.Name}
		}
		id, err := w.Condense(req.IDs, s)
		if err != nil {
			return in.fail(codeFailed, "%v", err)
		}
		out = map[string]string{"id": id}
	}
	val, _ := json.Marshal(out)
	return in.answer(f, "window_apply", b, p[3], p[4], val)
}

// checkWindowRequest refuses a request that names no known operation,
// lacks what its operation needs or has what it does not take.
func (in *instance) checkWindowRequest(r *windowRequest) int32 {
	switch r.Op {
	case "truncate":
		switch {
		case len(r.IDs) == 0:
			return in.fail(codeInvalid, "window request: truncate needs ids")
		case r.Keep != nil || r.Summary != nil:
			return in.fail(codeInvalid, "window request: truncate takes ids and reason, not keep or summary")
		}
	case "reduce":
		switch {
		case r.Keep == nil || !(*r.Keep > 0 && *r.Keep < 1):
			return in.fail(codeInvalid, "window request: reduce needs keep, a share above 0 and below 1")
		case r.IDs != nil || r.Summary != nil:
			return in.fail(codeInvalid, "window request: reduce takes keep and reason, not ids or summary")
		}
	case "condense":
		switch {
		case len(r.IDs) == 0 || r.Summary == nil:
			return in.fail(codeInvalid, "window request: condense needs ids and a summary")
		case r.Keep != nil || r.Reason != "":
			return in.fail(codeInvalid, "window request: condense takes ids and summary, not keep or reason")
		}
	default:
		return in.fail(codeInvalid, "window request: unknown op %q (want truncate, reduce or condense)", r.Op)
	}
	return 0
}

func hostComplete(in *instance, p []uint64) int32 {
	f, code := in.stepHook(p[0], "complete")
	if code != 0 {
		return code
	}
	if !in.x.manifest.Models {
		return in.fail(codeDenied, `complete: the manifest does not declare "models": true`)
	}
	b, code := in.read(p[1], p[2], "completion request")
	if code != 0 {
		return code
	}
	if code := in.buffer(p[3], p[4]); code != 0 {
		return code
	}
	if val, ok := f.takeKept("complete", b); ok {
		return in.answer(f, "complete", b, p[3], p[4], val)
	}
	var req completeRequest
	if err := decodeStrict(b, &req); err != nil {
		return in.fail(codeInvalid, "completion request: %v", err)
	}
	switch {
	case req.Model != "":
		return in.fail(codeInvalid, "complete: model %q: a WebAssembly extension can only call the agent's own model (model \"\")", req.Model)
	case len(req.Messages) == 0:
		return in.fail(codeInvalid, "completion request: no messages")
	case req.MaxOutputTokens < 0 || req.TimeoutMS < 0:
		return in.fail(codeInvalid, "completion request: max_output_tokens and timeout_ms must not be negative")
	}
	if code := in.spend("complete", "model calls", &in.spent.complete, &in.spent.completeBytes, len(b), maxCompleteCalls, maxCompleteBytes); code != 0 {
		return code
	}
	timeout := defaultCompleteTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(f.ctx, timeout)
	defer cancel()
	in.park(f)
	out, err := f.step.Models().Complete(ctx, pipeline.CompletionRequest{System: req.System, Messages: req.Messages, MaxOutputTokens: req.MaxOutputTokens})
	in.resume(f)
	if err != nil {
		return in.fail(codeFailed, "complete: %v", err)
	}
	val, _ := json.Marshal(completionJSON{Text: out.Text, Usage: out.Usage})
	return in.answer(f, "complete", b, p[3], p[4], val)
}

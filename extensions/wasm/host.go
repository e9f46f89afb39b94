package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

const hostModuleName = "ganglion"

// hostFunctionNames are the imports of module ganglion, as sdk/ABI.md lists them.
var hostFunctionNames = []string{"manifest", "register", "field", "set_field", "messages_len", "message", "emit", "next",
	"state_get", "state_set", "publish", "log", "secret", "agents_request", "agents_send", "window", "window_apply", "complete", "set_error", "last_error", "inbox",
	"pause", "file_read", "file_list", "file_write", "http_request"}

var i32 = api.ValueTypeI32

// hostModule instantiates module ganglion in the extension's runtime.
func (x *Extension) hostModule(ctx context.Context) error {
	b := x.rt.NewHostModuleBuilder(hostModuleName)
	add := func(name string, nparams int, fn func(in *instance, p []uint64) int32) {
		params := make([]api.ValueType, nparams)
		for i := range params {
			params[i] = i32
		}
		b.NewFunctionBuilder().WithGoFunction(api.GoFunc(func(ctx context.Context, stack []uint64) {
			kc, ok := ctx.(*hostCtx)
			if !ok {
				stack[0] = api.EncodeI32(codeFailed)
				return
			}
			in := kc.in
			if in.mem == nil && name != "manifest" {
				// A start function runs before the instance has its
				// memory: nothing works there (manifest answers PHASE
				// itself, and meters).
				stack[0] = api.EncodeI32(in.fail(codePhase, "%s: no import works in a start function (see sdk/ABI.md)", name))
				return
			}
			in.inHost.Add(1)
			stack[0] = api.EncodeI32(fn(in, stack[:nparams]))
			in.inHost.Add(-1)
			// A host call is charged by what it cost: the time it took
			// counts against the deadline, checked here rather than at the
			// next metering call, thousands of calls later.
			in.yield()
		}), params, []api.ValueType{i32}).Export(name)
	}
	add("manifest", 2, hostManifest)
	add("register", 3, hostRegister)
	add("field", 4, hostField)
	add("set_field", 4, hostSetField)
	add("messages_len", 1, hostMessagesLen)
	add("message", 4, hostMessage)
	add("emit", 3, hostEmit)
	add("next", 1, hostNext)
	add("state_get", 3, hostStateGet)
	add("state_set", 3, hostStateSet)
	add("publish", 5, hostPublish)
	add("log", 3, hostLog)
	add("secret", 5, hostSecret)
	add("agents_request", 5, hostAgents)
	add("agents_send", 3, hostAgents)
	add("window", 3, hostWindow)
	add("window_apply", 5, hostWindowApply)
	add("complete", 5, hostComplete)
	add("set_error", 2, hostSetError)
	add("last_error", 2, hostLastError)
	add("inbox", 2, hostInbox)
	add("pause", 5, hostPause)
	add("file_read", 5, hostFileRead)
	add("file_list", 5, hostFileList)
	add("file_write", 6, hostFileWrite)
	add("http_request", 5, hostHTTP)
	_, err := b.Instantiate(ctx)
	return err
}

// fail records msg for last_error and returns code.
func (in *instance) fail(code int32, format string, args ...any) int32 {
	in.lastErr = fmt.Sprintf(format, args...)
	return code
}

// read returns the guest bytes at (ptr, n), or a failure code.
func (in *instance) read(ptr, n uint64, what string) ([]byte, int32) {
	if int(uint32(n)) > in.x.limits.MaxPayload {
		return nil, in.fail(codeTooLarge, "%s: %d bytes is over max_payload %d", what, uint32(n), in.x.limits.MaxPayload)
	}
	b, ok := in.mem.Read(uint32(ptr), uint32(n))
	if !ok {
		return nil, in.fail(codeBounds, "%s: (%d, %d) is outside the guest's memory", what, uint32(ptr), uint32(n))
	}
	return b, 0
}

// text is read for UTF-8 text.
func (in *instance) text(ptr, n uint64, what string) (string, int32) {
	b, code := in.read(ptr, n, what)
	if code != 0 {
		return "", code
	}
	if !utf8.Valid(b) {
		return "", in.fail(codeInvalid, "%s is not valid UTF-8", what)
	}
	return string(b), 0
}

// give writes val into the guest buffer (ptr, n) if it fits, and returns
// its length. The whole buffer must lie in the guest's memory, whether
// val fits or not (sdk/ABI.md: BOUNDS).
func (in *instance) give(ptr, n uint64, val []byte) int32 {
	if len(val) > in.x.limits.MaxPayload {
		return in.fail(codeTooLarge, "the value is %d bytes, over max_payload %d", len(val), in.x.limits.MaxPayload)
	}
	buf, ok := in.mem.Read(uint32(ptr), uint32(n))
	if !ok {
		return in.fail(codeBounds, "buffer (%d, %d) is outside the guest's memory", uint32(ptr), uint32(n))
	}
	if len(val) <= len(buf) {
		copy(buf, val)
	}
	return int32(len(val))
}

// hook returns the running frame for handle h, or a failure code.
func (in *instance) hook(h uint64) (*frame, int32) {
	if in.init != nil {
		return nil, in.fail(codePhase, "no hook runs during ganglion_init")
	}
	f := in.frame(int32(uint32(h)))
	if f == nil {
		return nil, in.fail(codeStale, "handle %d names no running hook call", int32(uint32(h)))
	}
	return f, 0
}

func hostManifest(in *instance, p []uint64) int32 {
	if uint32(p[0]) == yieldArg && uint32(p[1]) == yieldArg {
		in.meterYield()
		return 0
	}
	if in.init == nil || in.init.manifest != nil {
		return in.fail(codePhase, "manifest is declared once, at the start of ganglion_init")
	}
	b, code := in.read(p[0], p[1], "manifest")
	if code != 0 {
		return code
	}
	var m Manifest
	if err := decodeStrict(b, &m); err != nil {
		return in.fail(codeInvalid, "manifest: %v", err)
	}
	if !abiSupported(m.ABI) {
		return in.fail(codeInvalid, "manifest: abi %d, %s", m.ABI, abiHost)
	}
	if m.ABI > in.init.abi {
		// The exports are shaped by ganglion_abi_version; a manifest may
		// not ask for what a newer version adds.
		return in.fail(codeInvalid, "manifest: abi %d, but ganglion_abi_version returned %d: a manifest may not be newer than the module", m.ABI, in.init.abi)
	}
	for _, h := range m.Hooks {
		if h != "turn" && h != "step" && h != "tool_call" && h != "reply" {
			return in.fail(codeInvalid, "manifest: unknown hook %q (want turn, step, tool_call or reply)", h)
		}
	}
	if f := m.newer(); f != "" && m.ABI < 2 {
		return in.fail(codeInvalid, "manifest: %s needs abi 2 (the manifest says abi %d)", f, m.ABI)
	}
	for _, k := range m.Pending {
		if err := checkPendingKind(k); err != nil {
			return in.fail(codeInvalid, "manifest: pending: %v", err)
		}
	}
	if code := in.checkManifestFiles(&m); code != 0 {
		return code
	}
	if err := checkManifestHTTP(&m); err != nil {
		return in.fail(codeInvalid, "%v", err)
	}
	in.init.manifest = &m
	return 0
}

type registerSpec struct {
	Priority *int   `json:"priority"`
	Pattern  string `json:"pattern"`
	// Resume, for a pending kind: its resume hook decides a paused
	// call's result.
	Resume bool `json:"resume"`
	toolSpec
}

func hostRegister(in *instance, p []uint64) int32 {
	st := in.init
	if st == nil {
		return in.fail(codePhase, "register is allowed only during ganglion_init")
	}
	if st.manifest == nil {
		return in.fail(codePhase, "register before manifest: declare the manifest first")
	}
	kind := int32(uint32(p[0]))
	b, code := in.read(p[1], p[2], "register spec")
	if code != 0 {
		return code
	}
	var spec registerSpec
	if len(bytes.TrimSpace(b)) > 0 {
		if err := decodeStrict(b, &spec); err != nil {
			return in.fail(codeInvalid, "register %s: %v", kindName(kind), err)
		}
	}
	r := registration{kind: kind, id: int32(len(st.regs) + 1)}
	if spec.Priority != nil {
		r.priority, r.hasPriority = *spec.Priority, true
	}
	m := st.manifest
	switch kind {
	case kindTurn, kindStep, kindToolCall, kindReply:
		if !slices.Contains(m.Hooks, kindName(kind)) {
			return in.fail(codeDenied, "register %s: the manifest does not list the hook %q", kindName(kind), kindName(kind))
		}
	case kindTool:
		if err := pipeline.ValidateToolName(spec.Name); err != nil {
			return in.fail(codeInvalid, "register tool: %v", err)
		}
		if !slices.Contains(m.Tools, spec.Name) {
			return in.fail(codeDenied, "register tool %q: the manifest does not list it", spec.Name)
		}
		t := spec.toolSpec
		r.tool = &t
	case kindEvent:
		if spec.Pattern == "" || !slices.Contains(m.Topics.Subscribe, spec.Pattern) {
			return in.fail(codeDenied, "subscribe %q: the manifest's topics.subscribe does not list it", spec.Pattern)
		}
		r.pattern = spec.Pattern
	case kindPending:
		if code := in.registerPending(st, &r, spec); code != 0 {
			return code
		}
	default:
		return in.fail(codeInvalid, "register: unknown kind %d (want 1 turn, 2 step, 3 tool_call, 4 tool, 5 event, 6 pending, 7 reply)", kind)
	}
	st.regs = append(st.regs, r)
	return r.id
}

// checkRegistrations refuses an init whose hooks have no export to run them.
func (x *Extension) checkRegistrations(st *initState) error {
	exports := x.compiled.ExportedFunctions()
	for _, r := range st.regs {
		if _, ok := exports[hookExport(r.kind)]; !ok {
			return fmt.Errorf("registers a %s but does not export %s", kindName(r.kind), hookExport(r.kind))
		}
	}
	return nil
}

func hostField(in *instance, p []uint64) int32 {
	field := int32(uint32(p[1]))
	if field == fieldConfig {
		// The same everywhere, also in ganglion_init, where ctx is 0.
		if in.init == nil {
			if _, code := in.hook(p[0]); code != 0 {
				return code
			}
		}
		return in.give(p[2], p[3], in.x.config)
	}
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	var val []byte
	switch {
	case f.pend != nil && field != fieldAgent && field != fieldInstance && field != fieldResult:
		v, code := in.pendingField(f, field)
		if code != 0 {
			return code
		}
		val = v
	case field == fieldReply && f.reply != nil:
		b, err := json.Marshal(f.reply)
		if err != nil {
			return in.fail(codeFailed, "encode the reply: %v", err)
		}
		val = b
	case field == fieldResuming:
		v, code := in.resuming(f)
		if code != 0 {
			return code
		}
		val = v
	case field == fieldAgent:
		val = []byte(in.x.api.Agent)
	case field == fieldInstance:
		val = []byte(f.instanceKey())
	case field == fieldTurnID && f.turn != nil:
		val = []byte(f.turn.TurnID())
	case field == fieldTurnID && f.step != nil:
		val = []byte(f.step.TurnID())
	case field == fieldTurnID && f.call != nil:
		val = []byte(f.call.TurnID())
	case field == fieldInput && f.turn != nil:
		val, _ = json.Marshal(f.turn.Input())
	case field == fieldInput && f.step != nil:
		val, _ = json.Marshal(f.step.Input())
	case field == fieldInputText && f.turn != nil:
		val = []byte(f.turn.Input().Text)
	case field == fieldInputText && f.step != nil:
		val = []byte(f.step.Input().Text)
	case field == fieldStep && f.step != nil:
		val = strconv.AppendInt(nil, int64(f.step.Index()), 10)
	case field == fieldStep && f.call != nil:
		val = strconv.AppendInt(nil, int64(f.call.Step()), 10)
	case field == fieldToolName && f.call != nil:
		val = []byte(f.call.Name())
	case field == fieldToolArgs && f.call != nil:
		val = f.call.Arguments()
	case field == fieldCallID && f.call != nil:
		val = []byte(f.call.CallID())
	case field == fieldIdempotencyKey && f.call != nil:
		val = []byte(f.call.IdempotencyKey())
	case field == fieldTools && f.step != nil:
		names := []string{}
		for _, t := range f.step.Tools().Tools() {
			names = append(names, t.Name)
		}
		val, _ = json.Marshal(names)
	case field == fieldResult:
		v, code := in.resultJSON(f)
		if code != 0 {
			return code
		}
		val = v
	case field == fieldEventTopic && f.ev != nil:
		val = []byte(f.ev.Topic)
	case field == fieldEventData && f.ev != nil:
		v, err := json.Marshal(f.ev.Data)
		if err != nil {
			return in.fail(codeFailed, "event data: %v", err)
		}
		val = v
	default:
		return in.fail(codeInvalid, "field %d cannot be read in a %s hook", field, kindName(f.kind))
	}
	return in.give(p[2], p[3], val)
}

type turnResultJSON struct {
	FinishReason pipeline.FinishReason `json:"finish_reason"`
	Response     pipeline.Message      `json:"response"`
}

type stepResultJSON struct {
	Stop     pipeline.FinishReason `json:"stop"`
	Continue bool                  `json:"continue"`
}

type toolResultJSON struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

func (in *instance) resultJSON(f *frame) ([]byte, int32) {
	var v any
	switch {
	case f.kind == kindTurn && f.turnRes != nil:
		v = turnResultJSON{f.turnRes.FinishReason, f.turnRes.Response}
	case f.kind == kindStep && f.stepRes != nil:
		v = stepResultJSON{f.stepRes.Stop, f.stepRes.Continue}
	case (f.kind == kindToolCall || f.kind == kindTool || f.kind == kindPending) && f.toolRes != nil:
		v = toolResultJSON{f.toolRes.Content, f.toolRes.IsError}
	case f.kind == kindPending && f.pend.out != nil:
		r := f.pend.out.Resolution
		v = outcomeJSON{Status: r.Status, Answer: r.Answer, Reason: r.Reason, Message: r.Message, KeepOpen: r.KeepOpen, Fails: r.Fails}
	default:
		return nil, in.fail(codeNotFound, "no result yet: call next or set one")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, in.fail(codeFailed, "encode the result: %v", err)
	}
	return b, 0
}

// decodeStrict decodes JSON refusing unknown fields, and anything but
// white space after the value (Decoder.More would take a stray '}' or ']'
// for the end).
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func hostSetField(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if f.inNext {
		// A hook nested in f's next (a re-entry of this instance) names
		// f: what it wrote would be overwritten when next returns.
		return in.fail(codePhase, "set_field: the %s hook of handle %d is in next; its context can be written once next returns", kindName(f.kind), f.handle)
	}
	field := int32(uint32(p[1]))
	b, code := in.read(p[2], p[3], "value")
	if code != 0 {
		return code
	}
	switch {
	case field == fieldInput && f.kind == kindTurn:
		var ev pipeline.InputEvent
		if err := decodeStrict(b, &ev); err != nil {
			return in.fail(codeInvalid, "input: %v", err)
		}
		f.turn.SetInput(ev)
		in.fillInbox(f)
	case field == fieldToolArgs && f.kind == kindToolCall:
		if !json.Valid(b) {
			return in.fail(codeInvalid, "tool arguments are not valid JSON")
		}
		f.call.SetArguments(bytes.Clone(b))
	case field == fieldTools && f.kind == kindStep:
		var keep []string
		if err := json.Unmarshal(b, &keep); err != nil {
			return in.fail(codeInvalid, "tools: want a JSON array of tool names: %v", err)
		}
		f.step.Tools().Filter(func(t pipeline.ToolSpec) bool { return slices.Contains(keep, t.Name) })
	case field == fieldToolArgs && f.kind == kindPending && f.pend.phase == phaseResume:
		if f.nextDone {
			return in.fail(codePhase, "tool arguments: the call ran already (next)")
		}
		if !json.Valid(b) {
			return in.fail(codeInvalid, "tool arguments are not valid JSON")
		}
		f.pend.args = bytes.Clone(b)
	case field == fieldResult:
		return in.setResult(f, b)
	default:
		return in.fail(codeInvalid, "field %d cannot be written in a %s hook", field, kindName(f.kind))
	}
	return 0
}

func (in *instance) setResult(f *frame, b []byte) int32 {
	switch f.kind {
	case kindTurn:
		var r turnResultJSON
		if err := decodeStrict(b, &r); err != nil {
			return in.fail(codeInvalid, "turn result: %v", err)
		}
		if r.Response.Role == "" {
			r.Response.Role = pipeline.RoleAssistant
		}
		if r.Response.Source.Type == "" {
			r.Response.Source = pipeline.Source{Type: pipeline.SourceExtension, Extension: in.x.api.Name}
		}
		res := &pipeline.TurnResult{FinishReason: r.FinishReason, Response: r.Response}
		if f.turnRes != nil {
			res.TurnID, res.Steps, res.Usage = f.turnRes.TurnID, f.turnRes.Steps, f.turnRes.Usage
		}
		f.turnRes, f.set = res, true
	case kindStep:
		if f.stepRes == nil {
			return in.fail(codePhase, "a step result can be changed only after next")
		}
		var r stepResultJSON
		if err := decodeStrict(b, &r); err != nil {
			return in.fail(codeInvalid, "step result: %v", err)
		}
		f.stepRes.Stop, f.stepRes.Continue = r.Stop, r.Continue
		f.set = true
	case kindToolCall, kindTool:
		var r toolResultJSON
		if err := decodeStrict(b, &r); err != nil {
			return in.fail(codeInvalid, "tool result: %v", err)
		}
		f.toolRes = &pipeline.ToolResult{CallID: f.call.CallID(), Name: f.call.Name(), Content: r.Content, IsError: r.IsError}
		f.set = true
	case kindPending:
		if f.pend.phase != phaseResume {
			return in.setOutcome(f, b)
		}
		var r toolResultJSON
		if err := decodeStrict(b, &r); err != nil {
			return in.fail(codeInvalid, "tool result: %v", err)
		}
		f.toolRes = &pipeline.ToolResult{CallID: f.pend.item.CallID, Content: r.Content, IsError: r.IsError}
		f.set = true
	default:
		return in.fail(codeInvalid, "a %s hook has no result", kindName(f.kind))
	}
	return 0
}

func hostMessagesLen(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	conv := f.conversation()
	if conv == nil {
		return in.fail(codeInvalid, "a %s hook has no conversation", kindName(f.kind))
	}
	return int32(conv.Len())
}

func hostMessage(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	conv := f.conversation()
	if conv == nil {
		return in.fail(codeInvalid, "a %s hook has no conversation", kindName(f.kind))
	}
	i, n := int(int32(uint32(p[1]))), conv.Len()
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return in.fail(codeNotFound, "message %d: the conversation has %d", int32(uint32(p[1])), n)
	}
	b, err := json.Marshal(conv.At(i))
	if err != nil {
		return in.fail(codeFailed, "encode message %d: %v", i, err)
	}
	return in.give(p[2], p[3], b)
}

func hostEmit(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if f.kind != kindTurn && f.kind != kindStep {
		return in.fail(codeInvalid, "emit is for turn and step hooks, not %s", kindName(f.kind))
	}
	if f.inNext {
		// A hook nested in f's next names f: a message added now would
		// land inside the step that runs (between a tool call and its
		// result, say).
		return in.fail(codePhase, "emit: the %s hook of handle %d is in next; it can emit once next returns", kindName(f.kind), f.handle)
	}
	b, code := in.read(p[1], p[2], "message event")
	if code != 0 {
		return code
	}
	if code := in.spend("emit", "message events", &in.spent.emit, &in.spent.emitBytes, len(b), maxEmitCalls, maxEmitBytes); code != 0 {
		return code
	}
	var ev pipeline.MessageEvent
	if err := decodeStrict(b, &ev); err != nil {
		return in.fail(codeInvalid, "message event: %v", err)
	}
	if ev.Message.Source.Type == "" {
		ev.Message.Source = pipeline.Source{Type: pipeline.SourceExtension, Extension: in.x.api.Name}
	}
	if err := f.conversation().Apply(ev); err != nil {
		return in.fail(codeFailed, "%v", err)
	}
	return 0
}

func hostNext(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if f.kind == kindTool || f.kind == kindEvent || f.kind == kindReply {
		return in.fail(codeInvalid, "a %s hook has no next", kindName(f.kind))
	}
	if f.kind == kindPending && f.pend.phase != phaseResume {
		return in.fail(codeInvalid, "a pending hook calls next only to resume a paused call, not in the %s phase", f.pend.phase)
	}
	if f.paused != "" && f.kind == kindToolCall {
		return in.fail(codePhase, "next: the call waits for pending item %s; it runs when the turn resumes", f.paused)
	}
	if f.nextDone {
		f.nextTwice = true
		return in.fail(codePhase, "next called more than once")
	}
	f.nextDone = true
	in.park(f)
	f.inNext = true
	f.runNext()
	f.inNext = false
	in.resume(f)
	if !in.isBroken() {
		in.fillInbox(f)
	}
	if f.nextErr != nil {
		return in.fail(codeFailed, "%v", f.nextErr)
	}
	return 0
}

// runNext runs the rest of the chain. A panic in it (a native layer's, or
// a guest's raised again) must not unwind through the guest's frames,
// where wazero would turn it into a trap of this hook: it is kept, the
// guest sees next fail, and the panic is raised again once the guest has
// returned, so the pipeline blames the layer that panicked.
func (f *frame) runNext() {
	defer func() {
		if v := recover(); v != nil {
			f.nextPanic = &panicked{v}
			f.nextErr = fmt.Errorf("panic: %v", v)
		}
	}()
	ctx := &f.next
	switch f.kind {
	case kindTurn:
		f.turnRes, f.nextErr = f.turn.Next(ctx)
	case kindStep:
		f.stepRes, f.nextErr = f.step.Next(ctx)
	case kindToolCall:
		f.toolRes, f.nextErr = f.call.Next(ctx)
	case kindPending:
		if f.pend.args != nil {
			f.toolRes, f.nextErr = f.pend.rc.RunWith(ctx, f.pend.args)
		} else {
			f.toolRes, f.nextErr = f.pend.rc.Run(ctx)
		}
	}
}

// panicked holds a panic's value.
type panicked struct{ value any }

func (in *instance) stateAllowed() int32 {
	if !in.x.manifest.State {
		return in.fail(codeDenied, `state: the manifest does not declare "state": true`)
	}
	return 0
}

func hostStateGet(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if code := in.stateAllowed(); code != 0 {
		return code
	}
	b, err := in.x.api.State.Get(f.ctx, f.instanceKey())
	if err != nil {
		return in.fail(codeFailed, "%v", err)
	}
	if b == nil {
		return in.fail(codeNotFound, "no state for instance %q", f.instanceKey())
	}
	return in.give(p[1], p[2], b)
}

func hostStateSet(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if code := in.stateAllowed(); code != 0 {
		return code
	}
	b, code := in.read(p[1], p[2], "state")
	if code != 0 {
		return code
	}
	var v json.RawMessage
	if len(b) > 0 {
		v = bytes.Clone(b)
	}
	if err := in.x.api.State.Set(f.ctx, f.instanceKey(), v); err != nil {
		return in.fail(codeFailed, "%v", err)
	}
	return 0
}

func hostPublish(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	topic, code := in.text(p[1], p[2], "topic")
	if code != 0 {
		return code
	}
	if !slices.ContainsFunc(in.x.manifest.Topics.Publish, func(pat string) bool { return events.Match(pat, topic) }) {
		return in.fail(codeDenied, "publish %q: no pattern of the manifest's topics.publish matches it", topic)
	}
	b, code := in.read(p[3], p[4], "event data")
	if code != 0 {
		return code
	}
	if code := in.spend("publish", "events", &in.spent.publish, &in.spent.publishBytes, len(b), maxPublishCalls, maxPublishBytes); code != 0 {
		return code
	}
	var data any // no data when data_len is 0
	if len(b) > 0 {
		if !json.Valid(b) {
			return in.fail(codeInvalid, "event data is not valid JSON")
		}
		data = json.RawMessage(bytes.Clone(b))
	}
	in.x.api.Events.Publish(topic, f.instanceKey(), data)
	return 0
}

func hostLog(in *instance, p []uint64) int32 {
	msg, code := in.text(p[1], p[2], "log message")
	if code != 0 {
		return code
	}
	if code := in.spend("log", "records", &in.spent.log, &in.spent.logBytes, len(msg), maxLogRecords, maxLogBytes); code != 0 {
		return code
	}
	if !in.x.allowLog(len(msg)) {
		return in.fail(codeTooLarge, "log: over the extension's rate limit of %d bytes a second", logRate)
	}
	ctx := context.Background()
	if n := len(in.frames); n > 0 {
		ctx = in.frames[n-1].ctx
	}
	logger := in.x.logger
	if in.x.api != nil {
		logger = in.x.api.Logger
	}
	logger.Log(ctx, slog.Level(int32(uint32(p[0]))), msg)
	return 0
}

func hostSecret(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	name, code := in.text(p[1], p[2], "secret name")
	if code != 0 {
		return code
	}
	if !slices.Contains(in.x.manifest.Secrets, name) {
		return in.fail(codeDenied, "secret %q: the manifest does not list it", name)
	}
	v, found, err := in.x.api.Secrets.Get(f.ctx, f.instanceKey(), name)
	if errors.Is(err, extensions.ErrNotGranted) {
		return in.fail(codeDenied, "%v", err)
	}
	if err != nil {
		return in.fail(codeFailed, "%v", err)
	}
	if !found {
		return in.fail(codeNotFound, "secret %q was not provided to instance %q", name, f.instanceKey())
	}
	return in.give(p[3], p[4], []byte(v))
}

// agentRequest is the JSON of agents_request and agents_send.
type agentRequest struct {
	Agent     string         `json:"agent"`
	Instance  string         `json:"instance"`
	Text      string         `json:"text"`
	TimeoutMS int64          `json:"timeout_ms"`
	Metadata  map[string]any `json:"metadata"`
}

// hostAgents is agents_request (5 arguments) and agents_send (3): a call
// to another agent through the runtime's orchestrator, for an agent the
// manifest lists and the config grants. The guest's time does not run
// while the other agent works.
func hostAgents(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	if f.kind != kindTurn && f.kind != kindStep {
		return in.fail(codeInvalid, "a %s hook cannot call agents", kindName(f.kind))
	}
	b, code := in.read(p[1], p[2], "agent request")
	if code != 0 {
		return code
	}
	var req agentRequest
	if err := decodeStrict(b, &req); err != nil {
		return in.fail(codeInvalid, "agent request: %v", err)
	}
	if !slices.Contains(in.x.manifest.Agents, req.Agent) {
		return in.fail(codeDenied, "call agent %q: the manifest's agents do not list it", req.Agent)
	}
	var agents pipeline.Agents
	if f.turn != nil {
		agents = f.turn.Agents()
	} else {
		agents = f.step.Agents()
	}
	opts := pipeline.AgentCallOptions{InstanceKey: req.Instance, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, Metadata: req.Metadata}
	in.park(f)
	defer in.resume(f)
	if len(p) == 3 { // agents_send
		if err := agents.Send(f.ctx, req.Agent, req.Text, opts); err != nil {
			return in.fail(codeFailed, "%v", err)
		}
		return 0
	}
	text, err := agents.Request(f.ctx, req.Agent, req.Text, opts)
	if err != nil {
		return in.fail(codeFailed, "%v", err)
	}
	out, _ := json.Marshal(map[string]string{"text": text, "finish_reason": string(pipeline.FinishText)})
	return in.give(p[3], p[4], out)
}

func hostSetError(in *instance, p []uint64) int32 {
	msg, code := in.text(p[0], p[1], "error message")
	if code != 0 {
		return code
	}
	in.guestErr = msg
	return 0
}

func hostLastError(in *instance, p []uint64) int32 {
	return in.give(p[0], p[1], []byte(in.lastErr))
}

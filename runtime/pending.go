package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/store"
)

var (
	// ErrPaused is returned for input to an instance that waits for a human.
	ErrPaused = errors.New("paused")
	// ErrTaskFailed is wrapped by a resume turn's error when a required
	// dependency was rejected or never provided.
	ErrTaskFailed = errors.New("task failed")
)

type kindKey struct{ ext, kind string }

// pendingHost is an agent's side of extensions.PendingHost.
type pendingHost struct{ a *agent }

var _ extensions.PendingHost = pendingHost{}

func (h pendingHost) HandlePending(ext string, k extensions.PendingKind) error {
	key := kindKey{ext, k.Name}
	if _, dup := h.a.kinds[key]; dup {
		return fmt.Errorf("extension %q handles pending items of kind %q already", ext, k.Name)
	}
	h.a.kinds[key] = k
	return nil
}

func (h pendingHost) CreatePending(ctx context.Context, ext string, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	a := h.a
	ts, ok := turnhost.Get(s).(*turnState)
	if !ok || ts.agent != a {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: the step is not a running turn of agent %q", ext, a.name)
	}
	if _, ok := a.kinds[kindKey{ext, it.Kind}]; !ok {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: it handles no pending items of kind %q (call Pending.Handle in Register)", ext, it.Kind)
	}
	it.Extension, it.Agent, it.Instance, it.TurnID, it.Step = ext, a.name, ts.inst.key, ts.turnID, s.Index()
	if it.ID == "" && a.rt.tape != nil {
		it.ID = a.rt.newID("p-", "pending/"+a.name+"/"+ts.inst.key+"/"+ts.turnID+"/"+strconv.Itoa(s.Index()))
	}
	it.Trace = ts.trace
	if n := ts.inst.hist.Len(); n > 0 {
		it.Checkpoint = ts.inst.hist.At(n - 1).Msg.ID
	}
	if timeout > 0 {
		it.ExpiresAt = a.rt.now().Add(timeout)
	}
	// The item is stored with the history it points to, in one commit: a
	// crash keeps both (the instance is paused) or neither.
	created, err := a.rt.ledger.CreateWith(ts.storeCtx, it, func(r store.PendingRecord) error {
		ts.inst.unsaved.Pending = append(ts.inst.unsaved.Pending, r)
		return ts.inst.flush(ts.storeCtx, a.rt.store)
	})
	if err != nil {
		return ledger.Item{}, err
	}
	ts.inst.paused[created.ID] = created.TurnID
	a.rt.wakeExpiry()
	return created, nil
}

func (h pendingHost) CreatePendingCall(ctx context.Context, ext string, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	a := h.a
	ts, ok := turnhost.Get(c).(*turnState)
	if !ok || ts.agent != a {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: the call is not in a running turn of agent %q", ext, a.name)
	}
	if _, ok := a.kinds[kindKey{ext, it.Kind}]; !ok {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: it handles no pending items of kind %q (call Pending.Handle in Register)", ext, it.Kind)
	}
	it.Extension, it.Agent, it.Instance, it.TurnID, it.Step, it.CallID = ext, a.name, ts.inst.key, ts.turnID, c.Step(), c.CallID()
	if it.ID == "" && a.rt.tape != nil {
		it.ID = a.rt.newID("p-", "pending/"+a.name+"/"+ts.inst.key+"/"+ts.turnID+"/"+c.CallID())
	}
	it.Trace = ts.trace
	if timeout > 0 {
		it.ExpiresAt = a.rt.now().Add(timeout)
	}
	// The model's request for the call is stored already (the step
	// commits it before any tool runs); calls of one step may run in
	// parallel, so the instance's state is changed under the
	// conversation's lock.
	ts.conv.mu.Lock()
	defer ts.conv.mu.Unlock()
	if n := ts.inst.hist.Len(); n > 0 {
		it.Checkpoint = ts.inst.hist.At(n - 1).Msg.ID
	}
	created, err := a.rt.ledger.Create(ts.storeCtx, it)
	if err != nil {
		return ledger.Item{}, err
	}
	ts.inst.paused[created.ID] = created.TurnID
	if ts.awaits == nil {
		ts.awaits = map[string]string{}
	}
	ts.awaits[created.CallID] = created.ID
	ts.pauseAfter.Store(true)
	a.rt.wakeExpiry()
	return created, nil
}

// resumeCalls gives the kinds of the resumed items ids that paused tool
// calls the chance to decide the calls' results (running them if
// approved) before the model is called again.
func (a *agent) resumeCalls(ctx context.Context, ts *turnState, t *pipeline.TurnContext, ids []string) error {
	for _, id := range ids {
		it, err := a.rt.ledger.Get(ts.storeCtx, id)
		if err != nil {
			return err
		}
		k, ok := a.kinds[kindKey{it.Extension, it.Kind}]
		if it.CallID == "" || !ok || k.Resume == nil {
			continue
		}
		rc := &resumeCall{a: a, ts: ts, t: t, it: it}
		if err := k.Resume(ctx, it, rc); err != nil {
			return fmt.Errorf("resume the call %s of pending item %s: %w", it.CallID, it.ID, err)
		}
	}
	return a.commitStep(ts) // a resumed call_agent delegates
}

// pauseHook is pausing's part in every turn (see turnHook).
type pauseHook struct{}

// load reads which of the instance's pending items are open.
func (pauseHook) load(ctx context.Context, inst *instance) (map[string]string, error) {
	return inst.loadPaused(ctx, inst.agent.rt.ledger)
}

func (pauseHook) loaded(context.Context, *instance) error   { return nil }
func (pauseHook) beginTurn(*turnState, pipeline.InputEvent) {}

// resumed fails a resume turn whose item's dependency was rejected or
// never provided, and lets the kinds of the resumed items that paused
// tool calls decide the calls' results.
func (pauseHook) resumed(ctx context.Context, ts *turnState, t *pipeline.TurnContext, in pipeline.InputEvent) error {
	if reason, _ := in.Metadata["failed"].(string); reason != "" {
		return fmt.Errorf("%w: %s", ErrTaskFailed, reason)
	}
	if ids, _ := in.Metadata["pending"].([]string); len(ids) > 0 {
		return ts.agent.resumeCalls(ctx, ts, t, ids)
	}
	return nil
}

func (pauseHook) stage(*turnState) error      { return nil }
func (pauseHook) committed(*turnState, error) {}
func (pauseHook) endTurn(_ *turnState, _ pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error) {
	return res, err
}

// keep adds to keep what the instance's open pending items need: the
// message each checkpoints, and the tool call each paused.
func (pauseHook) keep(ts *turnState, keep map[string]bool) error {
	a := ts.agent
	items, err := a.rt.ledger.List(ts.storeCtx, ledger.Filter{Agent: a.name, Instance: ts.inst.key, Open: true})
	if err != nil {
		return err
	}
	calls := map[string]bool{}
	for _, it := range items {
		keep[it.Checkpoint] = true
		if it.CallID != "" {
			calls[it.CallID] = true
		}
	}
	if len(calls) == 0 {
		return nil
	}
	h := &ts.inst.hist
	for _, p := range h.Positions() {
		m := h.At(p).Msg
		for _, c := range m.ToolCalls {
			if calls[c.ID] {
				keep[m.ID] = true
			}
		}
	}
	return nil
}

// metaEdited marks the result of a tool call that ran with arguments a
// human edited (an approval answered with an edit; see [Runtime.Edit] and
// extensions.ResumeCall.RunWith). Its value is those arguments, as JSON
// text; the model's own arguments stay in the call of the assistant
// message the result answers.
const metaEdited = "edited_arguments"

// resumeCall is extensions.ResumeCall.
type resumeCall struct {
	a  *agent
	ts *turnState
	t  *pipeline.TurnContext
	it ledger.Item
	// edited holds the arguments RunWith ran the call with, for Result.
	edited    json.RawMessage
	ranEdited bool
}

// findCall finds tool call id in the history, and the ID of its message.
func (in *instance) findCall(id string) (pipeline.ToolCall, string, bool) {
	h := &in.hist
	for i := h.Len() - 1; i >= 0; i-- {
		m := h.At(i).Msg
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c, m.ID, true
			}
		}
	}
	return pipeline.ToolCall{}, "", false
}

func (rc *resumeCall) Run(ctx context.Context) (*pipeline.ToolResult, error) {
	return rc.run(ctx, nil, false)
}

func (rc *resumeCall) RunWith(ctx context.Context, args json.RawMessage) (*pipeline.ToolResult, error) {
	// As the human wrote them, also if an encoder escaped <, > and & on
	// their way: the model reads them.
	if b, err := plainjson.Compact(args); err == nil {
		args = b
	} else {
		args = bytes.Clone(args) // the tool's check reports it to the model
	}
	return rc.run(ctx, args, true)
}

// run runs the paused call, with args in place of the model's arguments
// if edited.
func (rc *resumeCall) run(ctx context.Context, args json.RawMessage, edited bool) (*pipeline.ToolResult, error) {
	c, msgID, ok := rc.ts.inst.findCall(rc.it.CallID)
	if !ok {
		return nil, fmt.Errorf("the call %s is not in the history", rc.it.CallID)
	}
	if edited {
		c.Arguments = args // a copy of the call: the history keeps the model's
		rc.edited, rc.ranEdited = args, true
	}
	ts := rc.ts
	ts.step.Init(rc.t, rc.it.Step, rc.a.stepTools(ctx, ts.inst)) // an approved MCP call runs too
	if err := ts.inst.loadSecrets(ts.storeCtx); err != nil {
		return nil, err
	}
	var out pipeline.ToolResult
	err := rc.a.runTool(ctx, ts, &ts.step, &ts.call, msgID, c, &out)
	return &out, err
}

func (rc *resumeCall) Result(content string, isError bool) error {
	ts := rc.ts
	if rc.ranEdited {
		// Both versions stay in the history: the model's call in its
		// message, the arguments that ran with the result.
		content = "called with arguments a human edited: " + string(rc.edited) + "\n" + content
	}
	// A kind may decide the result without Run, before anything in this
	// process read the instance's secrets: read them for the mask.
	if err := ts.inst.loadSecrets(ts.storeCtx); err != nil {
		return err
	}
	ts.conv.mu.Lock()
	defer ts.conv.mu.Unlock()
	h := &ts.inst.hist
	for i := h.Len() - 1; i >= 0; i-- {
		m := h.At(i).Msg
		if m.Role == pipeline.RoleTool && m.ToolCallID == rc.it.CallID {
			r := *m
			r.Content, r.IsError = ts.inst.secrets.redactor.Redact(content), isError
			// It is the call's outcome now, no longer what it waits for.
			r.Metadata = maps.Clone(m.Metadata)
			delete(r.Metadata, metaAwaits)
			delete(r.Metadata, MetaInterrupted)
			if rc.ranEdited {
				if r.Metadata == nil {
					r.Metadata = map[string]any{}
				}
				r.Metadata[metaEdited] = ts.inst.secrets.redactor.Redact(string(rc.edited))
			}
			return ts.conv.applyLocked(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: r})
		}
	}
	return fmt.Errorf("the call %s has no result in the history to replace", rc.it.CallID)
}

// Pending lists the pending items that match f.
func (r *Runtime) Pending(ctx context.Context, f ledger.Filter) ([]ledger.Item, error) {
	if !r.gate.enter() {
		return nil, ErrClosed
	}
	defer r.gate.leave()
	return r.ledger.List(ctx, f)
}

// PendingItem returns the pending item with id.
func (r *Runtime) PendingItem(ctx context.Context, id string) (ledger.Item, error) {
	if !r.gate.enter() {
		return ledger.Item{}, ErrClosed
	}
	defer r.gate.leave()
	return r.ledger.Get(ctx, id)
}

// Answer answers the question (or approval) id. If no other item of its
// turn is open, it runs the resume turn and returns its result; else the
// result is nil. An unknown or resolved item, or an answer the item
// refuses, is an error, and nothing changes.
func (r *Runtime) Answer(ctx context.Context, id, answer string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionAnswer, Value: answer})
}

// Edit approves the tool call that approval id paused, to run once with
// args, a JSON object matching the tool's schema; see [Runtime.Answer].
// Other args, or an item that takes no edit, are refused with
// [extensions.ErrInvalidAction], changing nothing.
func (r *Runtime) Edit(ctx context.Context, id string, args json.RawMessage) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionEdit, Value: string(args)})
}

// Skip skips the optional question id; see [Runtime.Answer].
func (r *Runtime) Skip(ctx context.Context, id string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionSkip})
}

// Provide gives the dependency id its value; see [Runtime.Answer]. A
// secret is sealed, and reaches only tools' environments.
func (r *Runtime) Provide(ctx context.Context, id, value string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionProvide, Value: value})
}

// Reject refuses the dependency (or approval) id; see [Runtime.Answer]. A
// required dependency's resume turn then fails with [ErrTaskFailed].
func (r *Runtime) Reject(ctx context.Context, id, reason string) (*pipeline.TurnResult, error) {
	return r.act(ctx, id, extensions.Action{Kind: extensions.ActionReject, Reason: reason})
}

// act applies a human's action to item id under its instance's turn slot,
// so that it is ordered with the instance's turns and other actions; in a
// cluster, on the process that owns the instance.
func (r *Runtime) act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	return r.place.Act(ctx, id, act)
}

// actHere is act in this process.
func (r *Runtime) actHere(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	if !r.gate.enter() {
		return nil, ErrClosed
	}
	defer r.gate.leave()
	it, a, inst, done, err := r.holdItem(ctx, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if !it.Open {
		return nil, fmt.Errorf("pending item %q: %w (it is %s)", id, ledger.ErrResolved, it.Status)
	}
	if err := a.available(); err != nil {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	k, ok := a.kinds[kindKey{it.Extension, it.Kind}]
	if !ok {
		return nil, fmt.Errorf("pending item %q: agent %q has no extension %q handling %s items (is it still in the config?)", id, a.name, it.Extension, it.Kind)
	}
	if act.Kind == extensions.ActionEdit {
		if err := a.checkEdit(inst, it, k, json.RawMessage(act.Value)); err != nil {
			return nil, fmt.Errorf("pending item %q: %w", id, err)
		}
	}
	out, err := k.Resolve(ctx, it, act)
	if err != nil {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	if r.tape != nil {
		text := act.Value
		if act.Kind == extensions.ActionReject {
			text = act.Reason
		}
		r.tape.Input(tape.Input{Op: string(act.Kind), ID: id, Text: text, Secret: out.Secret != nil})
	}
	return a.settle(ctx, inst, it, out)
}

// checkEdit checks an edit of item it before its kind sees it: the item
// paused a tool call that the kind can run again (it has a Resume), and
// args fit the call's tool. The runtime checks, not the kind: the schema
// is the agent's, and no kind can forget to check (see RATIONALE.md).
func (a *agent) checkEdit(inst *instance, it ledger.Item, k extensions.PendingKind, args json.RawMessage) error {
	if it.CallID == "" || k.Resume == nil {
		return fmt.Errorf("%w: a %s item cannot be edited: only an item that holds a paused tool call can", extensions.ErrInvalidAction, it.Kind)
	}
	c, _, ok := inst.findCall(it.CallID)
	if !ok {
		return fmt.Errorf("the call %s is not in the history", it.CallID)
	}
	tools := a.stepTools(context.Background(), inst)
	i := slices.IndexFunc(tools, func(t pipeline.Tool) bool { return t.Name == c.Name })
	if i < 0 {
		return fmt.Errorf("%w: the call's tool %q is not one of agent %q's tools", extensions.ErrInvalidAction, c.Name, a.name)
	}
	if err := tool.CheckArguments(tools[i], args); err != nil {
		return fmt.Errorf("%w: the edited arguments of the %s call: %v", extensions.ErrInvalidAction, c.Name, err)
	}
	return nil
}

// holdItem acquires the turn slot of the instance item id belongs to and
// returns the item as it is then, when nothing else acts on the instance.
// The caller calls done.
func (r *Runtime) holdItem(ctx context.Context, id string) (ledger.Item, *agent, *instance, func(), error) {
	it, err := r.ledger.Get(ctx, id)
	if err != nil {
		return ledger.Item{}, nil, nil, nil, err
	}
	a, inst, done, err := r.holdInstance(ctx, "pending item "+strconv.Quote(id), it.Agent, it.Instance)
	if err != nil {
		return ledger.Item{}, nil, nil, nil, err
	}
	if it, err = r.ledger.Get(ctx, id); err != nil {
		done()
		return ledger.Item{}, nil, nil, nil, err
	}
	return it, a, inst, done, nil
}

// holdInstance acquires the turn slot of agent's instance key and loads
// it; what names the caller's business in errors.
func (r *Runtime) holdInstance(ctx context.Context, what, agentName, key string) (*agent, *instance, func(), error) {
	a, ok := r.agents.byName[agentName]
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s belongs to agent %q, which the config does not define", what, agentName)
	}
	inst := r.instance(a, key)
	if err := inst.slot.Acquire(ctx); err != nil {
		r.unhold(inst)
		return nil, nil, nil, fmt.Errorf("%s: waiting for instance %q: %w", what, key, err)
	}
	done := func() { inst.slot.Release(); r.unhold(inst) }
	if err := r.place.Own(ctx, (*instanceView)(inst)); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := inst.load(ctx, r.store); err != nil {
		done()
		return nil, nil, nil, err
	}
	return a, inst, done, nil
}

// settle records out for the open item it and, if that closed the last
// open item of its turn, resumes the instance. The caller holds the
// instance's slot.
func (a *agent) settle(ctx context.Context, inst *instance, it ledger.Item, out extensions.Outcome) (*pipeline.TurnResult, error) {
	r := a.rt
	storeCtx := context.WithoutCancel(ctx)
	if out.Secret != nil {
		if err := r.putSecret(storeCtx, a.name, inst.key, out.Secret.Name, out.Secret.Value); err != nil {
			return nil, fmt.Errorf("pending item %q: %w", it.ID, err)
		}
		inst.secrets.drop()
	}
	res := out.Resolution
	res.Agent, res.Instance = it.Agent, it.Instance
	done, err := r.ledger.Resolve(storeCtx, it.ID, res)
	if err != nil {
		return nil, err
	}
	if done.Open {
		return nil, nil // a required question that timed out: it still waits
	}
	delete(inst.paused, it.ID)
	return a.resumeIfReady(ctx, inst, it.TurnID)
}

// resumeIfReady resumes the paused turn turnID of inst once none of its
// items is open, exactly once: the resume turn's input message, stored
// before anything else of the turn, marks the turn as resumed even if the
// process stops before the items are marked. The caller holds the slot.
func (a *agent) resumeIfReady(ctx context.Context, inst *instance, turnID string) (*pipeline.TurnResult, error) {
	r := a.rt
	storeCtx := context.WithoutCancel(ctx)
	items, err := r.ledger.List(storeCtx, ledger.Filter{Agent: a.name, Instance: inst.key, TurnID: turnID})
	if err != nil {
		return nil, err
	}
	var ids, msgs, fails, traces []string
	for _, it := range items {
		if it.Open {
			return nil, nil
		}
		if it.ResumedBy != "" {
			continue
		}
		ids = append(ids, it.ID)
		if it.Trace != "" && !slices.Contains(traces, it.Trace) {
			traces = append(traces, it.Trace)
		}
		if it.Message != "" {
			msgs = append(msgs, it.Message)
		}
		if it.Fails {
			fails = append(fails, it.Reason)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	in := pipeline.InputEvent{Kind: pipeline.InputResume, Text: strings.Join(msgs, "\n\n"),
		Metadata: map[string]any{"resumes": turnID, "pending": ids}}
	if len(fails) > 0 {
		in.Metadata["failed"] = strings.Join(fails, "; ")
	}
	if by := inst.resumedBy(turnID); by != "" {
		// The resume turn ran, or began: a stop of the process came before
		// the items were marked. Cut short, it goes on from where it
		// stopped (interrupt.go), as the answer asked; if it ended, or
		// other turns followed it, nothing is left to run.
		if _, cut := inst.interrupted(in); !cut {
			return nil, r.ledger.MarkResumed(storeCtx, ids, by)
		}
	}
	inst.ts.links = traces // the resume turn links to the turn it resumes
	res, err := a.runTurn(ctx, inst, in)
	if res.TurnID == "" {
		return res, err // the turn never began (its agent is unavailable): nothing resumed
	}
	if res.FinishReason == pipeline.FinishAborted && r.gate.closing() {
		// The stop of this runtime cut it, not its caller: the items stay
		// unmarked, and the instance's next owner (another process, or the
		// next start) finishes the turn (recoverResumes).
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s did not end: %w; the instance's next owner finishes it", strings.Join(ids, ", "), res.TurnID, errCut)
	}
	if errors.Is(err, store.ErrUnavailable) {
		// The store did not save the turn, or did not say whether it did
		// (a NATS server died with a commit): the items stay unmarked, and
		// the resume is tried again once the store answers; it goes on
		// from whatever of the turn was saved, as above.
		r.resumeLater(a.name, inst.key, turnID)
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s was not saved: %w; it is tried again by itself", strings.Join(ids, ", "), res.TurnID, err)
	}
	if errors.Is(err, store.ErrFenced) {
		// Another process took the instance while the turn ran (this one
		// stalled past its lease): the turn's last commit wrote nothing.
		// The items stay unmarked, and the instance's new owner finishes
		// the resume (recoverResumes), as it does one a stop cut.
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s was not saved: %w; the instance's new owner finishes it", strings.Join(ids, ", "), res.TurnID, err)
	}
	if merr := r.ledger.MarkResumed(storeCtx, ids, res.TurnID); merr != nil {
		err = errors.Join(err, merr)
	}
	return res, err
}

// resumeRetries are the waits before each try of resumeLater.
var resumeRetries = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 30 * time.Second}

// resumeLater tries again, in the background, the resume of turnID of
// agent's instance key, which the store failed to save: until it is
// saved, the instance moves to another process, or the runtime stops.
// What is still undone then, the next start finishes (recoverResumes).
// One loop tries each turn: a try that fails so again asks for another,
// which the loop running makes.
func (r *Runtime) resumeLater(agent, key, turnID string) {
	id := agent + "\x00" + key + "\x00" + turnID
	if _, running := r.resuming.LoadOrStore(id, true); running {
		return
	}
	ctx := r.tasks.bg
	go func() {
		defer r.resuming.Delete(id)
		for _, wait := range resumeRetries {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if !r.gate.enter() {
				return
			}
			err := func() error {
				defer r.gate.leave()
				a, inst, done, err := r.holdInstance(ctx, "paused "+turnID, agent, key)
				if err != nil {
					return err
				}
				defer done()
				_, err = a.resumeIfReady(ctx, inst, turnID)
				return err
			}()
			switch {
			case err == nil:
				return
			case errors.Is(err, errMoved):
				r.logger.Warn("a resume the store failed to save was not tried again: its instance moved to another process; the next start of the runtime finishes it", "agent", agent, "instance", key, "turn", turnID)
				return
			case !errors.Is(err, store.ErrUnavailable):
				r.logger.Error("trying again a resume the store failed to save failed", "agent", agent, "instance", key, "turn", turnID, "err", err)
				return
			}
		}
	}()
}

// resumedBy returns the ID of the turn whose input resumed turnID, or "".
func (in *instance) resumedBy(turnID string) string {
	for i := in.hist.Len() - 1; i >= 0; i-- {
		m := in.hist.At(i).Msg
		if m.Source.Type == pipeline.SourceRuntime && m.Metadata["resumes"] == turnID {
			id, _ := m.Metadata["turn_id"].(string)
			return id
		}
	}
	return ""
}

// ExpirePending expires the pending items past their deadline, as their
// extensions say, runs the resume turns that follow, and returns the
// items. New and a timer call it.
func (r *Runtime) ExpirePending(ctx context.Context) ([]ledger.Item, error) {
	if !r.gate.enter() {
		return nil, ErrClosed
	}
	defer r.gate.leave()
	due, err := r.ledger.List(ctx, ledger.Filter{Status: ledger.Pending})
	if err != nil {
		return nil, err
	}
	now := r.now()
	var out []ledger.Item
	var errs []error
	for _, it := range due {
		if it.ExpiresAt.IsZero() || it.ExpiresAt.After(now) || r.itemWaits(it) {
			continue
		}
		done, err := r.expire(ctx, it.ID)
		if errors.Is(err, errMoved) {
			continue // the process that owns its instance expires it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done != nil {
			out = append(out, *done)
		}
	}
	return out, errors.Join(errs...)
}

func (r *Runtime) expire(ctx context.Context, id string) (*ledger.Item, error) {
	it, a, inst, done, err := r.holdItem(ctx, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if it.Status != ledger.Pending { // resolved meanwhile
		return nil, nil
	}
	out := extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout,
		Message: fmt.Sprintf("Nobody answered pending item %s (%s) in time.", it.ID, it.Kind)}}
	if k, ok := a.kinds[kindKey{it.Extension, it.Kind}]; ok && k.Expire != nil {
		out = k.Expire(it)
	}
	if out.Secret != nil {
		return nil, fmt.Errorf("pending item %q: a timeout cannot provide a secret", id)
	}
	if out.Resolution.Reason == "" {
		out.Resolution.Reason = "no answer by " + it.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if _, err := a.settle(ctx, inst, it, out); err != nil {
		return nil, err
	}
	it, err = r.ledger.Get(ctx, id)
	return &it, err
}

// recoverResumes resumes the paused turns whose items were all resolved
// but whose resume did not run (the process stopped in between).
func (r *Runtime) recoverResumes(ctx context.Context) error {
	items, err := r.ledger.List(ctx, ledger.Filter{})
	if err != nil {
		return err
	}
	type turn struct{ agent, instance, turn string }
	var todo []turn
	for _, it := range items {
		t := turn{it.Agent, it.Instance, it.TurnID}
		if !it.Open && it.ResumedBy == "" && !slices.Contains(todo, t) && !r.itemWaits(it) {
			todo = append(todo, t)
		}
	}
	var errs []error
	for _, t := range todo {
		a, inst, done, err := r.holdInstance(ctx, "paused "+t.turn, t.agent, t.instance)
		if errors.Is(err, errMoved) {
			continue // its owner resumes it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = a.resumeIfReady(ctx, inst, t.turn)
		done()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loadPaused reads which of the instance's items are open, once, when the
// instance is loaded. It returns the open items that wait on a tool call,
// by call ID.
func (in *instance) loadPaused(ctx context.Context, l *ledger.Ledger) (map[string]string, error) {
	items, err := l.List(ctx, ledger.Filter{Agent: in.agent.name, Instance: in.key, Open: true})
	if err != nil {
		return nil, err
	}
	in.paused = make(map[string]string, len(items))
	var calls map[string]string
	for _, it := range items {
		in.paused[it.ID] = it.TurnID
		if it.CallID != "" {
			if calls == nil {
				calls = map[string]string{}
			}
			calls[it.CallID] = it.ID
		}
	}
	return calls, nil
}

// pausedError is Send's refusal for a paused instance.
func (in *instance) pausedError() error {
	ids := make([]string, 0, len(in.paused))
	for id := range in.paused {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return fmt.Errorf("agent %q instance %q is %w: it waits for pending item %s (see ganglion pending; answer, skip, provide or reject it first)",
		in.agent.name, in.key, ErrPaused, strings.Join(ids, ", "))
}

// expiry is the loop that expires pending items when their deadlines pass;
// its channels are nil when it does not run ([WithoutExpiryTimer]).
type expiry struct {
	wake chan struct{} // a deadline was added
	stop chan struct{} // Close asks the loop to end
	done chan struct{} // closed when it has
}

// expiryLoop expires pending items when their deadlines pass, until Close.
func (r *Runtime) expiryLoop() {
	defer close(r.expiry.done)
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if next, ok := r.nextDeadline(); ok {
			timer = time.NewTimer(max(next.Sub(r.now()), 0))
			fire = timer.C
		}
		select {
		case <-r.expiry.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-r.expiry.wake:
			if timer != nil {
				timer.Stop()
			}
		case <-fire:
			if _, err := r.ExpirePending(context.Background()); !errors.Is(err, ErrClosed) {
				r.logExpiry(err)
			}
		}
	}
}

// logExpiry logs what ExpirePending returned: a task that failed because a
// required item timed out is the timeout doing its job, at info; any other
// error is a failure to expire, at error.
func (r *Runtime) logExpiry(err error) {
	if err == nil {
		return
	}
	for _, e := range joined(err) {
		if errors.Is(e, ErrTaskFailed) {
			r.logger.Info("a required pending item timed out; its task failed", "err", e)
		} else {
			r.logger.Error("expiry of pending items failed", "err", e)
		}
	}
}

// onlyTaskFailures reports whether every error joined in err is a task
// that failed on a timeout (see logExpiry).
func onlyTaskFailures(err error) bool {
	for _, e := range joined(err) {
		if !errors.Is(e, ErrTaskFailed) {
			return false
		}
	}
	return true
}

// joined returns the errors errors.Join joined into err, or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// nextDeadline returns the earliest deadline of a pending item.
func (r *Runtime) nextDeadline() (time.Time, bool) {
	items, err := r.ledger.List(context.Background(), ledger.Filter{Status: ledger.Pending})
	if err != nil {
		r.logger.Error("list pending items", "err", err)
		return time.Time{}, false
	}
	var next time.Time
	for _, it := range items {
		if !it.ExpiresAt.IsZero() && !r.itemWaits(it) && (next.IsZero() || it.ExpiresAt.Before(next)) {
			next = it.ExpiresAt
		}
	}
	return next, !next.IsZero()
}

// itemWaits reports whether item it belongs to an agent that failed to load
// ([WithPartialLoad]): only its own extensions know how it expires and how
// its turn resumes, so it waits for a runtime that loads them.
func (r *Runtime) itemWaits(it ledger.Item) bool {
	a, ok := r.agents.byName[it.Agent]
	return ok && a.loadErr != nil
}

// wakeExpiry tells the expiry loop that a deadline was added.
func (r *Runtime) wakeExpiry() {
	select {
	case r.expiry.wake <- struct{}{}:
	default:
	}
}

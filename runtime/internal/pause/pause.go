package pause

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
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

// Pauses are the runtime's pending items: the extensions' kinds of them,
// the hook that pauses and resumes turns, the humans' actions, the resumes
// tried again and the loop that expires items.
type Pauses struct {
	env Env
	// kinds are the pending-item kinds each agent's extensions handle, by
	// agent; written only while the extensions register.
	kinds    map[string]map[kindKey]extensions.PendingKind
	expiry   expiry
	resuming sync.Map // the resumes tried again (resumeLater), by agent, instance and turn
}

// Env is what pauses need of the runtime that embeds them.
type Env struct {
	Ledger *ledger.Ledger
	Logger *slog.Logger
	Now    func() time.Time
	// Tape records the humans' actions, nil when the session is not
	// recorded; NewID mints the ID of a pending item (the tape's when
	// replaying).
	Tape  tape.Tape
	NewID func(prefix, key string) string
	// Gate admits the work of a running runtime; Bg ends when it stops,
	// and Cut is the error of a turn its stop cut.
	Gate Gate
	Bg   context.Context
	Cut  error
	// Hold acquires the turn slot of agent's instance key in this process
	// and loads the instance; what names the caller's business in errors.
	// Its error wraps seam.ErrMoved when another process owns the
	// instance. The caller calls done.
	Hold func(ctx context.Context, what, agent, key string) (in *engine.Instance, done func(), err error)
	// Run runs one turn of in, whose slot the caller holds.
	Run func(ctx context.Context, in *engine.Instance, ev pipeline.InputEvent) (*pipeline.TurnResult, error)
	// Unavailable says why agent failed to load, nil if it loaded or is
	// unknown: its items wait for a runtime that loads its extensions.
	Unavailable func(agent string) error
	// PutSecret seals and stores a provided secret.
	PutSecret func(ctx context.Context, agent, key, name, value string) error
}

// Gate is the runtime's count of the work it runs, which its stop waits
// for.
type Gate interface {
	Enter() bool
	Leave()
	Closing() bool
}

// New returns the pauses of a runtime.
func New(env Env) *Pauses {
	return &Pauses{env: env, kinds: map[string]map[kindKey]extensions.PendingKind{}}
}

// Ledger returns the ledger of the pending items.
func (p *Pauses) Ledger() *ledger.Ledger { return p.env.Ledger }

// Host returns agent a's side of extensions.PendingHost.
func (p *Pauses) Host(a *engine.Agent) extensions.PendingHost {
	if p.kinds[a.Name] == nil {
		p.kinds[a.Name] = map[kindKey]extensions.PendingKind{}
	}
	return host{p: p, agent: a}
}

func (p *Pauses) kind(agent, ext, kind string) (extensions.PendingKind, bool) {
	k, ok := p.kinds[agent][kindKey{ext, kind}]
	return k, ok
}

// host is an agent's side of extensions.PendingHost.
type host struct {
	p     *Pauses
	agent *engine.Agent
}

var _ extensions.PendingHost = host{}

func (h host) HandlePending(ext string, k extensions.PendingKind) error {
	key := kindKey{ext, k.Name}
	if _, dup := h.p.kinds[h.agent.Name][key]; dup {
		return fmt.Errorf("extension %q handles pending items of kind %q already", ext, k.Name)
	}
	h.p.kinds[h.agent.Name][key] = k
	return nil
}

func (h host) CreatePending(ctx context.Context, ext string, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	a, p := h.agent, h.p
	ts, ok := turnhost.Get(s).(*engine.Turn)
	if !ok || ts.Agent != a {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: the step is not a running turn of agent %q", ext, a.Name)
	}
	if _, ok := p.kind(a.Name, ext, it.Kind); !ok {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: it handles no pending items of kind %q (call Pending.Handle in Register)", ext, it.Kind)
	}
	it.Extension, it.Agent, it.Instance, it.TurnID, it.Step = ext, a.Name, ts.Inst.Key(), ts.TurnID, s.Index()
	if it.ID == "" && p.env.Tape != nil {
		it.ID = p.env.NewID("p-", "pending/"+a.Name+"/"+ts.Inst.Key()+"/"+ts.TurnID+"/"+strconv.Itoa(s.Index()))
	}
	it.Trace = ts.Trace
	if n := ts.Inst.History().Len(); n > 0 {
		it.Checkpoint = ts.Inst.History().At(n - 1).Msg.ID
	}
	if timeout > 0 {
		it.ExpiresAt = p.env.Now().Add(timeout)
	}
	// The item is stored with the history it points to, in one commit: a
	// crash keeps both (the instance is paused) or neither.
	created, err := p.env.Ledger.CreateWith(ts.StoreCtx, it, func(r store.PendingRecord) error {
		ts.Inst.Unsaved().Pending = append(ts.Inst.Unsaved().Pending, r)
		return ts.Inst.Flush(ts.StoreCtx)
	})
	if err != nil {
		return ledger.Item{}, err
	}
	ts.Inst.Paused[created.ID] = created.TurnID
	p.wake()
	return created, nil
}

func (h host) CreatePendingCall(ctx context.Context, ext string, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	a, p := h.agent, h.p
	ts, ok := turnhost.Get(c).(*engine.Turn)
	if !ok || ts.Agent != a {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: the call is not in a running turn of agent %q", ext, a.Name)
	}
	if _, ok := p.kind(a.Name, ext, it.Kind); !ok {
		return ledger.Item{}, fmt.Errorf("extension %q: pause: it handles no pending items of kind %q (call Pending.Handle in Register)", ext, it.Kind)
	}
	it.Extension, it.Agent, it.Instance, it.TurnID, it.Step, it.CallID = ext, a.Name, ts.Inst.Key(), ts.TurnID, c.Step(), c.CallID()
	if it.ID == "" && p.env.Tape != nil {
		it.ID = p.env.NewID("p-", "pending/"+a.Name+"/"+ts.Inst.Key()+"/"+ts.TurnID+"/"+c.CallID())
	}
	it.Trace = ts.Trace
	if timeout > 0 {
		it.ExpiresAt = p.env.Now().Add(timeout)
	}
	// The model's request for the call is stored already (the step
	// commits it before any tool runs); calls of one step may run in
	// parallel, so the instance's state is changed under the
	// conversation's lock.
	ts.Conv.Lock()
	defer ts.Conv.Unlock()
	if n := ts.Inst.History().Len(); n > 0 {
		it.Checkpoint = ts.Inst.History().At(n - 1).Msg.ID
	}
	created, err := p.env.Ledger.Create(ts.StoreCtx, it)
	if err != nil {
		return ledger.Item{}, err
	}
	ts.Inst.Paused[created.ID] = created.TurnID
	if ts.Awaits == nil {
		ts.Awaits = map[string]string{}
	}
	ts.Awaits[created.CallID] = created.ID
	ts.PauseAfter.Store(true)
	p.wake()
	return created, nil
}

// resumeCalls gives the kinds of the resumed items ids that paused tool
// calls the chance to decide the calls' results (running them if
// approved) before the model is called again.
func (p *Pauses) resumeCalls(ctx context.Context, ts *engine.Turn, t *pipeline.TurnContext, ids []string) error {
	for _, id := range ids {
		it, err := p.env.Ledger.Get(ts.StoreCtx, id)
		if err != nil {
			return err
		}
		k, ok := p.kind(it.Agent, it.Extension, it.Kind)
		if it.CallID == "" || !ok || k.Resume == nil {
			continue
		}
		rc := &resumeCall{ts: ts, t: t, it: it}
		if err := k.Resume(ctx, it, rc); err != nil {
			return fmt.Errorf("resume the call %s of pending item %s: %w", it.CallID, it.ID, err)
		}
	}
	return ts.Agent.CommitStep(ts) // a resumed call_agent delegates
}

// Pauses are a hook of every turn (engine.Hook): they read which turns of
// an instance wait, keep what the waiting items need in the context, and
// resume the calls a resume turn resumes.
var _ engine.Hook = (*Pauses)(nil)

func (*Pauses) Loaded(context.Context, *engine.Instance) error { return nil }
func (*Pauses) Begin(*engine.Turn, pipeline.InputEvent)        {}

// Resumed fails a resume turn whose item's dependency was rejected or
// never provided, and lets the kinds of the resumed items that paused
// tool calls decide the calls' results.
func (p *Pauses) Resumed(ctx context.Context, ts *engine.Turn, t *pipeline.TurnContext, in pipeline.InputEvent) error {
	if reason, _ := in.Metadata["failed"].(string); reason != "" {
		return fmt.Errorf("%w: %s", ErrTaskFailed, reason)
	}
	if ids, _ := in.Metadata["pending"].([]string); len(ids) > 0 {
		return p.resumeCalls(ctx, ts, t, ids)
	}
	return nil
}

func (*Pauses) Stage(*engine.Turn) error      { return nil }
func (*Pauses) Committed(*engine.Turn, error) {}
func (*Pauses) End(_ *engine.Turn, _ pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error) {
	return res, err
}

// Keep adds to keep what the instance's open pending items need: the
// message each checkpoints, and the tool call each paused.
func (p *Pauses) Keep(ts *engine.Turn, keep map[string]bool) error {
	items, err := p.env.Ledger.List(ts.StoreCtx, ledger.Filter{Agent: ts.Agent.Name, Instance: ts.Inst.Key(), Open: true})
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
	h := ts.Inst.History()
	for _, pos := range h.Positions() {
		m := h.At(pos).Msg
		for _, c := range m.ToolCalls {
			if calls[c.ID] {
				keep[m.ID] = true
			}
		}
	}
	return nil
}

// Load reads which of the instance's items are open, once, when the
// instance is loaded. It returns the open items that wait on a tool call,
// by call ID.
func (p *Pauses) Load(ctx context.Context, in *engine.Instance) (map[string]string, error) {
	items, err := p.env.Ledger.List(ctx, ledger.Filter{Agent: in.Agent(), Instance: in.Key(), Open: true})
	if err != nil {
		return nil, err
	}
	in.Paused = make(map[string]string, len(items))
	var calls map[string]string
	for _, it := range items {
		in.Paused[it.ID] = it.TurnID
		if it.CallID != "" {
			if calls == nil {
				calls = map[string]string{}
			}
			calls[it.CallID] = it.ID
		}
	}
	return calls, nil
}

// PausedError is the refusal of new input to a paused instance.
func PausedError(in *engine.Instance) error {
	ids := make([]string, 0, len(in.Paused))
	for id := range in.Paused {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return fmt.Errorf("agent %q instance %q is %w: it waits for pending item %s (see ganglion pending; answer, skip, provide or reject it first)",
		in.Agent(), in.Key(), ErrPaused, strings.Join(ids, ", "))
}

// metaEdited marks the result of a tool call that ran with arguments a
// human edited (an approval answered with an edit; see [Runtime.Edit] and
// extensions.ResumeCall.RunWith). Its value is those arguments, as JSON
// text; the model's own arguments stay in the call of the assistant
// message the result answers.
const metaEdited = "edited_arguments"

// resumeCall is extensions.ResumeCall.
type resumeCall struct {
	ts *engine.Turn
	t  *pipeline.TurnContext
	it ledger.Item
	// edited holds the arguments RunWith ran the call with, for Result.
	edited    json.RawMessage
	ranEdited bool
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
	c, msgID, ok := rc.ts.Inst.FindCall(rc.it.CallID)
	if !ok {
		return nil, fmt.Errorf("the call %s is not in the history", rc.it.CallID)
	}
	if edited {
		c.Arguments = args // a copy of the call: the history keeps the model's
		rc.edited, rc.ranEdited = args, true
	}
	return rc.ts.Agent.RunCall(ctx, rc.ts, rc.t, rc.it.Step, msgID, c)
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
	if err := ts.Inst.LoadSecrets(ts.StoreCtx); err != nil {
		return err
	}
	ts.Conv.Lock()
	defer ts.Conv.Unlock()
	h := ts.Inst.History()
	for i := h.Len() - 1; i >= 0; i-- {
		m := h.At(i).Msg
		if m.Role == pipeline.RoleTool && m.ToolCallID == rc.it.CallID {
			r := *m
			r.Content, r.IsError = ts.Inst.Redact(content), isError
			// It is the call's outcome now, no longer what it waits for.
			r.Metadata = maps.Clone(m.Metadata)
			delete(r.Metadata, engine.MetaAwaits)
			delete(r.Metadata, engine.MetaInterrupted)
			if rc.ranEdited {
				if r.Metadata == nil {
					r.Metadata = map[string]any{}
				}
				r.Metadata[metaEdited] = ts.Inst.Redact(string(rc.edited))
			}
			return ts.Conv.ApplyLocked(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: r})
		}
	}
	return fmt.Errorf("the call %s has no result in the history to replace", rc.it.CallID)
}

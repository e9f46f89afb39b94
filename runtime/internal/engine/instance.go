package engine

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// Instance is one conversation of an agent. Its turns run one at a time,
// each holding its slot; everything below slot is owned by the turn that
// holds it. The runtime's cache (Cache) holds the instances in
// memory.
type Instance struct {
	Cached[ID]
	agent *Agent
	key   string
	slot  Slot

	loaded     bool
	meta       store.Meta
	hist       History
	unsaved    store.Batch // the changes not yet committed to the store; flush commits them
	metaBuf    store.Meta  // what unsaved.Meta points to, so a flush allocates nothing
	lastChange time.Time   // when unsaved last changed; the next flush stamps it
	metaDirty  bool        // meta changed with no message to save (a turn was counted)
	ts         Turn        // reused by every turn of the instance

	// Paused maps what the instance's paused turns wait for (its open
	// pending items) to those turns; a hook's Load sets it. The instance
	// takes no new input while it is not empty.
	Paused  map[string]string
	secrets secrets // its provided secrets, read once per load (LoadSecrets)

	// placed is what the placement keeps for the instance (a cluster's
	// lease and fence), opaque to it; set before the instance is shared
	// (seam.Placement.Adopt).
	placed atomic.Value
}

// NewInstance returns agent a's instance key, not loaded yet; ext is the
// hooks' state for its turns (Turn.Ext).
func NewInstance(a *Agent, key string, ext any) *Instance {
	in := &Instance{agent: a, key: key}
	in.slot.Init()
	in.ts.secretFn = in.ts.secret
	in.ts.Ext = ext
	return in
}

// Agent returns the name of the instance's agent.
func (in *Instance) Agent() string { return in.agent.Name }

// Def returns the instance's agent.
func (in *Instance) Def() *Agent { return in.agent }

// Key returns the instance's key.
func (in *Instance) Key() string { return in.key }

// Turn returns the state the instance's turns reuse.
func (in *Instance) Turn() *Turn { return &in.ts }

// History returns the instance's history as loaded. The caller holds the
// instance's slot.
func (in *Instance) History() *History { return &in.hist }

// Unsaved returns the changes its next flush commits. The caller holds the
// instance's slot.
func (in *Instance) Unsaved() *store.Batch { return &in.unsaved }

// Acquire waits for the instance's turn slot.
func (in *Instance) Acquire(ctx context.Context) error { return in.slot.Acquire(ctx) }

// TryAcquire takes the turn slot if it is free.
func (in *Instance) TryAcquire() bool { return in.slot.TryAcquire() }

// Release frees the turn slot.
func (in *Instance) Release() { in.slot.Release() }

// Placed is what the placement keeps for the instance (a cluster's lease
// and fence), opaque to the engine.
func (in *Instance) Placed() *atomic.Value { return &in.placed }

// Unload forgets what was read from the store, so that the next turn
// reads it again: in a cluster, another process may have changed it. The
// caller holds the turn slot.
func (in *Instance) Unload() {
	if !in.loaded {
		return
	}
	in.loaded = false
	in.hist.Reset()
	in.meta = store.Meta{}
	in.Paused = nil
	in.DropSecrets()
}

// Load reads the instance from the store the first time it is used.
func (in *Instance) Load(ctx context.Context) error {
	st := in.agent.Env.Store
	if in.loaded {
		return nil
	}
	meta, recs, found, err := st.LoadInstance(ctx, in.agent.Name, in.key)
	if err != nil {
		return fmt.Errorf("load instance %s/%s: %w", in.agent.Name, in.key, err)
	}
	var waits map[string]string
	for _, h := range in.agent.Env.Hooks {
		w, err := h.Load(ctx, in)
		if err != nil {
			return fmt.Errorf("load instance %s/%s: %w", in.agent.Name, in.key, err)
		}
		if waits == nil {
			waits = w
		} else {
			maps.Copy(waits, w)
		}
	}
	in.DropSecrets()
	if found {
		in.meta = meta
		for _, r := range recs {
			in.hist.Append(Entry{Msg: r.Message, Seq: r.Seq})
			if r.Seq >= in.meta.NextSeq {
				in.meta.NextSeq = r.Seq + 1
			}
		}
	}
	in.loaded = true
	// A call the history shows without its result was running when the
	// process stopped: it gets its "interrupted" result now.
	if err := in.closeInterrupted(context.WithoutCancel(ctx), waits); err != nil {
		return fmt.Errorf("load instance %s/%s: %w", in.agent.Name, in.key, err)
	}
	// What a feature settles from the repaired history (a task whose turn
	// ended as the process stopped, before the task recorded it).
	for _, h := range in.agent.Env.Hooks {
		if err := h.Loaded(context.WithoutCancel(ctx), in); err != nil {
			in.loaded = false
			in.hist.Reset()
			return fmt.Errorf("load instance %s/%s: %w", in.agent.Name, in.key, err)
		}
	}
	return nil
}

// Flush commits the changes made since the last flush, with the meta. ctx
// should not be cancellable: what a turn did is saved even when its caller
// gave up. The caller holds the instance's slot.
func (in *Instance) Flush(ctx context.Context) error {
	if in.unsaved.Empty() && !in.metaDirty {
		return nil
	}
	in.metaDirty = false
	if in.lastChange.IsZero() {
		in.lastChange = in.agent.Env.Now()
	}
	in.meta.UpdatedAt = in.lastChange
	in.lastChange = time.Time{}
	if in.meta.CreatedAt.IsZero() {
		in.meta.CreatedAt = in.meta.UpdatedAt
	}
	in.metaBuf = in.meta
	in.unsaved.Meta = &in.metaBuf
	place := in.agent.Env.Place
	in.unsaved.Fence = place.Fence(in)
	err := in.agent.Env.Store.Commit(ctx, in.agent.Name, in.key, in.unsaved)
	in.unsaved.Put = in.unsaved.Put[:0]
	in.unsaved.Delete = in.unsaved.Delete[:0]
	in.unsaved.Meta, in.unsaved.Tasks, in.unsaved.Pending = nil, nil, nil
	if err != nil {
		// The in-memory view is ahead of the store now; reload on next use.
		in.loaded = false
		in.hist.Reset()
		place.Failed(in, err)
		return fmt.Errorf("save instance %s/%s: %w", in.agent.Name, in.key, err)
	}
	return nil
}

// Conversation is the [pipeline.Conversation] of a running turn.
type Conversation struct {
	in *Instance
	ts *Turn
	mu sync.Mutex // Apply may be called from parallel tool calls' middleware
}

var _ pipeline.Conversation = (*Conversation)(nil)

// Lock takes the conversation's lock, which parallel tool calls share:
// a feature that changes the instance's state from a call holds it.
func (c *Conversation) Lock() { c.mu.Lock() }

// Unlock releases the lock Lock took.
func (c *Conversation) Unlock() { c.mu.Unlock() }

func (c *Conversation) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in.hist.Len()
}

func (c *Conversation) At(i int) pipeline.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.in.hist.At(i).Msg
}

// Apply is a middleware's change. It may pin a message, and set metadata
// of its own, but not the other reserved keys (pipeline.CheckMetadata):
// a replacement keeps those of the message it replaces.
func (c *Conversation) Apply(ev pipeline.MessageEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev.Type {
	case pipeline.MessageAppend:
		if err := pipeline.CheckMetadata("a middleware's message", nil, ev.Message.Metadata, pipeline.MetaPinned); err != nil {
			return fmt.Errorf("append message: %w", err)
		}
		return c.appendLocked(&ev.Message)
	case pipeline.MessageReplace:
		if i := c.in.hist.IndexOf(ev.TargetID); i >= 0 {
			prev := c.in.hist.At(i).Msg.Metadata
			if err := pipeline.CheckMetadata("a middleware's replacement", prev, ev.Message.Metadata, pipeline.MetaPinned); err != nil {
				return fmt.Errorf("replace message %q: %w", ev.TargetID, err)
			}
			ev.Message.Metadata = keepReserved(prev, ev.Message.Metadata)
		}
	}
	return c.ApplyLocked(ev)
}

// apply is Apply for the runtime's own changes, which set reserved
// metadata.
func (c *Conversation) apply(ev pipeline.MessageEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == pipeline.MessageAppend {
		return c.appendLocked(&ev.Message)
	}
	return c.ApplyLocked(ev)
}

// keepReserved returns next with the reserved metadata of prev that it
// leaves out, but pinned, which a middleware may take away: the runtime's
// marks stay when a middleware writes metadata of its own. next is not
// changed: a copy gets the keys.
func keepReserved(prev, next map[string]any) map[string]any {
	copied := false
	for k, v := range prev {
		if _, ok := next[k]; ok || k == pipeline.MetaPinned || !pipeline.IsReservedMetadata(k) {
			continue
		}
		if !copied {
			next, copied = maps.Clone(next), true
			if next == nil {
				next = map[string]any{}
			}
		}
		next[k] = v
	}
	return next
}

// append adds the runtime's own message m (input, model answer, tool
// result) without going through a MessageEvent: a message is ~200 bytes,
// and this path copies it once, into the one place history and store share.
func (c *Conversation) append(m *pipeline.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appendLocked(m)
}

func (c *Conversation) appendLocked(src *pipeline.Message) error {
	in := c.in
	if err := validMessage(*src); err != nil {
		return fmt.Errorf("append message: %w", err)
	}
	if src.ID != "" && in.hist.IndexOf(src.ID) >= 0 {
		return fmt.Errorf("append message: id %q is already in the conversation", src.ID)
	}
	p := new(pipeline.Message) // the one copy, shared by the history and the store
	*p = *src
	in.add(p)
	c.ts.published(p)
	return nil
}

// add appends p to the history and to the next commit, with the next
// sequence number, and an ID and a time unless it has them.
func (in *Instance) add(p *pipeline.Message) {
	seq := in.meta.NextSeq
	in.meta.NextSeq++
	if p.ID == "" {
		p.ID = MessageID(seq)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = in.agent.Env.Now()
	}
	in.lastChange = p.CreatedAt
	in.hist.Append(Entry{Msg: p, Seq: seq})
	in.unsaved.Put = append(in.unsaved.Put, store.Record{Seq: seq, Message: p})
}

// replace puts m in the place of history entry i, and in the next commit.
// m is a new message: the old one may still be shared.
func (in *Instance) replace(i int, m *pipeline.Message) {
	e := in.hist.At(i)
	e.Set(m)
	in.hist.Changed()
	in.unsaved.Put = append(in.unsaved.Put, store.Record{Seq: e.Seq, Message: m})
}

// ApplyLocked makes a replace or remove; appends go through
// appendLocked. The caller holds the lock.
func (c *Conversation) ApplyLocked(ev pipeline.MessageEvent) error {
	in := c.in
	switch ev.Type {
	case pipeline.MessageReplace:
		i := in.hist.IndexOf(ev.TargetID)
		if i < 0 {
			return fmt.Errorf("replace message: no message with id %q", ev.TargetID)
		}
		m := ev.Message
		if err := validMessage(m); err != nil {
			return fmt.Errorf("replace message %q: %w", ev.TargetID, err)
		}
		if m.ID == "" {
			m.ID = ev.TargetID
		} else if m.ID != ev.TargetID && in.hist.IndexOf(m.ID) >= 0 {
			return fmt.Errorf("replace message %q: id %q is already in the conversation", ev.TargetID, m.ID)
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = in.hist.At(i).Msg.CreatedAt
		}
		in.replace(i, &m)
		return nil
	case pipeline.MessageRemove:
		i := in.hist.IndexOf(ev.TargetID)
		if i < 0 {
			return fmt.Errorf("remove message: no message with id %q", ev.TargetID)
		}
		in.unsaved.Delete = append(in.unsaved.Delete, in.hist.At(i).Seq)
		in.hist.Remove(i)
		return nil
	}
	return fmt.Errorf("message event: unknown type %q (want append, replace or remove)", ev.Type)
}

func validMessage(m pipeline.Message) error {
	switch m.Role {
	case pipeline.RoleSystem, pipeline.RoleUser, pipeline.RoleAssistant:
	case pipeline.RoleTool:
		if m.ToolCallID == "" {
			return fmt.Errorf("a tool message needs tool_call_id")
		}
	case "":
		return fmt.Errorf("message has no role")
	default:
		return fmt.Errorf("unknown role %q (want system, user, assistant or tool)", m.Role)
	}
	return nil
}

// published tells the bus about an appended message.
func (ts *Turn) published(m *pipeline.Message) {
	bus := ts.Agent.Env.Bus
	if !bus.Active() {
		return
	}
	bus.Publish(events.Event{Topic: events.MessageAppended, Agent: ts.Agent.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime",
		Data: events.MessageAppendedData{ID: m.ID, Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, IsError: m.IsError}})
}

// Waiting reports how many turns wait for the instance's slot.
func (in *Instance) Waiting() int { return in.slot.Waiting() }

package ganglion

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Pending registers the kinds of pending item the extension opens. A step
// or toolCall hook opens one with [Step.Pause] or [ToolCall.Pause]: the
// turn pauses until a human acts on it (ganglion pending, the HTTP API,
// the console), and the kind's functions decide what the action means.
// The item is stored with the history it points to and survives restarts.
// The agent's config must grant each kind under the extension's pending:.
type Pending struct{ r *registry }

// PendingKind is a kind of pending item and what its resolutions mean.
type PendingKind struct {
	// Name is the kind: 1 to 64 lower-case letters, digits, _ or -.
	Name string
	// Resolve decides what a human's action means for item p. An error
	// refuses the action: its text is what the human is told, and the item
	// stays open.
	Resolve func(p *PendingCall, act Action) (Outcome, error)
	// Expire decides an item nobody acted on in time; nil, or an error:
	// status timeout.
	Expire func(p *PendingCall) (Outcome, error)
	// Resume, if set, decides the result of a call the kind's item
	// paused ([ToolCall.Pause]), when its turn resumes: run the call
	// ([Resume.Run], [Resume.RunWith]) or give it a result
	// ([Resume.SetResult]). With Resume set, a human may also edit the
	// paused call's arguments (the action "edit", checked against the
	// tool's schema before Resolve sees it).
	Resume func(r *Resume) error
}

// Handle registers a kind. Call it from setup.
func (p *Pending) Handle(k PendingKind) error {
	switch {
	case k.Name == "" || k.Resolve == nil:
		err := errors.New("register pending: a kind needs a name and a Resolve function")
		p.r.fail(err)
		return err
	case p.r.has(kindPending, k.Name):
		err := fmt.Errorf("register pending %q: registered already", k.Name)
		p.r.fail(err)
		return err
	}
	p.r.add(handler{kind: kindPending, pending: &k}, false, nil)
	return nil
}

// pendingSpec is a pending kind's register spec.
type pendingSpec struct {
	Name   string `json:"name"`
	Resume bool   `json:"resume,omitempty"`
}

// PendingItem is an item to open: its kind (registered with
// [Pending.Handle]) and what the human is asked.
type PendingItem struct {
	Kind string
	// Request is what the human is asked; it must encode as a JSON
	// object. The CLI, the API and the console show it.
	Request any
	// Required: the turn cannot go on without an answer (a skip is refused
	// unless the kind allows it).
	Required bool
	// Timeout, if positive, expires the item ([PendingKind.Expire]).
	Timeout time.Duration
}

type pauseRequest struct {
	Kind      string          `json:"kind"`
	Request   json.RawMessage `json:"request"`
	Required  bool            `json:"required,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
}

// pause opens it for the hook h and returns its ID.
func pause(h int32, it PendingItem) (string, error) {
	r, err := json.Marshal(it.Request)
	if err != nil {
		return "", fmt.Errorf("ganglion: pause: %w", err)
	}
	req, err := json.Marshal(pauseRequest{Kind: it.Kind, Request: r, Required: it.Required, TimeoutMS: it.Timeout.Milliseconds()})
	if err != nil {
		return "", fmt.Errorf("ganglion: pause: %w", err)
	}
	b, err := read("pause", func(b []byte) int32 { return host.pause(h, req, b) })
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("ganglion: pause: %w", err)
	}
	return out.ID, nil
}

// Pause opens a pending item: the turn ends paused once the step is done,
// and resumes when every item it opened is resolved. It returns the item's
// ID.
func (s *Step) Pause(it PendingItem) (string, error) { return pause(s.h, it) }

// Pause opens a pending item for the call, before Next: the call does not
// run now. Unless the hook sets a result, the model reads "waiting for a
// human (pending item ID)" as its result until the turn resumes; then the
// kind's Resume decides the result. A call pauses once.
func (c *ToolCall) Pause(it PendingItem) (string, error) { return pause(c.h, it) }

// Resuming reports the extension's own pending item whose resume runs this
// call ([Resume.Run]): a guard that paused the call lets it through then.
func (c *ToolCall) Resuming() (Item, bool) {
	var it Item
	if err := c.decode(fieldResuming, &it); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Item{}, false
		}
		panic(err)
	}
	return it, true
}

// Item is a pending item as the runtime stores it.
type Item struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Extension string          `json:"extension"`
	Agent     string          `json:"agent"`
	Instance  string          `json:"instance"`
	TurnID    string          `json:"turn_id"`
	Step      int             `json:"step"`
	CallID    string          `json:"call_id"`
	Request   json.RawMessage `json:"request"`
	Required  bool            `json:"required"`
	Status    string          `json:"status"`
	Open      bool            `json:"open"`
	// Answer, Reason and Message are the outcome's, once resolved.
	Answer    string    `json:"answer"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Action is what a human did with an item: Kind is "answer", "skip",
// "provide", "reject" or "edit" (Value holds the edited arguments, JSON).
// Value may be a secret: never log or publish it.
type Action struct {
	Kind   string `json:"kind"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// Outcome is what an action or a timeout makes of an item.
type Outcome struct {
	// Status is "answered", "provided", "rejected", "skipped", "timeout"
	// or "failed".
	Status string `json:"status"`
	// Answer is kept with the item: Resume reads it.
	Answer string `json:"answer,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Message is what the model reads of the outcome when the turn
	// resumes. It must not hold a secret.
	Message string `json:"message,omitempty"`
	// KeepOpen leaves the item open to a later action.
	KeepOpen bool `json:"keep_open,omitempty"`
	// Fails fails the resumed turn.
	Fails bool `json:"fails,omitempty"`
	// Secret keeps the action's value as the instance's secret of this
	// name (an API key a human provided), encrypted; the manifest must
	// list the name in Secrets.
	Secret string `json:"secret,omitempty"`
}

// PendingCall is the context of a pending kind's function: the item, and
// the extension's state and secrets for the item's instance.
type PendingCall struct {
	hook
}

// Item returns the item the call is about.
func (p *PendingCall) Item() Item {
	var it Item
	if err := p.decode(fieldPendingItem, &it); err != nil {
		panic(err)
	}
	return it
}

// Resume is the context of a kind's Resume: the paused call of an item.
type Resume struct {
	PendingCall
}

// Run runs the paused call as the model made it, through the toolCall
// middleware (the extension's own hook sees [ToolCall.Resuming]), and
// returns its result, which becomes the call's unless SetResult follows.
func (r *Resume) Run() (ToolResult, error) {
	if err := callNext(r.h); err != nil {
		return ToolResult{}, err
	}
	var res ToolResult
	err := r.decode(fieldResult, &res)
	return res, err
}

// RunWith runs the paused call with args, a human's edit, in place of the
// model's arguments; the history keeps both.
func (r *Resume) RunWith(args json.RawMessage) (ToolResult, error) {
	if err := r.set(fieldToolArgs, args); err != nil {
		return ToolResult{}, err
	}
	return r.Run()
}

// SetResult gives the paused call its result without running it (or in
// place of what Run returned).
func (r *Resume) SetResult(res ToolResult) error { return r.setJSON(fieldResult, res) }

// ReplyFunc reads the model's reply of a step before the runtime stores it
// ([Pipeline.Reply]).
type ReplyFunc func(r *Reply) error

// Reply registers fn to read the model's reply of every step as the
// runtime is about to store it, before any tool it asks for runs. A
// pending item fn opens ([Reply.Pause]) is stored in the same commit as
// the reply, so no stop of the process can keep the one without the other
// (a step middleware's Pause after Next commits on its own); the step then
// ends paused. This is how a protocol that reads the model's questions
// pauses.
func (p *Pipeline) Reply(fn ReplyFunc, opts ...LayerOption) {
	p.r.add(handler{kind: kindReply, reply: fn}, fn == nil, opts)
}

// Reply is the context of a reply hook: the step, and the model's reply.
type Reply struct {
	conversation
}

// Message returns the model's reply, as it will be stored.
func (r *Reply) Message() (Message, error) {
	var m Message
	err := r.decode(fieldReply, &m)
	return m, err
}

// Index returns the step's number within its turn, from 1.
func (r *Reply) Index() int { return (&Step{r.conversation}).Index() }

// Pause opens a pending item stored with the reply: the turn ends paused
// once the step is done.
func (r *Reply) Pause(it PendingItem) (string, error) { return pause(r.h, it) }

// The contexts of pending and reply hooks.
var (
	pendingCalls slab[PendingCall]
	resumes      slab[Resume]
	replies      slab[Reply]
)

// runPending is the body of ganglion_pending for kind k and handle h.
func runPending(k *PendingKind, h int32) error {
	phase, err := readString("field PENDING_PHASE", func(b []byte) int32 { return host.field(h, fieldPendingPhase, b) })
	if err != nil {
		return err
	}
	switch phase {
	case "resolve":
		p := pendingCalls.next()
		p.h = h
		var act Action
		if err := p.decode(fieldAction, &act); err != nil {
			return err
		}
		out, err := k.Resolve(p, act)
		if err != nil {
			return err
		}
		return p.setJSON(fieldResult, out)
	case "expire":
		if k.Expire == nil {
			return nil // the host's default: status timeout
		}
		p := pendingCalls.next()
		p.h = h
		out, err := k.Expire(p)
		if err != nil {
			return err
		}
		return p.setJSON(fieldResult, out)
	case "resume":
		if k.Resume == nil {
			return fmt.Errorf("pending kind %q has no Resume", k.Name)
		}
		r := resumes.next()
		r.h = h
		err := k.Resume(r)
		// A failure of Run passed on is the call's: the host fails the
		// resume with it, not blamed on the extension.
		nextErr, failed := nextFailures[h]
		delete(nextFailures, h)
		if err == nil || failed && errors.Is(err, nextErr) {
			return nil
		}
		return err
	}
	return fmt.Errorf("pending kind %q: unknown phase %q", k.Name, phase)
}

var (
	_ Context = (*PendingCall)(nil)
	_ Context = (*Reply)(nil)
)

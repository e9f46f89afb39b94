package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/store"
)

// Status is where a pending item stands.
type Status string

// The statuses of an item. An item starts pending and ends in one of the others.
const (
	Pending  Status = "pending"
	Answered Status = "answered" // a question got its answer
	Provided Status = "provided" // a dependency got its value
	Rejected Status = "rejected" // a human refused: a dependency, an approval
	Skipped  Status = "skipped"  // an optional question took its default
	Timeout  Status = "timeout"  // nobody answered in time
	Failed   Status = "failed"   // the item cannot be answered any more
)

// final reports whether s ends an item.
func (s Status) final() bool {
	switch s {
	case Answered, Provided, Rejected, Skipped, Timeout, Failed:
		return true
	}
	return false
}

// Sentinel errors callers branch on.
var (
	ErrNotFound      = errors.New("not found")
	ErrResolved      = errors.New("already resolved")
	ErrWrongInstance = errors.New("belongs to another instance")
)

// Item is something a paused turn waits for: a question, a dependency, a
// tool approval. The kinds and their requests belong to the extensions that
// create them; the ledger keeps them and their lifecycle.
type Item struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // e.g. "question", "dependency", "approval"
	// Extension is the extension that created the item and resolves it.
	Extension string `json:"extension,omitempty"`
	// Where the item belongs: the turn, step and tool call that paused.
	Agent    string `json:"agent"`
	Instance string `json:"instance"`
	TurnID   string `json:"turn_id"`
	Step     int    `json:"step"`
	CallID   string `json:"call_id,omitempty"`
	// Request is what is asked (the parsed block, the tool call), as JSON.
	Request  json.RawMessage `json:"request"`
	Required bool            `json:"required"`
	Status   Status          `json:"status"`
	// Open is true while the item can be resolved: from its creation until
	// it is resolved, and after a timeout that leaves it open (a required
	// question keeps waiting for its answer).
	Open bool `json:"open"`
	// Checkpoint is the ID of the last message of the instance's history
	// when the turn paused: where the resume continues.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Answer is the answer given, for items whose answer is not secret.
	// A secret (a dependency's value) is never put here.
	Answer string `json:"answer,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Message is what the model reads about the resolution when the turn
	// resumes. It never holds a secret.
	Message string `json:"message,omitempty"`
	// Fails is set when the resolution fails the paused task (a required
	// dependency rejected or timed out); Reason says why.
	Fails bool `json:"fails,omitempty"`
	// ResumedBy is the ID of the turn that resumed the paused turn once all
	// its items were resolved.
	ResumedBy string `json:"resumed_by,omitempty"`
	// Trace is the W3C traceparent of the turn that paused, when it was
	// traced: the resume turn links to it, however much later it runs.
	Trace     string    `json:"trace,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt, if set, is when a pending item times out (see Expire).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Resolution is how an item ends.
type Resolution struct {
	Status Status
	Answer string
	Reason string
	// Message is what the model reads about it; see [Item.Message].
	Message string
	// KeepOpen leaves the item open to a later resolution: a required
	// question that timed out still waits for its answer.
	KeepOpen bool
	// Fails fails the paused task; see [Item.Fails].
	Fails bool
	// Agent and Instance, if set, must be the item's: an answer meant for
	// another instance is refused.
	Agent, Instance string
}

// Option configures a [Ledger].
type Option interface{ apply(*Ledger) }

type optionFunc func(*Ledger)

func (f optionFunc) apply(l *Ledger) { f(l) }

// WithEvents publishes "pending.created" and "pending.<status>" on bus.
func WithEvents(bus *events.Bus) Option { return optionFunc(func(l *Ledger) { l.bus = bus }) }

// WithClock sets the clock for timestamps and expiry. Default: time.Now.
func WithClock(now func() time.Time) Option { return optionFunc(func(l *Ledger) { l.now = now }) }

// Ledger keeps pending items in a store. It is safe for concurrent use; an
// item is resolved at most once however many goroutines try.
type Ledger struct {
	st  store.Store
	bus *events.Bus
	now func() time.Time
	mu  sync.Mutex // makes Resolve's read-check-write atomic
}

// New returns a ledger over st.
func New(st store.Store, opts ...Option) *Ledger {
	l := &Ledger{st: st, now: time.Now}
	for _, o := range opts {
		o.apply(l)
	}
	return l
}

// Create stores it as a new pending item and returns it with its ID, status
// and timestamps. An ID of its own is kept if valid and unused.
func (l *Ledger) Create(ctx context.Context, it Item) (Item, error) {
	return l.CreateWith(ctx, it, func(r store.PendingRecord) error { return l.st.PutPending(ctx, r) })
}

// CreateWith is [Ledger.Create] with the writing left to commit, which
// must store r, and may store it together with other changes in one
// transaction (see [store.Batch.Pending]): a turn that pauses commits the
// message that asks and the item that waits for the answer at once. If
// commit fails, the item does not exist and its error is returned.
func (l *Ledger) CreateWith(ctx context.Context, it Item, commit func(r store.PendingRecord) error) (Item, error) {
	if it.Kind == "" {
		return Item{}, errors.New("ledger: an item needs a kind")
	}
	if len(it.Request) == 0 {
		it.Request = json.RawMessage("null")
	}
	if !json.Valid(it.Request) {
		return Item{}, fmt.Errorf("ledger: %s item: request is not valid JSON", it.Kind)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if it.ID == "" {
		it.ID = newID()
	} else if _, found, err := l.st.GetPending(ctx, it.ID); err != nil {
		return Item{}, fmt.Errorf("ledger: %w", err)
	} else if found {
		return Item{}, fmt.Errorf("ledger: pending item %q already exists", it.ID)
	}
	now := l.now()
	it.Status, it.Open, it.Answer, it.Reason, it.Message, it.Fails, it.ResumedBy = Pending, true, "", "", "", false, ""
	it.CreatedAt, it.UpdatedAt = now, now
	r, err := record(it)
	if err != nil {
		return Item{}, err
	}
	if err := commit(r); err != nil {
		return Item{}, fmt.Errorf("ledger: %w", err)
	}
	l.publish("pending.created", it)
	return it, nil
}

// Get returns the item with id, or an error wrapping [ErrNotFound].
func (l *Ledger) Get(ctx context.Context, id string) (Item, error) {
	r, found, err := l.st.GetPending(ctx, id)
	if err != nil {
		return Item{}, fmt.Errorf("ledger: %w", err)
	}
	if !found {
		return Item{}, fmt.Errorf("pending item %q: %w", id, ErrNotFound)
	}
	return decode(r)
}

// Filter selects items; empty fields match everything.
type Filter struct {
	Agent, Instance string
	Status          Status
	// Open, if set, selects the items that can still be resolved.
	Open bool
	// TurnID, if set, selects the items of one paused turn.
	TurnID string
}

// List returns the items that match f, by ID.
func (l *Ledger) List(ctx context.Context, f Filter) ([]Item, error) {
	rs, err := l.st.ListPending(ctx, f.Agent, f.Instance)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var out []Item
	for _, r := range rs {
		it, err := decode(r)
		if err != nil {
			return nil, err
		}
		if (f.Status == "" || it.Status == f.Status) && (!f.Open || it.Open) && (f.TurnID == "" || it.TurnID == f.TurnID) {
			out = append(out, it)
		}
	}
	return out, nil
}

// Resolve ends the open item id as r says and returns it. Nothing changes
// when it fails: for an unknown ID ([ErrNotFound]), an item already
// resolved ([ErrResolved]), an item of another instance
// ([ErrWrongInstance]), or a status that does not end an item.
func (l *Ledger) Resolve(ctx context.Context, id string, r Resolution) (Item, error) {
	if !r.Status.final() {
		return Item{}, fmt.Errorf("pending item %q: cannot resolve as %q (want answered, provided, rejected, skipped, timeout or failed)", id, r.Status)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	it, err := l.Get(ctx, id)
	if err != nil {
		return Item{}, err
	}
	if (r.Agent != "" && r.Agent != it.Agent) || (r.Instance != "" && r.Instance != it.Instance) {
		return Item{}, fmt.Errorf("pending item %q %w: it is agent %q instance %q's, not agent %q instance %q's",
			id, ErrWrongInstance, it.Agent, it.Instance, r.Agent, r.Instance)
	}
	if !it.Open {
		return Item{}, fmt.Errorf("pending item %q: %w (it is %s)", id, ErrResolved, it.Status)
	}
	it.Status, it.Answer, it.Reason, it.Message, it.Open, it.Fails = r.Status, r.Answer, r.Reason, r.Message, r.KeepOpen, r.Fails
	it.UpdatedAt = l.now()
	if err := l.put(ctx, it); err != nil {
		return Item{}, err
	}
	l.publish("pending."+string(it.Status), it)
	return it, nil
}

// MarkResumed records that turnID resumed the paused turn of the items
// ids, which must all be resolved. Items marked already keep their mark.
func (l *Ledger) MarkResumed(ctx context.Context, ids []string, turnID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		it, err := l.Get(ctx, id)
		if err != nil {
			return err
		}
		if it.Open {
			return fmt.Errorf("pending item %q is still open; it cannot be marked resumed", id)
		}
		if it.ResumedBy != "" {
			continue
		}
		it.ResumedBy = turnID
		if err := l.put(ctx, it); err != nil {
			return err
		}
		l.publish("pending.resumed", it)
	}
	return nil
}

func (l *Ledger) put(ctx context.Context, it Item) error {
	r, err := record(it)
	if err != nil {
		return err
	}
	if err := l.st.PutPending(ctx, r); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

// record encodes it as the store keeps it.
func record(it Item) (store.PendingRecord, error) {
	data, err := json.Marshal(it)
	if err != nil {
		return store.PendingRecord{}, fmt.Errorf("ledger: encode pending item %q: %w", it.ID, err)
	}
	return store.PendingRecord{ID: it.ID, Agent: it.Agent, Instance: it.Instance, Data: data}, nil
}

func (l *Ledger) publish(topic string, it Item) {
	if l.bus == nil || !l.bus.Active() {
		return
	}
	l.bus.Publish(events.Event{Topic: topic, Agent: it.Agent, Instance: it.Instance, TurnID: it.TurnID, Source: "runtime", Data: it})
}

func decode(r store.PendingRecord) (Item, error) {
	var it Item
	if err := json.Unmarshal(r.Data, &it); err != nil {
		return Item{}, fmt.Errorf("ledger: pending item %q is corrupt: %w", r.ID, err)
	}
	return it, nil
}

// newID returns a random ID such as "p-3f9c2a7b1e04".
func newID() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return "p-" + hex.EncodeToString(b[:])
}

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
	Answered Status = "answered"
	Provided Status = "provided"
	Rejected Status = "rejected"
	Skipped  Status = "skipped"
	Timeout  Status = "timeout"
	Failed   Status = "failed"
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

// Item is something a paused turn waits for, of the kind its Extension
// handles; Answer and Message (what the model reads on resume) never hold a
// secret. Fields: docs/extensions.md, "The pause ledger".
type Item struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Extension  string          `json:"extension,omitempty"`
	Agent      string          `json:"agent"`
	Instance   string          `json:"instance"`
	TurnID     string          `json:"turn_id"`
	Step       int             `json:"step"`
	CallID     string          `json:"call_id,omitempty"`
	Request    json.RawMessage `json:"request"`
	Required   bool            `json:"required"`
	Status     Status          `json:"status"`
	Open       bool            `json:"open"`
	Checkpoint string          `json:"checkpoint,omitempty"`
	Answer     string          `json:"answer,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Message    string          `json:"message,omitempty"`
	Fails      bool            `json:"fails,omitempty"`
	ResumedBy  string          `json:"resumed_by,omitempty"`
	Trace      string          `json:"trace,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	ExpiresAt  time.Time       `json:"expires_at,omitzero"` // zero: never times out
}

// Resolution is how an item ends; its fields become the [Item]'s.
// KeepOpen leaves it open to a later resolution (a required question that
// timed out); Agent and Instance, if set, must be the item's.
type Resolution struct {
	Status          Status
	Answer, Reason  string
	Message         string
	KeepOpen, Fails bool
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
// must store r, alone or in one transaction with other changes; if it
// fails, the item does not exist.
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
	Open            bool // only items that can still be resolved
	TurnID          string
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

// Resolve ends the open item id as r says. It changes nothing when it fails:
// [ErrNotFound], [ErrResolved], [ErrWrongInstance], or a status that ends
// nothing.
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

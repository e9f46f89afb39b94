package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// ErrClosed is returned by every method of a closed store.
var ErrClosed = errors.New("store: closed")

// ErrFenced is matched by the error of a commit whose [Batch.Fence] is no
// longer the instance's latest fence: another owner took the instance
// since, and nothing of the batch was written.
var ErrFenced = errors.New("store: fenced")

// ErrUnavailable is matched by the error of a call the store could not
// complete because its server did not answer in time, or had no leader
// for the data (a NATS server died and the cluster is electing another):
// a transient condition, worth trying again after a moment.
var ErrUnavailable = errors.New("store: unavailable")

// ErrOutcomeUnknown is matched, with [ErrUnavailable], by the error of a
// commit whose answer never came: the batch may have been stored whole,
// or not at all, and a batch still in flight may yet land. Before it goes
// on, a writer takes a new fence ([Store.Fence]), which a late batch of
// the old one cannot pass, and reads the instance again.
var ErrOutcomeUnknown = errors.New("store: commit outcome unknown")

// Meta is what a store keeps about an instance besides its messages.
type Meta struct {
	// Turns counts the turns started in the instance.
	Turns int64 `json:"turns"`
	// NextSeq is the sequence number the next appended message gets.
	NextSeq uint64 `json:"next_seq"`
	// CreatedAt is when the instance was created.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the instance last changed.
	UpdatedAt time.Time `json:"updated_at"`
	// Usage adds up the model usage of the instance's turns.
	Usage pipeline.Usage `json:"usage"`
}

// Record is a message with its position in the instance's history.
type Record struct {
	Seq uint64 `json:"seq"`
	// Message is shared, not copied: a store may keep the pointer, so
	// nobody changes a message once it is committed (a change is a new
	// message under the same Seq). Never nil.
	Message *pipeline.Message `json:"message"`
}

// Batch is a set of changes to one instance, committed atomically. Put is
// applied before Delete, so a Seq in both ends up deleted; of two records
// with the same Seq in Put, the later wins.
type Batch struct {
	// Put inserts or overwrites the records at their Seq.
	Put []Record
	// Delete removes the records with these sequence numbers.
	Delete []uint64
	// Meta, if not nil, replaces the instance's meta.
	Meta *Meta
	// Tasks are delegation tasks stored with the changes, replacing those
	// with their IDs: a turn's call_agent results and the tasks they
	// create are committed together (see [Store.CommitTasks]).
	Tasks []TaskRecord
	// DeleteTasks removes the delegation tasks with these IDs, as
	// [Store.CommitTasks] does: a missing one is no error, an ID also in
	// Tasks is refused. A parent's owner adds a child's report and deletes
	// the child in one commit, under the parent's instance's fence.
	DeleteTasks []string
	// Pending are pending items stored with the changes, replacing those
	// with their IDs: the message that asks a human something and the item
	// that waits for the answer are committed together, so a crash cannot
	// leave one without the other (see [Store.PutPending]).
	Pending []PendingRecord
	// State replaces the state of the extensions it names, as
	// [Store.SetState] does: a nil value deletes it, an empty non-nil one
	// is stored. An owner writes an extension's state of its instance
	// under the instance's fence. The store does not keep the values.
	State map[string][]byte
	// Fence, if not zero, makes the commit conditional: it is applied only
	// while Fence is the instance's latest fence ([Store.Fence]), and
	// otherwise fails with an error matching [ErrFenced], writing nothing.
	// Zero commits unconditionally, as one process owning its store does.
	Fence uint64
}

// check refuses a batch that cannot be stored as it is.
func (b *Batch) check() error {
	for _, r := range b.Put {
		if r.Message == nil {
			return fmt.Errorf("store: record %d has no message", r.Seq)
		}
	}
	for i := range b.Pending {
		if err := b.Pending[i].check(); err != nil {
			return err
		}
	}
	for ext := range b.State {
		if err := ValidateName("extension name", ext); err != nil {
			return err
		}
	}
	return checkTasks(b.Tasks, b.DeleteTasks)
}

// Empty reports whether b changes nothing.
func (b *Batch) Empty() bool {
	return len(b.Put) == 0 && len(b.Delete) == 0 && b.Meta == nil && len(b.Tasks) == 0 && len(b.DeleteTasks) == 0 && len(b.Pending) == 0 && len(b.State) == 0
}

// Store persists instances: their history, their meta, their extensions'
// state and their sealed secrets. Implementations are safe for concurrent
// use.
//
// Agent, extension and secret names match [a-zA-Z0-9_.-]{1,64}; instance
// keys are 1–256 bytes of UTF-8 without NUL (new ones are checked against
// the stricter [ValidateInstanceKey] by the runtime, not by the store).
// Every method refuses other names with an error matching
// [ErrInvalidName], and every method of a closed store fails with
// [ErrClosed].
type Store interface {
	// LoadInstance returns the instance's meta and its records in Seq order;
	// found is false (and the rest zero) when neither meta nor records are
	// stored for it. State alone does not make an instance found.
	LoadInstance(ctx context.Context, agent, key string) (meta Meta, records []Record, found bool, err error)
	// LoadMeta returns the instance's meta alone, at a cost that does not
	// grow with its history; found is false (and meta zero) when no meta
	// is stored for it.
	LoadMeta(ctx context.Context, agent, key string) (meta Meta, found bool, err error)
	// Commit applies b atomically, if b.Fence allows it.
	Commit(ctx context.Context, agent, key string, b Batch) error
	// Fence takes a new fence of the instance, greater than every one
	// taken before, and returns it: from then on a commit to the instance
	// with an older [Batch.Fence] fails with [ErrFenced]. Whoever takes an
	// instance over takes its fence before it loads the instance, so that
	// a former owner that stalled past its lease cannot write over what
	// the new owner writes. A fence alone does not make an instance exist.
	Fence(ctx context.Context, agent, key string) (uint64, error)
	// Instances lists the instance keys of agent that have meta, records or
	// state stored, sorted. Secrets alone do not list an instance: they are
	// kept for it, but do not make it exist.
	Instances(ctx context.Context, agent string) ([]string, error)
	// GetState returns the state extension keeps for the instance, or nil if
	// none. The caller owns the returned slice.
	GetState(ctx context.Context, agent, key, extension string) ([]byte, error)
	// SetState replaces that state; a nil value deletes it, an empty non-nil
	// one is stored. The store does not keep value.
	SetState(ctx context.Context, agent, key, extension string, value []byte) error
	// PutPending stores r under r.ID, replacing any record with that ID.
	PutPending(ctx context.Context, r PendingRecord) error
	// GetPending returns the pending record with id; found is false if none.
	GetPending(ctx context.Context, id string) (r PendingRecord, found bool, err error)
	// ListPending returns the pending records of agent's instance key,
	// sorted by ID; an empty key lists all of agent's, an empty agent all.
	ListPending(ctx context.Context, agent, key string) ([]PendingRecord, error)
	// CommitTasks stores the delegation tasks put, replacing those with
	// their IDs, and deletes the tasks with the IDs del, all atomically:
	// nothing is changed if anything fails. Deleting a missing task is not
	// an error; an ID both put and deleted is.
	CommitTasks(ctx context.Context, put []TaskRecord, del []string) error
	// GetTask returns the task with id; found is false if none.
	GetTask(ctx context.Context, id string) (r TaskRecord, found bool, err error)
	// ListTasks returns the tasks of agent's instance key, sorted by ID; an
	// empty key lists all of agent's, an empty agent all.
	ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error)
	// PutSecret stores a sealed (encrypted) secret value of the instance
	// under name, replacing any. The store never sees plaintext: callers seal
	// values first. A sealed value is never empty, so an empty one is refused
	// (it is not a deletion, unlike a nil value to SetState). The store does
	// not keep sealed.
	PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error
	// GetSecret returns the sealed value; found is false if none. The caller
	// owns the slice.
	GetSecret(ctx context.Context, agent, key, name string) (sealed []byte, found bool, err error)
	// ListSecrets returns the names of the instance's secrets, sorted; nil
	// if none.
	ListSecrets(ctx context.Context, agent, key string) ([]string, error)
	// Close releases the store. Later calls, Close included, fail with ErrClosed.
	Close() error
}

// PendingRecord is what a store keeps of one pending item (a question, a
// dependency, an approval a paused turn waits for): its ID, the instance it
// belongs to, and the item itself as JSON, which the store does not read.
type PendingRecord struct {
	// ID matches [a-zA-Z0-9_.-]{1,64}.
	ID       string          `json:"id"`
	Agent    string          `json:"agent"`
	Instance string          `json:"instance"`
	Data     json.RawMessage `json:"data"`
}

// check refuses a record a store cannot keep.
func (r *PendingRecord) check() error { return r.checkAs("pending item") }

// checkAs is check, naming the record what in errors.
func (r *PendingRecord) checkAs(what string) error {
	if err := ValidateName(what+" ID", r.ID); err != nil {
		return err
	}
	if err := validate(r.Agent, r.Instance); err != nil {
		return err
	}
	if !json.Valid(r.Data) {
		return fmt.Errorf("store: %s %q: data is not valid JSON", what, r.ID)
	}
	return nil
}

// matches reports whether r belongs to agent's instance key ("" matches any).
func (r *PendingRecord) matches(agent, key string) bool {
	return (agent == "" || r.Agent == agent) && (key == "" || r.Instance == key)
}

// validateSecret checks the names the secret methods receive.
func validateSecret(agent, key, name string) error {
	if err := validate(agent, key); err != nil {
		return err
	}
	return ValidateEnvName("secret name", name)
}

// checkSealed refuses an empty sealed value.
func checkSealed(name string, sealed []byte) error {
	if len(sealed) == 0 {
		return fmt.Errorf("store: secret %q: empty sealed value", name)
	}
	return nil
}

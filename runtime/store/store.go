package store

import (
	"context"
	"errors"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// ErrClosed is returned by every method of a closed store.
var ErrClosed = errors.New("store: closed")

// Meta is what a store keeps about an instance besides its messages.
type Meta struct {
	// Turns counts the turns started in the instance.
	Turns int64 `json:"turns"`
	// NextSeq is the sequence number the next appended message gets.
	NextSeq   uint64    `json:"next_seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Record is a message with its position in the instance's history.
type Record struct {
	Seq     uint64           `json:"seq"`
	Message pipeline.Message `json:"message"`
}

// Batch is a set of changes to one instance, committed atomically.
type Batch struct {
	// Put inserts or overwrites the records at their Seq.
	Put []Record
	// Delete removes the records with these sequence numbers.
	Delete []uint64
	// Meta, if not nil, replaces the instance's meta.
	Meta *Meta
}

// Empty reports whether b changes nothing.
func (b *Batch) Empty() bool { return len(b.Put) == 0 && len(b.Delete) == 0 && b.Meta == nil }

// Store persists instances: their history, their meta and their extensions'
// state. Implementations are safe for concurrent use.
//
// Names are checked by the caller: agent and extension names match
// [a-zA-Z0-9_.-]{1,64}; instance keys are 1–256 bytes of UTF-8 without NUL.
type Store interface {
	// LoadInstance returns the instance's meta and its records in Seq order;
	// found is false (and the rest zero) when nothing is stored for it.
	LoadInstance(ctx context.Context, agent, key string) (meta Meta, records []Record, found bool, err error)
	// Commit applies b atomically.
	Commit(ctx context.Context, agent, key string, b Batch) error
	// Instances lists the instance keys of agent that have anything stored, sorted.
	Instances(ctx context.Context, agent string) ([]string, error)
	// GetState returns the state extension keeps for the instance, or nil if none.
	GetState(ctx context.Context, agent, key, extension string) ([]byte, error)
	// SetState replaces that state; a nil value deletes it.
	SetState(ctx context.Context, agent, key, extension string, value []byte) error
	// Close releases the store. Later calls fail with ErrClosed.
	Close() error
}

package store

import (
	"cmp"
	"context"
	"fmt"
)

// Backend is where a [Store] keeps its data: [NewMemory]'s maps, a Badger
// database (package store/badger), a JetStream bucket (package
// store/jetstream), or another implementation's. [Checked] makes a Backend
// a Store. Its methods are those of Store, called with arguments already
// checked (names, records, batches) by Checked's Store, between Begin and
// End, with a ctx not yet done; they do what Store's methods of the same
// names document. A Store's SetState is a Commit of a [Batch] with the
// State alone.
//
// A backend with a server to ask may also have a method
// Ping(ctx context.Context) error, which [Checked]'s Store calls for its
// own Ping; without it, Ping answers nil.
//
// The conformance suite in package store/storetest checks a backend
// through the Store that Checked returns.
type Backend interface {
	// Begin fails with [ErrClosed] once the backend is closed; else it
	// holds off Close until End.
	Begin() error
	// End ends what Begin began.
	End()
	LoadInstance(ctx context.Context, agent, key string) (Meta, []Record, bool, error)
	LoadMeta(ctx context.Context, agent, key string) (Meta, bool, error)
	Commit(ctx context.Context, agent, key string, b Batch) error
	Fence(ctx context.Context, agent, key string) (uint64, error)
	Instances(ctx context.Context, agent string) ([]string, error)
	GetState(ctx context.Context, agent, key, extension string) ([]byte, error)
	PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error
	GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error)
	ListSecrets(ctx context.Context, agent, key string) ([]string, error)
	PutPending(ctx context.Context, r PendingRecord) error
	GetPending(ctx context.Context, id string) (PendingRecord, bool, error)
	ListPending(ctx context.Context, agent, key string) ([]PendingRecord, error)
	CommitTasks(ctx context.Context, put []TaskRecord, del []string) error
	GetTask(ctx context.Context, id string) (TaskRecord, bool, error)
	ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error)
	// Close releases the backend; a second Close fails with [ErrClosed].
	Close() error
}

// Checked returns the [Store] of b: it refuses a closed store, invalid
// names and records, and a done ctx, in that order, before b sees the
// call, so that every backend checks alike.
func Checked(b Backend) Store { return checkedStore{b} }

// checkedStore is the [Store] of [Checked].
type checkedStore struct{ b Backend }

// Backend returns the backend s checks for. It is for a backend's own
// tests, which reach their backend through the Store they opened:
// s.(interface{ Backend() store.Backend }).
func (s checkedStore) Backend() Backend { return s.b }

// LoadInstance implements [Store].
func (s checkedStore) LoadInstance(ctx context.Context, agent, key string) (Meta, []Record, bool, error) {
	if err := s.b.Begin(); err != nil {
		return Meta{}, nil, false, err
	}
	defer s.b.End()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return Meta{}, nil, false, err
	}
	return s.b.LoadInstance(ctx, agent, key)
}

// LoadMeta implements [Store].
func (s checkedStore) LoadMeta(ctx context.Context, agent, key string) (Meta, bool, error) {
	if err := s.b.Begin(); err != nil {
		return Meta{}, false, err
	}
	defer s.b.End()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return Meta{}, false, err
	}
	return s.b.LoadMeta(ctx, agent, key)
}

// Commit implements [Store].
func (s checkedStore) Commit(ctx context.Context, agent, key string, b Batch) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return err
	}
	if err := b.check(); err != nil {
		return err
	}
	return s.b.Commit(ctx, agent, key, b)
}

// Fence implements [Store].
func (s checkedStore) Fence(ctx context.Context, agent, key string) (uint64, error) {
	if err := s.b.Begin(); err != nil {
		return 0, err
	}
	defer s.b.End()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return 0, err
	}
	return s.b.Fence(ctx, agent, key)
}

// Fenced returns the error of a commit of agent's instance key refused
// because fence is no longer the instance's latest fence: it matches
// [ErrFenced]. Every backend refuses such a commit with it, so that the
// refusal reads alike whatever the store.
func Fenced(agent, key string, fence uint64) error {
	return fmt.Errorf("store: commit agent %q instance %q with fence %d: nothing written: %w: another owner took the instance since", agent, key, fence, ErrFenced)
}

// Instances implements [Store].
func (s checkedStore) Instances(ctx context.Context, agent string) ([]string, error) {
	if err := s.b.Begin(); err != nil {
		return nil, err
	}
	defer s.b.End()
	if err := checked(ctx, ValidateName("agent name", agent)); err != nil {
		return nil, err
	}
	return s.b.Instances(ctx, agent)
}

// GetState implements [Store].
func (s checkedStore) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	if err := s.b.Begin(); err != nil {
		return nil, err
	}
	defer s.b.End()
	if err := checked(ctx, validateState(agent, key, extension)); err != nil {
		return nil, err
	}
	return s.b.GetState(ctx, agent, key, extension)
}

// SetState implements [Store].
func (s checkedStore) SetState(ctx context.Context, agent, key, extension string, value []byte) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := checked(ctx, validateState(agent, key, extension)); err != nil {
		return err
	}
	// A commit of the state alone, which a batch's State also writes.
	return s.b.Commit(ctx, agent, key, Batch{State: map[string][]byte{extension: value}})
}

// PutSecret implements [Store].
func (s checkedStore) PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := checked(ctx, cmp.Or(validateSecret(agent, key, name), checkSealed(name, sealed))); err != nil {
		return err
	}
	return s.b.PutSecret(ctx, agent, key, name, sealed)
}

// GetSecret implements [Store].
func (s checkedStore) GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error) {
	if err := s.b.Begin(); err != nil {
		return nil, false, err
	}
	defer s.b.End()
	if err := checked(ctx, validateSecret(agent, key, name)); err != nil {
		return nil, false, err
	}
	return s.b.GetSecret(ctx, agent, key, name)
}

// ListSecrets implements [Store].
func (s checkedStore) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	if err := s.b.Begin(); err != nil {
		return nil, err
	}
	defer s.b.End()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return nil, err
	}
	return s.b.ListSecrets(ctx, agent, key)
}

// PutPending implements [Store].
func (s checkedStore) PutPending(ctx context.Context, r PendingRecord) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := checked(ctx, r.check()); err != nil {
		return err
	}
	return s.b.PutPending(ctx, r)
}

// GetPending implements [Store].
func (s checkedStore) GetPending(ctx context.Context, id string) (PendingRecord, bool, error) {
	if err := s.b.Begin(); err != nil {
		return PendingRecord{}, false, err
	}
	defer s.b.End()
	if err := checked(ctx, ValidateName("pending item ID", id)); err != nil {
		return PendingRecord{}, false, err
	}
	return s.b.GetPending(ctx, id)
}

// ListPending implements [Store].
func (s checkedStore) ListPending(ctx context.Context, agent, key string) ([]PendingRecord, error) {
	if err := s.b.Begin(); err != nil {
		return nil, err
	}
	defer s.b.End()
	if err := checked(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	return s.b.ListPending(ctx, agent, key)
}

// CommitTasks implements [Store].
func (s checkedStore) CommitTasks(ctx context.Context, put []TaskRecord, del []string) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := checked(ctx, checkTasks(put, del)); err != nil {
		return err
	}
	return s.b.CommitTasks(ctx, put, del)
}

// GetTask implements [Store].
func (s checkedStore) GetTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	if err := s.b.Begin(); err != nil {
		return TaskRecord{}, false, err
	}
	defer s.b.End()
	if err := checked(ctx, ValidateName("task ID", id)); err != nil {
		return TaskRecord{}, false, err
	}
	return s.b.GetTask(ctx, id)
}

// ListTasks implements [Store].
func (s checkedStore) ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
	if err := s.b.Begin(); err != nil {
		return nil, err
	}
	defer s.b.End()
	if err := checked(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	return s.b.ListTasks(ctx, agent, key)
}

// Ping asks the store's server for one cheap answer: nil if it answers
// within ctx and the store's request timeout, an error matching
// [ErrUnavailable] if not. A store kept in the process always answers.
// The runtime's cluster mode pings its store before it renews its
// membership: a process that cannot reach its store leaves the cluster.
func (s checkedStore) Ping(ctx context.Context) error {
	if err := s.b.Begin(); err != nil {
		return err
	}
	defer s.b.End()
	if err := ctx.Err(); err != nil {
		return err
	}
	if p, ok := s.b.(pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// pinger is a backend with a server to ask, which may not answer.
type pinger interface {
	Ping(ctx context.Context) error
}

// Close implements [Store].
func (s checkedStore) Close() error { return s.b.Close() }

var _ Store = checkedStore{}

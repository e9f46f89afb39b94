package store

import (
	"cmp"
	"context"
	"fmt"
)

// backend is where a store keeps its data: [NewMemory]'s maps or
// [OpenBadger]'s database. Its methods are those of [Store], called by
// [checkedStore] with arguments already checked, between begin and end.
type backend interface {
	// begin fails with [ErrClosed] once the backend is closed; else it holds
	// off close until end.
	begin() error
	end()
	loadInstance(ctx context.Context, agent, key string) (Meta, []Record, bool, error)
	loadMeta(ctx context.Context, agent, key string) (Meta, bool, error)
	commit(ctx context.Context, agent, key string, b Batch) error
	fence(ctx context.Context, agent, key string) (uint64, error)
	instances(ctx context.Context, agent string) ([]string, error)
	getState(ctx context.Context, agent, key, extension string) ([]byte, error)
	putSecret(ctx context.Context, agent, key, name string, sealed []byte) error
	getSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error)
	listSecrets(ctx context.Context, agent, key string) ([]string, error)
	putPending(ctx context.Context, r PendingRecord) error
	getPending(ctx context.Context, id string) (PendingRecord, bool, error)
	listPending(ctx context.Context, agent, key string) ([]PendingRecord, error)
	commitTasks(ctx context.Context, put []TaskRecord, del []string) error
	getTask(ctx context.Context, id string) (TaskRecord, bool, error)
	listTasks(ctx context.Context, agent, key string) ([]TaskRecord, error)
	// close releases the backend; a second close fails with [ErrClosed].
	close() error
}

// checkedStore is the [Store] both constructors return: it refuses a closed
// store, invalid names and records, and a done ctx, in that order, before
// its backend sees the call, so the two backends check alike.
type checkedStore struct{ b backend }

// LoadInstance implements [Store].
func (s checkedStore) LoadInstance(ctx context.Context, agent, key string) (Meta, []Record, bool, error) {
	if err := s.b.begin(); err != nil {
		return Meta{}, nil, false, err
	}
	defer s.b.end()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return Meta{}, nil, false, err
	}
	return s.b.loadInstance(ctx, agent, key)
}

// LoadMeta implements [Store].
func (s checkedStore) LoadMeta(ctx context.Context, agent, key string) (Meta, bool, error) {
	if err := s.b.begin(); err != nil {
		return Meta{}, false, err
	}
	defer s.b.end()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return Meta{}, false, err
	}
	return s.b.loadMeta(ctx, agent, key)
}

// Commit implements [Store].
func (s checkedStore) Commit(ctx context.Context, agent, key string, b Batch) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return err
	}
	return s.b.commit(ctx, agent, key, b)
}

// Fence implements [Store].
func (s checkedStore) Fence(ctx context.Context, agent, key string) (uint64, error) {
	if err := s.b.begin(); err != nil {
		return 0, err
	}
	defer s.b.end()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return 0, err
	}
	return s.b.fence(ctx, agent, key)
}

// fencedError is the error of a commit refused by its fence.
func fencedError(agent, key string, fence uint64) error {
	return fmt.Errorf("store: commit agent %q instance %q with fence %d: nothing written: %w: another owner took the instance since", agent, key, fence, ErrFenced)
}

// Instances implements [Store].
func (s checkedStore) Instances(ctx context.Context, agent string) ([]string, error) {
	if err := s.b.begin(); err != nil {
		return nil, err
	}
	defer s.b.end()
	if err := checked(ctx, ValidateName("agent name", agent)); err != nil {
		return nil, err
	}
	return s.b.instances(ctx, agent)
}

// GetState implements [Store].
func (s checkedStore) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	if err := s.b.begin(); err != nil {
		return nil, err
	}
	defer s.b.end()
	if err := checked(ctx, validateState(agent, key, extension)); err != nil {
		return nil, err
	}
	return s.b.getState(ctx, agent, key, extension)
}

// SetState implements [Store].
func (s checkedStore) SetState(ctx context.Context, agent, key, extension string, value []byte) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := checked(ctx, validateState(agent, key, extension)); err != nil {
		return err
	}
	// A commit of the state alone, which a batch's State also writes.
	return s.b.commit(ctx, agent, key, Batch{State: map[string][]byte{extension: value}})
}

// PutSecret implements [Store].
func (s checkedStore) PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := checked(ctx, cmp.Or(validateSecret(agent, key, name), checkSealed(name, sealed))); err != nil {
		return err
	}
	return s.b.putSecret(ctx, agent, key, name, sealed)
}

// GetSecret implements [Store].
func (s checkedStore) GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error) {
	if err := s.b.begin(); err != nil {
		return nil, false, err
	}
	defer s.b.end()
	if err := checked(ctx, validateSecret(agent, key, name)); err != nil {
		return nil, false, err
	}
	return s.b.getSecret(ctx, agent, key, name)
}

// ListSecrets implements [Store].
func (s checkedStore) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	if err := s.b.begin(); err != nil {
		return nil, err
	}
	defer s.b.end()
	if err := checked(ctx, validate(agent, key)); err != nil {
		return nil, err
	}
	return s.b.listSecrets(ctx, agent, key)
}

// PutPending implements [Store].
func (s checkedStore) PutPending(ctx context.Context, r PendingRecord) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := checked(ctx, r.check()); err != nil {
		return err
	}
	return s.b.putPending(ctx, r)
}

// GetPending implements [Store].
func (s checkedStore) GetPending(ctx context.Context, id string) (PendingRecord, bool, error) {
	if err := s.b.begin(); err != nil {
		return PendingRecord{}, false, err
	}
	defer s.b.end()
	if err := checked(ctx, ValidateName("pending item ID", id)); err != nil {
		return PendingRecord{}, false, err
	}
	return s.b.getPending(ctx, id)
}

// ListPending implements [Store].
func (s checkedStore) ListPending(ctx context.Context, agent, key string) ([]PendingRecord, error) {
	if err := s.b.begin(); err != nil {
		return nil, err
	}
	defer s.b.end()
	if err := checked(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	return s.b.listPending(ctx, agent, key)
}

// CommitTasks implements [Store].
func (s checkedStore) CommitTasks(ctx context.Context, put []TaskRecord, del []string) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := checked(ctx, checkTasks(put, del)); err != nil {
		return err
	}
	return s.b.commitTasks(ctx, put, del)
}

// GetTask implements [Store].
func (s checkedStore) GetTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	if err := s.b.begin(); err != nil {
		return TaskRecord{}, false, err
	}
	defer s.b.end()
	if err := checked(ctx, ValidateName("task ID", id)); err != nil {
		return TaskRecord{}, false, err
	}
	return s.b.getTask(ctx, id)
}

// ListTasks implements [Store].
func (s checkedStore) ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
	if err := s.b.begin(); err != nil {
		return nil, err
	}
	defer s.b.end()
	if err := checked(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	return s.b.listTasks(ctx, agent, key)
}

// Ping asks the store's server for one cheap answer: nil if it answers
// within ctx and the store's request timeout, an error matching
// [ErrUnavailable] if not. A store kept in the process always answers.
// The runtime's cluster mode pings its store before it renews its
// membership: a process that cannot reach its store leaves the cluster.
func (s checkedStore) Ping(ctx context.Context) error {
	if err := s.b.begin(); err != nil {
		return err
	}
	defer s.b.end()
	if err := ctx.Err(); err != nil {
		return err
	}
	if p, ok := s.b.(pinger); ok {
		return p.ping(ctx)
	}
	return nil
}

// pinger is a backend with a server to ask, which may not answer.
type pinger interface {
	ping(ctx context.Context) error
}

// Close implements [Store].
func (s checkedStore) Close() error { return s.b.close() }

var _ Store = checkedStore{}

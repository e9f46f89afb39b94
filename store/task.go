package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// This file holds both stores' task methods: delegation tasks (see the
// runtime's call_agent), kept by ID like pending items, and changed several
// at a time, atomically, since a child's report changes its parent too.

// TaskRecord is what a store keeps of one delegation task: its ID, the
// instance working on it, and the task itself as JSON, which the store does
// not read. Its rules are those of a [PendingRecord].
type TaskRecord PendingRecord

func (r *TaskRecord) check() error { return (*PendingRecord)(r).checkAs("task") }

// CommitTasks implements [Store].
func (m *memoryStore) CommitTasks(ctx context.Context, put []TaskRecord, del []string) error {
	if err := m.ready(ctx, checkTasks(put, del)); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		return ErrClosed
	}
	for _, id := range del {
		delete(m.tasks, id)
	}
	m.putTasks(put)
	return nil
}

// putTasks stores put. m.mu is held for writing.
func (m *memoryStore) putTasks(put []TaskRecord) {
	if len(put) > 0 && m.tasks == nil {
		m.tasks = map[string]PendingRecord{}
	}
	for _, r := range put {
		r.Data = bytes.Clone(r.Data) // callers reuse buffers
		m.tasks[r.ID] = PendingRecord(r)
	}
}

// GetTask implements [Store].
func (m *memoryStore) GetTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	if err := m.ready(ctx, ValidateName("task ID", id)); err != nil {
		return TaskRecord{}, false, err
	}
	r, ok, err := m.getByID(taskTable, id)
	return TaskRecord(r), ok, err
}

// ListTasks implements [Store].
func (m *memoryStore) ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
	if err := m.ready(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	recs, err := m.listByID(taskTable, agent, key)
	return tasksOf(recs), err
}

// tasksOf converts records read by ID into tasks.
func tasksOf(recs []PendingRecord) []TaskRecord {
	out := make([]TaskRecord, len(recs))
	for i, r := range recs {
		out[i] = TaskRecord(r)
	}
	return out
}

// checkTasks refuses a CommitTasks a store cannot apply: an invalid record
// or ID, or an ID both put and deleted.
func checkTasks(put []TaskRecord, del []string) error {
	for i := range put {
		if err := put[i].check(); err != nil {
			return err
		}
	}
	for _, id := range del {
		if err := ValidateName("task ID", id); err != nil {
			return err
		}
		if slices.ContainsFunc(put, func(r TaskRecord) bool { return r.ID == id }) {
			return fmt.Errorf("store: task %q is both put and deleted", id)
		}
	}
	return nil
}

// CommitTasks implements [Store], in one Badger transaction.
func (s *badgerStore) CommitTasks(ctx context.Context, put []TaskRecord, del []string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	if err := checked(ctx, checkTasks(put, del)); err != nil {
		return err
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		for _, id := range del {
			if err := txn.Delete(taskKey(id)); err != nil {
				return err
			}
		}
		return setTasks(txn, put)
	})
	if err != nil {
		return fmt.Errorf("store: commit tasks: %w", err)
	}
	return nil
}

// setTasks writes put in txn.
func setTasks(txn *badger.Txn, put []TaskRecord) error {
	for _, r := range put {
		v, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode task %q: %w", r.ID, err)
		}
		if err := txn.Set(taskKey(r.ID), v); err != nil {
			return fmt.Errorf("write task %q: %w", r.ID, err)
		}
	}
	return nil
}

// GetTask implements [Store].
func (s *badgerStore) GetTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	if err := s.begin(); err != nil {
		return TaskRecord{}, false, err
	}
	defer s.end()
	if err := checked(ctx, ValidateName("task ID", id)); err != nil {
		return TaskRecord{}, false, err
	}
	r, found, err := s.getByID(taskPrefix, id)
	if err != nil {
		return TaskRecord{}, false, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return TaskRecord(r), found, nil
}

// ListTasks implements [Store].
func (s *badgerStore) ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.end()
	if err := checked(ctx, validateFilter(agent, key)); err != nil {
		return nil, err
	}
	recs, err := s.listByID(taskPrefix, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	return tasksOf(recs), nil
}

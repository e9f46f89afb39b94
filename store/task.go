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

// commitTasks implements [Store.CommitTasks].
func (m *memoryStore) commitTasks(ctx context.Context, put []TaskRecord, del []string) error {
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

// getTask implements [Store.GetTask].
func (m *memoryStore) getTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	r, ok, err := m.getByID(taskTable, id)
	return TaskRecord(r), ok, err
}

// listTasks implements [Store.ListTasks].
func (m *memoryStore) listTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
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

// commitTasks implements [Store.CommitTasks], in one Badger transaction.
func (s *badgerStore) commitTasks(ctx context.Context, put []TaskRecord, del []string) error {
	err := s.update(false, func(txn *badger.Txn) error {
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

// getTask implements [Store.GetTask].
func (s *badgerStore) getTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	r, found, err := s.getByID(taskPrefix, id)
	if err != nil {
		return TaskRecord{}, false, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return TaskRecord(r), found, nil
}

// listTasks implements [Store.ListTasks].
func (s *badgerStore) listTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
	recs, err := s.listByID(taskPrefix, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	return tasksOf(recs), nil
}

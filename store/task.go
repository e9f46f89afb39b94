package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// This file holds the task record and the memory store's task methods:
// delegation tasks (see the runtime's call_agent), kept by ID like pending
// items, and changed several at a time, atomically, since a child's report
// changes its parent too.

// TaskRecord is what a store keeps of one delegation task: its ID, the
// instance working on it, and the task itself as JSON, which the store does
// not read. Its rules are those of a [PendingRecord].
type TaskRecord PendingRecord

func (r *TaskRecord) check() error { return (*PendingRecord)(r).checkAs("task") }

// CommitTasks implements [Store.CommitTasks].
func (m *memoryStore) CommitTasks(ctx context.Context, put []TaskRecord, del []string) error {
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

// GetTask implements [Store.GetTask].
func (m *memoryStore) GetTask(ctx context.Context, id string) (TaskRecord, bool, error) {
	r, ok, err := m.getByID(taskTable, id)
	return TaskRecord(r), ok, err
}

// ListTasks implements [Store.ListTasks].
func (m *memoryStore) ListTasks(ctx context.Context, agent, key string) ([]TaskRecord, error) {
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

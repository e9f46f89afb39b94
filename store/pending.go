package store

import (
	"bytes"
	"context"
	"slices"
	"strings"
)

// This file holds the memory store's pending-item methods.

// PutPending implements [Store.PutPending].
func (m *memoryStore) PutPending(ctx context.Context, r PendingRecord) error {
	r.Data = bytes.Clone(r.Data) // callers reuse buffers
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agents == nil {
		return ErrClosed
	}
	if m.pending == nil {
		m.pending = map[string]PendingRecord{}
	}
	m.pending[r.ID] = r
	return nil
}

// GetPending implements [Store.GetPending].
func (m *memoryStore) GetPending(ctx context.Context, id string) (PendingRecord, bool, error) {
	return m.getByID(pendingTable, id)
}

// A table picks the map of records by ID (pending items or tasks); it is
// read under m.mu, since a map is made on first use.
type table func(*memoryStore) map[string]PendingRecord

func pendingTable(m *memoryStore) map[string]PendingRecord { return m.pending }
func taskTable(m *memoryStore) map[string]PendingRecord    { return m.tasks }

// getByID returns the record with id in table, a copy.
func (m *memoryStore) getByID(table table, id string) (PendingRecord, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return PendingRecord{}, false, ErrClosed
	}
	r, ok := table(m)[id]
	r.Data = bytes.Clone(r.Data)
	return r, ok, nil
}

// ListPending implements [Store.ListPending].
func (m *memoryStore) ListPending(ctx context.Context, agent, key string) ([]PendingRecord, error) {
	return m.listByID(pendingTable, agent, key)
}

// listByID returns the records of table that belong to agent's instance
// key, copies, sorted by ID.
func (m *memoryStore) listByID(table table, agent, key string) ([]PendingRecord, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.agents == nil {
		return nil, ErrClosed
	}
	var out []PendingRecord
	for _, r := range table(m) {
		if r.matches(agent, key) {
			r.Data = bytes.Clone(r.Data)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b PendingRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// validateFilter checks a ListPending filter: "" or a valid name each.
func validateFilter(agent, key string) error {
	if agent != "" {
		if err := ValidateName("agent name", agent); err != nil {
			return err
		}
	}
	if key != "" {
		if err := ValidateStoredKey(key); err != nil {
			return err
		}
	}
	return nil
}

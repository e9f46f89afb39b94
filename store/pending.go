package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// This file holds both stores' pending-item methods.

// putPending implements [Store.PutPending].
func (m *memoryStore) putPending(ctx context.Context, r PendingRecord) error {
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

// getPending implements [Store.GetPending].
func (m *memoryStore) getPending(ctx context.Context, id string) (PendingRecord, bool, error) {
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

// listPending implements [Store.ListPending].
func (m *memoryStore) listPending(ctx context.Context, agent, key string) ([]PendingRecord, error) {
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
		if err := validateStoredKey(key); err != nil {
			return err
		}
	}
	return nil
}

// putPending implements [Store.PutPending].
func (s *badgerStore) putPending(ctx context.Context, r PendingRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("store: encode pending item %q: %w", r.ID, err)
	}
	if err := s.update(false, func(txn *badger.Txn) error { return txn.Set(pendingKey(r.ID), v) }); err != nil {
		return fmt.Errorf("store: put pending item %q: %w", r.ID, err)
	}
	return nil
}

// getPending implements [Store.GetPending].
func (s *badgerStore) getPending(ctx context.Context, id string) (PendingRecord, bool, error) {
	r, found, err := s.getByID(pendingPrefix, id)
	if err != nil {
		return PendingRecord{}, false, fmt.Errorf("store: get pending item %q: %w", id, err)
	}
	return r, found, nil
}

// getByID reads the record under prefix and id (a pending item or a task).
func (s *badgerStore) getByID(prefix []byte, id string) (r PendingRecord, found bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(append(bytes.Clone(prefix), id...))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return decodeByID(item, prefix, &r)
	})
	return r, found, err
}

// listPending implements [Store.ListPending].
func (s *badgerStore) listPending(ctx context.Context, agent, key string) ([]PendingRecord, error) {
	out, err := s.listByID(pendingPrefix, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list pending items: %w", err)
	}
	return out, nil
}

// listByID returns the records under prefix (pending items or tasks) that
// belong to agent's instance key, sorted by ID.
func (s *badgerStore) listByID(prefix []byte, agent, key string) ([]PendingRecord, error) {
	var out []PendingRecord
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var r PendingRecord
			if err := decodeByID(it.Item(), prefix, &r); err != nil {
				return err
			}
			if r.matches(agent, key) {
				out = append(out, r) // keys, and so IDs, come sorted
			}
		}
		return nil
	})
	return out, err
}

// decodeByID decodes the record under item, whose key is prefix and an ID,
// checking it is the one its key names.
func decodeByID(item *badger.Item, prefix []byte, r *PendingRecord) error {
	k := item.KeyCopy(nil)
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, r) }); err != nil {
		return corrupt(k, err)
	}
	if want := string(k[len(prefix):]); r.ID != want {
		return corrupt(k, fmt.Errorf("record has ID %q", r.ID))
	}
	return nil
}

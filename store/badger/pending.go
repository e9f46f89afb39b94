package badger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/internal/records"
)

// This file holds the badger store's pending-item methods.

// PutPending implements [store.Store.PutPending].
func (s *badgerStore) PutPending(ctx context.Context, r store.PendingRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("store: encode pending item %q: %w", r.ID, err)
	}
	if err := s.update(false, func(txn *badgerdb.Txn) error { return txn.Set(pendingKey(r.ID), v) }); err != nil {
		return fmt.Errorf("store: put pending item %q: %w", r.ID, err)
	}
	return nil
}

// GetPending implements [store.Store.GetPending].
func (s *badgerStore) GetPending(ctx context.Context, id string) (store.PendingRecord, bool, error) {
	r, found, err := s.getByID(pendingPrefix, id)
	if err != nil {
		return store.PendingRecord{}, false, fmt.Errorf("store: get pending item %q: %w", id, err)
	}
	return r, found, nil
}

// getByID reads the record under prefix and id (a pending item or a task).
func (s *badgerStore) getByID(prefix []byte, id string) (r store.PendingRecord, found bool, err error) {
	err = s.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(append(bytes.Clone(prefix), id...))
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
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

// ListPending implements [store.Store.ListPending].
func (s *badgerStore) ListPending(ctx context.Context, agent, key string) ([]store.PendingRecord, error) {
	out, err := s.listByID(pendingPrefix, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list pending items: %w", err)
	}
	return out, nil
}

// listByID returns the records under prefix (pending items or tasks) that
// belong to agent's instance key, sorted by ID.
func (s *badgerStore) listByID(prefix []byte, agent, key string) ([]store.PendingRecord, error) {
	var out []store.PendingRecord
	err := s.db.View(func(txn *badgerdb.Txn) error {
		opts := badgerdb.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var r store.PendingRecord
			if err := decodeByID(it.Item(), prefix, &r); err != nil {
				return err
			}
			if records.Matches(&r, agent, key) {
				out = append(out, r) // keys, and so IDs, come sorted
			}
		}
		return nil
	})
	return out, err
}

// decodeByID decodes the record under item, whose key is prefix and an ID,
// checking it is the one its key names.
func decodeByID(item *badgerdb.Item, prefix []byte, r *store.PendingRecord) error {
	k := item.KeyCopy(nil)
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, r) }); err != nil {
		return corrupt(k, err)
	}
	if want := string(k[len(prefix):]); r.ID != want {
		return corrupt(k, fmt.Errorf("record has ID %q", r.ID))
	}
	return nil
}

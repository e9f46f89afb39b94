package badger

import (
	"context"
	"encoding/json"
	"fmt"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/internal/records"
)

// This file holds the badger store's task methods.

// CommitTasks implements [store.Store.CommitTasks], in one Badger transaction.
func (s *badgerStore) CommitTasks(ctx context.Context, put []store.TaskRecord, del []string) error {
	err := s.update(false, func(txn *badgerdb.Txn) error {
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
func setTasks(txn *badgerdb.Txn, put []store.TaskRecord) error {
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

// GetTask implements [store.Store.GetTask].
func (s *badgerStore) GetTask(ctx context.Context, id string) (store.TaskRecord, bool, error) {
	r, found, err := s.getByID(taskPrefix, id)
	if err != nil {
		return store.TaskRecord{}, false, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return store.TaskRecord(r), found, nil
}

// ListTasks implements [store.Store.ListTasks].
func (s *badgerStore) ListTasks(ctx context.Context, agent, key string) ([]store.TaskRecord, error) {
	recs, err := s.listByID(taskPrefix, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	return records.Tasks(recs), nil
}

package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/internal/records"
)

// recordKind is a kind of record kept by ID and by instance: pending
// items or tasks.
type recordKind struct {
	prefix, index, what string // the keys' first tokens; what one is called
}

var (
	pendingKind = recordKind{"pending", "pindex", "pending item"}
	taskKind    = recordKind{"task", "tindex", "task"}
)

func (k recordKind) key(id string) string { return k.prefix + "." + enc(id) }

func (k recordKind) indexKey(r *store.PendingRecord) string {
	return jsInstance(k.index, r.Agent, r.Instance) + "." + enc(r.ID)
}

// putIndexed adds r to bt under its ID and its instance, and removes the
// index entry of a record with its ID kept under another instance. Only
// the runtime that owns an ID writes it, so what it reads stays true
// until the batch is committed.
func (s *jsStore) putIndexed(ctx context.Context, bt *batch, k recordKind, r *store.PendingRecord) error {
	old, found, err := s.getRecord(ctx, k.key(r.ID))
	if err != nil {
		return err
	}
	if found && (old.Agent != r.Agent || old.Instance != r.Instance) {
		bt.del(k.indexKey(&old))
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode %s %q: %w", k.what, r.ID, err)
	}
	what := k.what + " " + strconv.Quote(r.ID)
	bt.put(k.key(r.ID), what, data)
	bt.put(k.indexKey(r), what, data)
	return nil
}

// delIndexed adds the deletion of the record with id, under its ID and
// its instance, to bt.
func (s *jsStore) delIndexed(ctx context.Context, bt *batch, k recordKind, id string) error {
	old, found, err := s.getRecord(ctx, k.key(id))
	if err != nil || !found {
		return err
	}
	bt.del(k.key(id))
	bt.del(k.indexKey(&old))
	return nil
}

// PutPending implements [store.Store.PutPending].
func (s *jsStore) PutPending(ctx context.Context, r store.PendingRecord) error {
	bt := &batch{s: s}
	err := s.putIndexed(ctx, bt, pendingKind, &r)
	if err == nil {
		err = bt.commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("store: put pending item %q: %w", r.ID, err)
	}
	return nil
}

// getRecord reads the pending item or task under key into r.
func (s *jsStore) getRecord(ctx context.Context, key string) (store.PendingRecord, bool, error) {
	v, found, err := s.get(ctx, key)
	if err != nil || !found {
		return store.PendingRecord{}, false, err
	}
	var r store.PendingRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return store.PendingRecord{}, false, fmt.Errorf("corrupt value at key %q: %w", key, err)
	}
	return r, true, nil
}

// GetPending implements [store.Store.GetPending].
func (s *jsStore) GetPending(ctx context.Context, id string) (store.PendingRecord, bool, error) {
	r, found, err := s.getRecord(ctx, pendingKind.key(id))
	if err != nil {
		return store.PendingRecord{}, false, fmt.Errorf("store: get pending item %q: %w", id, err)
	}
	return r, found, nil
}

// listRecords returns the records of kind k of agent's instance key (""
// matches any), sorted by ID: from the instance's index, the agent's, or,
// for every agent, the records by ID.
func (s *jsStore) listRecords(ctx context.Context, k recordKind, agent, key string) ([]store.PendingRecord, error) {
	filter := k.prefix + ".*"
	switch {
	case agent != "" && key != "":
		filter = jsInstance(k.index, agent, key) + ".*"
	case agent != "":
		filter = k.index + "." + enc(agent) + ".*.*"
	}
	var out []store.PendingRecord
	err := s.snapshot(ctx, []string{filter}, false, func(k string, v []byte) error {
		var r store.PendingRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("corrupt value at key %q: %w", k, err)
		}
		if records.Matches(&r, agent, key) {
			out = append(out, r)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.PendingRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// ListPending implements [store.Store.ListPending].
func (s *jsStore) ListPending(ctx context.Context, agent, key string) ([]store.PendingRecord, error) {
	out, err := s.listRecords(ctx, pendingKind, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list pending items: %w", err)
	}
	return out, nil
}

// CommitTasks implements [store.Store.CommitTasks], in one atomic batch.
func (s *jsStore) CommitTasks(ctx context.Context, put []store.TaskRecord, del []string) error {
	bt := &batch{s: s}
	for _, id := range del {
		if err := s.delIndexed(ctx, bt, taskKind, id); err != nil {
			return fmt.Errorf("store: commit tasks: nothing written: %w", err)
		}
	}
	for i := range put {
		if err := s.putIndexed(ctx, bt, taskKind, (*store.PendingRecord)(&put[i])); err != nil {
			return fmt.Errorf("store: commit tasks: nothing written: %w", err)
		}
	}
	if err := bt.commit(ctx); err != nil {
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return fmt.Errorf("store: commit tasks: %w", err)
		}
		return fmt.Errorf("store: commit tasks: nothing written: %w", err)
	}
	return nil
}

// GetTask implements [store.Store.GetTask].
func (s *jsStore) GetTask(ctx context.Context, id string) (store.TaskRecord, bool, error) {
	r, found, err := s.getRecord(ctx, taskKind.key(id))
	if err != nil {
		return store.TaskRecord{}, false, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return store.TaskRecord(r), found, nil
}

// ListTasks implements [store.Store.ListTasks].
func (s *jsStore) ListTasks(ctx context.Context, agent, key string) ([]store.TaskRecord, error) {
	rs, err := s.listRecords(ctx, taskKind, agent, key)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	return records.Tasks(rs), nil
}

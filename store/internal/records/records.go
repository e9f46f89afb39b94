// Package records holds what the store backends of store/badger and
// store/jetstream share about pending items and delegation tasks. The
// memory store, in package store itself, keeps its own copy, since
// package store cannot import this one.
package records

import "github.com/ganglion-dev/ganglion/store"

// Matches reports whether r belongs to agent's instance key, the filter of
// [store.Store.ListPending] and [store.Store.ListTasks]: "" matches any.
func Matches(r *store.PendingRecord, agent, key string) bool {
	return (agent == "" || r.Agent == agent) && (key == "" || r.Instance == key)
}

// Tasks converts records read by ID into tasks.
func Tasks(recs []store.PendingRecord) []store.TaskRecord {
	out := make([]store.TaskRecord, len(recs))
	for i, r := range recs {
		out[i] = store.TaskRecord(r)
	}
	return out
}

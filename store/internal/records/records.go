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

package delegation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ganglion-dev/ganglion/runtime/task"
	"github.com/ganglion-dev/ganglion/store"
)

// List returns the open tasks by ID, of agentName and instanceKey if set.
func (d *Tasks) List(ctx context.Context, agentName, instanceKey string) ([]task.Task, error) {
	recs, err := d.eng.Store.ListTasks(ctx, agentName, instanceKey)
	if err != nil {
		return nil, err
	}
	out := make([]task.Task, 0, len(recs))
	for _, rec := range recs {
		t, err := decodeTask(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Task returns the open task with id, or an error wrapping [task.ErrNotFound].
func (d *Tasks) Task(ctx context.Context, id string) (task.Task, error) {
	rec, found, err := d.eng.Store.GetTask(ctx, id)
	if err != nil {
		return task.Task{}, err
	}
	if !found {
		return task.Task{}, fmt.Errorf("task %q: %w (tasks are deleted when they complete)", id, task.ErrNotFound)
	}
	return decodeTask(rec)
}

func decodeTask(rec store.TaskRecord) (task.Task, error) {
	var t task.Task
	if err := json.Unmarshal(rec.Data, &t); err != nil {
		return task.Task{}, fmt.Errorf("task %q: corrupt record: %w", rec.ID, err)
	}
	if t.ID != rec.ID || t.Agent != rec.Agent || t.Instance != rec.Instance {
		return task.Task{}, fmt.Errorf("task %q: corrupt record: it says task %q of %s/%s", rec.ID, t.ID, t.Agent, t.Instance)
	}
	return t, nil
}

func encodeTask(t *task.Task) (store.TaskRecord, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return store.TaskRecord{}, fmt.Errorf("task %q: %w", t.ID, err)
	}
	return store.TaskRecord{ID: t.ID, Agent: t.Agent, Instance: t.Instance, Data: b}, nil
}

// commitTasks stores put and deletes del, atomically, and keeps the cache
// of parents waiting for reports (completeTask) in step. The caller holds
// d.mu.
func (d *Tasks) commitTasks(ctx context.Context, put []*task.Task, del ...string) error {
	recs := make([]store.TaskRecord, len(put))
	for i, t := range put {
		rec, err := encodeTask(t)
		if err != nil {
			return err
		}
		recs[i] = rec
	}
	var err error
	if f := d.fence(put); f != 0 {
		// The owner of the tasks' instance writes them, under its fence.
		err = d.eng.Store.Commit(ctx, put[0].Agent, put[0].Instance, store.Batch{Tasks: recs, DeleteTasks: del, Fence: f})
	} else {
		err = d.eng.Store.CommitTasks(ctx, recs, del)
	}
	for _, t := range put {
		if _, ok := d.cache[t.ID]; ok {
			if err != nil {
				delete(d.cache, t.ID)
			} else {
				d.cache[t.ID] = t
			}
		}
	}
	for _, id := range del {
		delete(d.cache, id)
	}
	return err
}

// truncateRunes returns s's first n characters.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// oneLine shortens s to one line of at most n characters, for events and
// errors.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if t := truncateRunes(s, n); t != s {
		return t + "…"
	}
	return s
}

// fence is the fence of the instance whose tasks put are, for a commit of
// them: zero when the runtime runs alone, or if they are not all one
// instance's.
func (d *Tasks) fence(put []*task.Task) uint64 {
	if len(put) == 0 {
		return 0
	}
	for _, t := range put[1:] {
		if t.Agent != put[0].Agent || t.Instance != put[0].Instance {
			return 0
		}
	}
	return d.env.Fence(put[0].Agent, put[0].Instance)
}

package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

// fence takes agent/key's fence, failing the test on an error.
func fence(t *testing.T, s store.Store, agent, key string) uint64 {
	t.Helper()
	f, err := s.Fence(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("fence %s/%s: %v", agent, key, err)
	}
	if f == 0 {
		t.Fatalf("fence %s/%s = 0: zero means no fence", agent, key)
	}
	return f
}

// wantFenced checks that err refused a commit of agent/key with fence f.
func wantFenced(t *testing.T, err error, agent, key string, f uint64) {
	t.Helper()
	want := fmt.Sprintf("store: commit agent %q instance %q with fence %d: nothing written: store: fenced: another owner took the instance since", agent, key, f)
	if !errors.Is(err, store.ErrFenced) || err.Error() != want {
		t.Fatalf("commit with an old fence: %v\nwant: %s", err, want)
	}
}

// testFencing: a commit with the instance's latest fence is applied, one
// with an older fence (or a fence never taken) writes nothing of its
// batch; fences are per instance, grow, and do not make an instance exist.
func testFencing(t *testing.T, s store.Store) {
	ctx := context.Background()
	f1 := fence(t, s, "a", "k")
	wantInstance(t, s, "a", "k", nil, nil)
	wantInstances(t, s, "a")

	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "first owner")}, Meta: meta(1, 1), Fence: f1})
	f2 := fence(t, s, "a", "k")
	if f2 <= f1 {
		t.Fatalf("fences %d then %d: a later fence must be greater", f1, f2)
	}
	// The first owner stalled; its next commit, of everything a batch
	// holds, is refused whole.
	err := s.Commit(ctx, "a", "k", store.Batch{
		Put:     []store.Record{rec(1, "stale"), rec(0, "overwritten")},
		Delete:  []uint64{0},
		Meta:    meta(2, 2),
		Tasks:   []store.TaskRecord{{ID: "t1", Agent: "a", Instance: "k", Data: json.RawMessage(`{}`)}},
		Pending: []store.PendingRecord{{ID: "q1", Agent: "a", Instance: "k", Data: json.RawMessage(`{}`)}},
		Fence:   f1,
	})
	wantFenced(t, err, "a", "k", f1)
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "first owner")})
	if _, found, err := s.GetTask(ctx, "t1"); found || err != nil {
		t.Fatalf("GetTask(t1) after a fenced commit = %v, %v; want not found", found, err)
	}
	if _, found, err := s.GetPending(ctx, "q1"); found || err != nil {
		t.Fatalf("GetPending(q1) after a fenced commit = %v, %v; want not found", found, err)
	}
	// A single record alone is as conditional as a batch.
	wantFenced(t, s.Commit(ctx, "a", "k", store.Batch{Put: []store.Record{rec(1, "stale")}, Fence: f1}), "a", "k", f1)
	// A fence never taken is no better than an old one.
	wantFenced(t, s.Commit(ctx, "a", "k", store.Batch{Meta: meta(9, 9), Fence: f2 + 1000}), "a", "k", f2+1000)

	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(1, "second owner")}, Meta: meta(2, 2), Fence: f2})
	wantInstance(t, s, "a", "k", meta(2, 2), []store.Record{rec(0, "first owner"), rec(1, "second owner")})
	// Zero commits unconditionally; an empty batch writes nothing whatever
	// its fence.
	commit(t, s, "a", "k", store.Batch{Meta: meta(3, 2)})
	commit(t, s, "a", "k", store.Batch{Fence: f1})
	// Another instance's fence is its own.
	g := fence(t, s, "a", "k2")
	commit(t, s, "a", "k2", store.Batch{Meta: meta(1, 0), Fence: g})
	commit(t, s, "a", "k", store.Batch{Meta: meta(4, 2), Fence: f2})
	wantInstances(t, s, "a", "k", "k2")
}

// testFencedTakeover races a former owner that keeps committing against a
// new owner that takes the fence, loads the instance and appends: the
// former owner's commits stop at the fence, whatever the timing, and
// nothing the new owner wrote is overwritten.
func testFencedTakeover(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := fence(t, s, "a", "k")
	var (
		wg      sync.WaitGroup
		started = make(chan struct{})
		wrote   uint64 // commits of the former owner that were applied
	)
	wg.Go(func() {
		for seq := uint64(0); ; seq++ {
			err := s.Commit(ctx, "a", "k", store.Batch{Put: []store.Record{rec(seq, "old")}, Meta: meta(1, seq+1), Fence: old})
			if seq == 3 {
				close(started)
			}
			if errors.Is(err, store.ErrFenced) {
				return
			}
			if err != nil {
				t.Errorf("commit %d of the former owner: %v", seq, err)
				return
			}
			wrote = seq + 1
		}
	})
	<-started
	f := fence(t, s, "a", "k")
	m, records, _, err := s.LoadInstance(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(m.NextSeq, "new")}, Meta: meta(2, m.NextSeq+1), Fence: f})
	wg.Wait()
	if uint64(len(records)) != wrote || m.NextSeq != wrote {
		t.Fatalf("the new owner loaded %d records (next %d) after the fence; the former owner had %d applied", len(records), m.NextSeq, wrote)
	}
	want := append(records, rec(wrote, "new"))
	wantInstance(t, s, "a", "k", meta(2, wrote+1), want)
}

// testTasksInBatch: a batch adds a report to a parent's task and deletes
// the child's in one commit, under the parent's instance's fence, as a
// parent's owner does; a fenced one changes neither.
func testTasksInBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	task := func(id, agent, data string) store.TaskRecord {
		return store.TaskRecord{ID: id, Agent: agent, Instance: "k", Data: json.RawMessage(data)}
	}
	if err := s.CommitTasks(ctx, []store.TaskRecord{task("p", "lead", `{"pending":2}`), task("c1", "w", `{}`), task("c2", "w", `{}`)}, nil); err != nil {
		t.Fatal(err)
	}
	wantTasks := func(want string) {
		t.Helper()
		var got []string
		for _, id := range []string{"p", "c1", "c2"} {
			r, found, err := s.GetTask(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if found {
				got = append(got, id+"="+string(r.Data))
			}
		}
		if g := fmt.Sprint(got); g != want {
			t.Fatalf("tasks %s, want %s", g, want)
		}
	}
	old := fence(t, s, "lead", "k")
	f := fence(t, s, "lead", "k")
	err := s.Commit(ctx, "lead", "k", store.Batch{Tasks: []store.TaskRecord{task("p", "lead", `{"pending":1}`)}, DeleteTasks: []string{"c1"}, Fence: old})
	wantFenced(t, err, "lead", "k", old)
	wantTasks(`[p={"pending":2} c1={} c2={}]`)

	commit(t, s, "lead", "k", store.Batch{Tasks: []store.TaskRecord{task("p", "lead", `{"pending":1}`)}, DeleteTasks: []string{"c1", "gone"}, Fence: f})
	wantTasks(`[p={"pending":1} c2={}]`)
	if (&store.Batch{DeleteTasks: []string{"c2"}}).Empty() {
		t.Error("a batch that deletes a task is Empty")
	}
	commit(t, s, "lead", "k", store.Batch{DeleteTasks: []string{"c2"}})
	wantTasks(`[p={"pending":1}]`)
	err = s.Commit(ctx, "lead", "k", store.Batch{Tasks: []store.TaskRecord{task("p", "lead", `{}`)}, DeleteTasks: []string{"p"}})
	if want := `store: task "p" is both put and deleted`; err == nil || err.Error() != want {
		t.Fatalf("put and delete of one task: %v, want %q", err, want)
	}
	wantTasks(`[p={"pending":1}]`)
	// Tasks alone do not make their instance exist.
	wantInstances(t, s, "lead")
}

// testStateInBatch: a batch sets and deletes extensions' state with the
// rest of an instance's changes, under its fence; a fenced one changes no
// state.
func testStateInBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.SetState(ctx, "a", "k", "gone", []byte("x")); err != nil {
		t.Fatal(err)
	}
	old := fence(t, s, "a", "k")
	f := fence(t, s, "a", "k")
	value := []byte(`{"n":1}`)
	err := s.Commit(ctx, "a", "k", store.Batch{State: map[string][]byte{"memo": value, "gone": nil}, Fence: old})
	wantFenced(t, err, "a", "k", old)
	wantState(t, s, "a", "k", "memo", nil)
	wantState(t, s, "a", "k", "gone", []byte("x"))

	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "hi")}, Meta: meta(1, 1),
		State: map[string][]byte{"memo": value, "gone": nil, "empty": {}}, Fence: f})
	value[2] = 'X' // the store keeps its own copy
	wantState(t, s, "a", "k", "memo", []byte(`{"n":1}`))
	wantState(t, s, "a", "k", "gone", nil)
	wantState(t, s, "a", "k", "empty", []byte{})
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "hi")})

	// State alone lists an instance, as SetState's does.
	commit(t, s, "a", "k2", store.Batch{State: map[string][]byte{"memo": []byte("1")}})
	wantInstances(t, s, "a", "k", "k2")
	commit(t, s, "a", "k2", store.Batch{State: map[string][]byte{"memo": nil}})
	wantInstances(t, s, "a", "k")

	err = s.Commit(ctx, "a", "k", store.Batch{State: map[string][]byte{"ext/1": []byte("1")}})
	if want := `store: invalid extension name "ext/1": character "/" at offset 3 not allowed ` + nameRule; err == nil || err.Error() != want {
		t.Fatalf("a state of a bad extension name: %v\nwant: %s", err, want)
	}
}

package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

func putSecret(t *testing.T, s store.Store, agent, key, name, sealed string) {
	t.Helper()
	if err := s.PutSecret(context.Background(), agent, key, name, []byte(sealed)); err != nil {
		t.Fatalf("put secret %s/%s/%s: %v", agent, key, name, err)
	}
}

// wantSecret checks the sealed value of a secret; a nil want means none.
func wantSecret(t *testing.T, s store.Store, agent, key, name string, want []byte) {
	t.Helper()
	got, found, err := s.GetSecret(context.Background(), agent, key, name)
	if err != nil {
		t.Fatalf("get secret %s/%s/%s: %v", agent, key, name, err)
	}
	if found != (want != nil) || string(got) != string(want) || !found && got != nil {
		t.Fatalf("get secret %s/%s/%s = %q, %v; want %q, %v", agent, key, name, got, found, want, want != nil)
	}
}

// wantSecrets checks the names of the instance's secrets.
func wantSecrets(t *testing.T, s store.Store, agent, key string, want ...string) {
	t.Helper()
	got, err := s.ListSecrets(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("list secrets %s/%s: %v", agent, key, err)
	}
	if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("list secrets %s/%s = %q, want %q", agent, key, got, want)
	}
}

func testSecrets(t *testing.T, s store.Store) {
	ctx := context.Background()
	wantSecret(t, s, "a", "k", "OPENAI_API_KEY", nil)
	wantSecrets(t, s, "a", "k")

	// The store keeps its own copy of what it is given...
	buf := []byte("sealed-openai")
	if err := s.PutSecret(ctx, "a", "k", "OPENAI_API_KEY", buf); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	// ...and hands out copies.
	got, _, err := s.GetSecret(ctx, "a", "k", "OPENAI_API_KEY")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = 'Y'
	wantSecret(t, s, "a", "k", "OPENAI_API_KEY", []byte("sealed-openai"))

	// Neighbouring instances and agents, and every byte value.
	binary := "\x01\x00\xff\xfe sealed \x00"
	putSecret(t, s, "a", "k", "GITHUB_TOKEN", "sealed-github")
	putSecret(t, s, "a", "k", "bin_v1", binary)
	putSecret(t, s, "a", "k2", "OPENAI_API_KEY", "sealed-k2")
	putSecret(t, s, "a", "k\x01", "OPENAI_API_KEY", "sealed-k1")
	putSecret(t, s, "ab", "k", "OPENAI_API_KEY", "sealed-ab")
	wantSecret(t, s, "a", "k", "bin_v1", []byte(binary))
	wantSecret(t, s, "a", "k2", "OPENAI_API_KEY", []byte("sealed-k2"))
	wantSecret(t, s, "a", "k\x01", "OPENAI_API_KEY", []byte("sealed-k1"))
	wantSecret(t, s, "ab", "k", "OPENAI_API_KEY", []byte("sealed-ab"))
	wantSecret(t, s, "ab", "k", "GITHUB_TOKEN", nil)
	wantSecret(t, s, "a", "k", "openai_api_key", nil) // names are case-sensitive
	wantSecrets(t, s, "a", "k", "GITHUB_TOKEN", "OPENAI_API_KEY", "bin_v1")
	wantSecrets(t, s, "a", "k2", "OPENAI_API_KEY")
	wantSecrets(t, s, "ab", "k", "OPENAI_API_KEY")
	wantSecrets(t, s, "a", "other")
	wantSecrets(t, s, "b", "k")

	// Replace.
	putSecret(t, s, "a", "k", "OPENAI_API_KEY", "sealed-openai-2")
	wantSecret(t, s, "a", "k", "OPENAI_API_KEY", []byte("sealed-openai-2"))
	wantSecrets(t, s, "a", "k", "GITHUB_TOKEN", "OPENAI_API_KEY", "bin_v1")

	// An empty sealed value is refused.
	for _, v := range [][]byte{nil, {}} {
		err := s.PutSecret(ctx, "a", "k", "GITHUB_TOKEN", v)
		if want := `store: secret "GITHUB_TOKEN": empty sealed value`; err == nil || err.Error() != want {
			t.Fatalf("PutSecret(%q) = %v, want %q", v, err, want)
		}
	}
	wantSecret(t, s, "a", "k", "GITHUB_TOKEN", []byte("sealed-github"))

	// Secrets do not touch history or state.
	wantInstance(t, s, "a", "k", nil, nil)
	wantState(t, s, "a", "k", "OPENAI_API_KEY", nil)
}

// testSecretsAreNotInstances: a secret is kept for an instance, but does not
// make it exist; the instance's other data coming and going does not disturb
// its secrets.
func testSecretsAreNotInstances(t *testing.T, s store.Store) {
	ctx := context.Background()
	putSecret(t, s, "a", "k", "K", "sealed")
	wantInstances(t, s, "a")
	wantInstance(t, s, "a", "k", nil, nil)

	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "hi")}})
	if err := s.SetState(ctx, "a", "k", "e", []byte("x")); err != nil {
		t.Fatal(err)
	}
	wantInstances(t, s, "a", "k")
	wantSecret(t, s, "a", "k", "K", []byte("sealed"))

	// With its history and state gone, the instance is unlisted again, and
	// its secret stays.
	commit(t, s, "a", "k", store.Batch{Delete: []uint64{0}})
	if err := s.SetState(ctx, "a", "k", "e", nil); err != nil {
		t.Fatal(err)
	}
	wantInstances(t, s, "a")
	wantInstance(t, s, "a", "k", nil, nil)
	wantSecrets(t, s, "a", "k", "K")
	wantSecret(t, s, "a", "k", "K", []byte("sealed"))
}

func testTasks(t *testing.T, s store.Store) {
	ctx := context.Background()
	task := func(id, agent, key, data string) store.TaskRecord {
		return store.TaskRecord{ID: id, Agent: agent, Instance: key, Data: json.RawMessage(data)}
	}
	list := func(agent, key string) string {
		t.Helper()
		rs, err := s.ListTasks(ctx, agent, key)
		if err != nil {
			t.Fatalf("ListTasks(%q, %q): %v", agent, key, err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.ID+"="+string(r.Data))
		}
		return strings.Join(ids, " ")
	}
	if _, found, err := s.GetTask(ctx, "t1"); found || err != nil {
		t.Fatalf("GetTask of nothing = %v, %v", found, err)
	}
	buf := []byte(`{"pending":2}`)
	if err := s.CommitTasks(ctx, []store.TaskRecord{
		{ID: "t1", Agent: "lead", Instance: "k", Data: buf},
		task("t2", "coder", "k", `{"parent":"t1"}`),
		task("t3", "tester", "other", `{"parent":"t1"}`),
	}, nil); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXX") // the store keeps its own copy
	// A child's report: one commit deletes the child and updates the parent.
	if err := s.CommitTasks(ctx, []store.TaskRecord{task("t1", "lead", "k", `{"pending":1}`)}, []string{"t2", "missing"}); err != nil {
		t.Fatal(err)
	}
	r, found, err := s.GetTask(ctx, "t1")
	if err != nil || !found || string(r.Data) != `{"pending":1}` || r.Agent != "lead" || r.Instance != "k" {
		t.Errorf("GetTask(t1) = %+v, %v, %v", r, found, err)
	}
	for _, tt := range []struct{ agent, key, want string }{
		{"", "", `t1={"pending":1} t3={"parent":"t1"}`},
		{"lead", "", `t1={"pending":1}`},
		{"tester", "other", `t3={"parent":"t1"}`},
		{"tester", "k", ``},
		{"coder", "", ``},
	} {
		if got := list(tt.agent, tt.key); got != tt.want {
			t.Errorf("ListTasks(%q, %q) = %q, want %q", tt.agent, tt.key, got, tt.want)
		}
	}
	for _, tt := range []struct {
		put  []store.TaskRecord
		del  []string
		want string
	}{
		{[]store.TaskRecord{task("bad id", "a", "k", `{}`)}, nil, `store: invalid task ID "bad id": character " " at offset 3 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{[]store.TaskRecord{task("t9", "a b", "k", `{}`)}, nil, `store: invalid agent name "a b": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{[]store.TaskRecord{task("t9", "a", "k", `{`)}, nil, `store: task "t9": data is not valid JSON`},
		{nil, []string{"t/1"}, `store: invalid task ID "t/1": character "/" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{[]store.TaskRecord{task("t1", "lead", "k", `{}`)}, []string{"t1"}, `store: task "t1" is both put and deleted`},
		// A bad record anywhere refuses the whole commit: t3 is not deleted.
		{[]store.TaskRecord{task("t1", "lead", "k", `{}`), task("t8", "a", "k", `nope`)}, []string{"t3"}, `store: task "t8": data is not valid JSON`},
	} {
		if err := s.CommitTasks(ctx, tt.put, tt.del); err == nil || err.Error() != tt.want {
			t.Errorf("CommitTasks(%v, %v) = %v, want %q", tt.put, tt.del, err, tt.want)
		}
	}
	if got, want := list("", ""), `t1={"pending":1} t3={"parent":"t1"}`; got != want {
		t.Errorf("after refused commits: %q, want %q", got, want)
	}

	// An instance's batch carries tasks: messages and tasks land together,
	// or neither does.
	commit(t, s, "lead", "k", store.Batch{Put: []store.Record{rec(0, "delegated")}, Meta: meta(1, 1),
		Tasks: []store.TaskRecord{task("t1", "lead", "k", `{"pending":2}`), task("t4", "coder", "k", `{"parent":"t1"}`)}})
	if got, want := list("", ""), `t1={"pending":2} t3={"parent":"t1"} t4={"parent":"t1"}`; got != want {
		t.Errorf("after a batch with tasks: %q, want %q", got, want)
	}
	err = s.Commit(ctx, "lead", "k", store.Batch{Put: []store.Record{rec(1, "lost")}, Meta: meta(1, 2), Tasks: []store.TaskRecord{task("t5", "coder", "k", `{`)}})
	if err == nil || err.Error() != `store: task "t5": data is not valid JSON` {
		t.Errorf("batch with a bad task: %v", err)
	}
	wantInstance(t, s, "lead", "k", meta(1, 1), []store.Record{rec(0, "delegated")})
}

// testRecordMoves: a pending item or task put again with its ID under
// another instance is listed under that one only, and a deleted task
// under none.
func testRecordMoves(t *testing.T, s store.Store) {
	ctx := context.Background()
	ids := func(rs []store.PendingRecord) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID+"@"+r.Instance)
		}
		return strings.Join(out, " ")
	}
	for _, k := range []string{"k1", "k2"} {
		if err := s.PutPending(ctx, store.PendingRecord{ID: "q1", Agent: "a", Instance: k, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if err := s.CommitTasks(ctx, []store.TaskRecord{{ID: "t1", Agent: "a", Instance: k, Data: []byte(`{}`)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ key, want string }{{"k1", ""}, {"k2", "q1@k2"}, {"", "q1@k2"}} {
		rs, err := s.ListPending(ctx, "a", tt.key)
		if err != nil || ids(rs) != tt.want {
			t.Errorf("ListPending(a, %q) = %q, %v; want %q", tt.key, ids(rs), err, tt.want)
		}
		ts, err := s.ListTasks(ctx, "a", tt.key)
		var trs []store.PendingRecord
		for _, r := range ts {
			trs = append(trs, store.PendingRecord(r))
		}
		if want := strings.ReplaceAll(tt.want, "q1", "t1"); err != nil || ids(trs) != want {
			t.Errorf("ListTasks(a, %q) = %q, %v; want %q", tt.key, ids(trs), err, want)
		}
	}
	if err := s.CommitTasks(ctx, nil, []string{"t1"}); err != nil {
		t.Fatal(err)
	}
	if ts, err := s.ListTasks(ctx, "a", "k2"); err != nil || len(ts) != 0 {
		t.Errorf("ListTasks after the delete = %+v, %v", ts, err)
	}
	if _, found, err := s.GetTask(ctx, "t1"); found || err != nil {
		t.Errorf("GetTask after the delete = %v, %v", found, err)
	}
}

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
		start   sync.Once
		wrote   uint64 // commits of the former owner that were applied
	)
	wg.Go(func() {
		// A former owner that stops before its fourth commit, on an
		// error, does not leave the new owner waiting: the test fails
		// with that error instead of hanging.
		defer start.Do(func() { close(started) })
		for seq := uint64(0); ; seq++ {
			err := s.Commit(ctx, "a", "k", store.Batch{Put: []store.Record{rec(seq, "old")}, Meta: meta(1, seq+1), Fence: old})
			if seq == 3 {
				start.Do(func() { close(started) })
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

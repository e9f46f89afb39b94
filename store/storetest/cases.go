package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/store"
)

// testAtomicCommit loads an instance while another goroutine commits to it,
// and checks every load sees whole batches: meta.NextSeq always equals the
// number of records, and the records are 0..NextSeq-1.
func testAtomicCommit(t *testing.T, s store.Store) {
	ctx := context.Background()
	const turns = 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		defer close(done)
		for turn := range int64(turns) {
			seq := uint64(turn) * 2
			err := s.Commit(ctx, "a", "k", store.Batch{
				Put:  []store.Record{rec(seq, "q"), rec(seq+1, "a")},
				Meta: meta(turn+1, seq+2),
			})
			if err != nil {
				t.Errorf("commit: %v", err)
				return
			}
		}
	})
	loads := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more load after the last commit
		default:
		}
		m, records, found, err := s.LoadInstance(ctx, "a", "k")
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		loads++
		if found && m.NextSeq != uint64(len(records)) {
			t.Fatalf("load %d: meta.NextSeq = %d but %d records: saw part of a batch", loads, m.NextSeq, len(records))
		}
		for i, r := range records {
			if r.Seq != uint64(i) {
				t.Fatalf("load %d: record %d has seq %d", loads, i, r.Seq)
			}
		}
		if finished && m.NextSeq != 2*turns {
			t.Fatalf("after the last commit: meta.NextSeq = %d, want %d", m.NextSeq, 2*turns)
		}
	}
}

func testState(t *testing.T, s store.Store) {
	ctx := context.Background()
	set := func(agent, key, ext string, v []byte) {
		t.Helper()
		if err := s.SetState(ctx, agent, key, ext, v); err != nil {
			t.Fatalf("set state %s/%s/%s: %v", agent, key, ext, err)
		}
	}
	wantState(t, s, "a", "k", "e", nil)
	set("a", "k", "e", nil) // deleting nothing is fine

	set("a", "k", "e", []byte(`{"n":1}`))
	set("a", "k", "other", []byte("other"))
	set("a", "k2", "e", []byte("k2"))
	set("ab", "k", "e", []byte("ab"))
	wantState(t, s, "a", "k", "e", []byte(`{"n":1}`))
	wantState(t, s, "a", "k", "other", []byte("other"))
	wantState(t, s, "a", "k2", "e", []byte("k2"))
	wantState(t, s, "ab", "k", "e", []byte("ab"))
	wantState(t, s, "a", "k", "e2", nil)

	set("a", "k", "e", []byte(`{"n":2}`))
	wantState(t, s, "a", "k", "e", []byte(`{"n":2}`))

	set("a", "k", "e", []byte{})
	wantState(t, s, "a", "k", "e", []byte{})

	set("a", "k", "e", nil)
	wantState(t, s, "a", "k", "e", nil)
	wantState(t, s, "a", "k", "other", []byte("other"))
	wantState(t, s, "a", "k2", "e", []byte("k2"))

	// State does not touch history.
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "x")}})
	wantState(t, s, "a", "k", "other", []byte("other"))
	wantInstance(t, s, "a", "k", nil, []store.Record{rec(0, "x")})
}

func testInstances(t *testing.T, s store.Store) {
	ctx := context.Background()
	wantInstances(t, s, "a")
	// Instance keys chosen so that byte order, prefix overlap and odd
	// characters all matter.
	for _, key := range []string{"k2", "k", "K", "k-1", "k 1", "ключ", "k/x", "kk"} {
		commit(t, s, "a", key, store.Batch{Put: []store.Record{rec(0, key)}})
	}
	commit(t, s, "a", "meta-only", store.Batch{Meta: meta(1, 0)})
	if err := s.SetState(ctx, "a", "state-only", "e", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Many records on one instance, listed once.
	var many []store.Record
	for i := range uint64(300) {
		many = append(many, rec(i, "m"))
	}
	commit(t, s, "a", "many", store.Batch{Put: many, Meta: meta(150, 300)})
	if err := s.SetState(ctx, "a", "many", "e", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Neighbouring agents.
	commit(t, s, "ab", "only-ab", store.Batch{Put: []store.Record{rec(0, "x")}})
	commit(t, s, "a.b", "only-a.b", store.Batch{Meta: meta(1, 0)})
	if err := s.SetState(ctx, "a-", "only-a-", "e", []byte("x")); err != nil {
		t.Fatal(err)
	}

	wantInstances(t, s, "a", "K", "k", "k 1", "k-1", "k/x", "k2", "kk", "many", "meta-only", "state-only", "ключ")
	wantInstances(t, s, "ab", "only-ab")
	wantInstances(t, s, "a.b", "only-a.b")
	wantInstances(t, s, "a-", "only-a-")
	wantInstances(t, s, "b")
	wantInstance(t, s, "a", "k", nil, []store.Record{rec(0, "k")})
	wantInstance(t, s, "a", "many", meta(150, 300), many)
}

func testInvalidNames(t *testing.T, s store.Store) {
	ctx := context.Background()
	longKey := strings.Repeat("k", 257)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"load: empty agent", func() error { _, _, _, err := s.LoadInstance(ctx, "", "k"); return err },
			`store: invalid agent name "": empty ` + nameRule},
		{"load: NUL in key", func() error { _, _, _, err := s.LoadInstance(ctx, "a", "k\x00"); return err },
			`store: invalid instance key "k\x00": NUL at offset 1 ` + storedKeyRule},
		{"load meta: empty agent", func() error { _, _, err := s.LoadMeta(ctx, "", "k"); return err },
			`store: invalid agent name "": empty ` + nameRule},
		{"commit: agent with space", func() error { return s.Commit(ctx, "a b", "k", store.Batch{Meta: meta(1, 0)}) },
			`store: invalid agent name "a b": character " " at offset 1 not allowed ` + nameRule},
		{"commit: long key", func() error { return s.Commit(ctx, "a", longKey, store.Batch{Meta: meta(1, 0)}) },
			`store: invalid instance key "` + longKey[:80] + `"...: 257 bytes long ` + storedKeyRule},
		{"commit: empty key", func() error { return s.Commit(ctx, "a", "", store.Batch{}) },
			`store: invalid instance key "": empty ` + storedKeyRule},
		{"fence: empty key", func() error { _, err := s.Fence(ctx, "a", ""); return err },
			`store: invalid instance key "": empty ` + storedKeyRule},
		{"instances: non-ASCII agent", func() error { _, err := s.Instances(ctx, "agént"); return err },
			`store: invalid agent name "agént": character "é" at offset 2 not allowed ` + nameRule},
		{"get state: empty extension", func() error { _, err := s.GetState(ctx, "a", "k", ""); return err },
			`store: invalid extension name "": empty ` + nameRule},
		{"get state: bad key", func() error { _, err := s.GetState(ctx, "a", "\xff", "e"); return err },
			`store: invalid instance key "\xff": not valid UTF-8 ` + storedKeyRule},
		{"set state: slash in extension", func() error { return s.SetState(ctx, "a", "k", "ext/1", []byte("x")) },
			`store: invalid extension name "ext/1": character "/" at offset 3 not allowed ` + nameRule},
		{"set state: bad agent", func() error { return s.SetState(ctx, "a\x00b", "k", "e", nil) },
			`store: invalid agent name "a\x00b": character "\x00" at offset 1 not allowed ` + nameRule},
		{"put secret: space in name", func() error { return s.PutSecret(ctx, "a", "k", "OPENAI API KEY", []byte("sealed")) },
			`store: invalid secret name "OPENAI API KEY": character " " at offset 6 not allowed ` + envRule},
		{"put secret: long name", func() error { return s.PutSecret(ctx, "a", "k", strings.Repeat("K", 65), []byte("sealed")) },
			`store: invalid secret name "` + strings.Repeat("K", 65) + `": 65 bytes long ` + envRule},
		{"put secret: empty key before empty value", func() error { return s.PutSecret(ctx, "a", "", "K", nil) },
			`store: invalid instance key "": empty ` + storedKeyRule},
		{"get secret: empty name", func() error { _, _, err := s.GetSecret(ctx, "a", "k", ""); return err },
			`store: invalid secret name "": empty ` + envRule},
		{"get secret: bad agent", func() error { _, _, err := s.GetSecret(ctx, "a/b", "k", "K"); return err },
			`store: invalid agent name "a/b": character "/" at offset 1 not allowed ` + nameRule},
		{"list secrets: NUL in key", func() error { _, err := s.ListSecrets(ctx, "a", "k\x00K"); return err },
			`store: invalid instance key "k\x00K": NUL at offset 1 ` + storedKeyRule},
		{"list secrets: empty agent", func() error { _, err := s.ListSecrets(ctx, "", "k"); return err },
			`store: invalid agent name "": empty ` + nameRule},
		// A key the rule for new keys refuses, stored before it: the store
		// holds it, so that such instances stay readable.
		{"load: a key from before the rule", func() error { _, _, _, err := s.LoadInstance(ctx, "a", "team/alice\n"); return err }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNameError(t, tt.call(), tt.want)
		})
	}
	// Nothing was written by the refused calls.
	wantInstances(t, s, "a")
	wantSecrets(t, s, "a", "k")
}

func testClosed(t *testing.T, s store.Store) {
	ctx := context.Background()
	commit(t, s, "a", "k", store.Batch{Meta: meta(1, 0)})
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"LoadInstance", func() error { _, _, _, err := s.LoadInstance(ctx, "a", "k"); return err }},
		{"LoadMeta", func() error { _, _, err := s.LoadMeta(ctx, "a", "k"); return err }},
		{"Commit", func() error { return s.Commit(ctx, "a", "k", store.Batch{Meta: meta(2, 0)}) }},
		{"Commit empty", func() error { return s.Commit(ctx, "a", "k", store.Batch{}) }},
		{"Fence", func() error { _, err := s.Fence(ctx, "a", "k"); return err }},
		{"Instances", func() error { _, err := s.Instances(ctx, "a"); return err }},
		{"GetState", func() error { _, err := s.GetState(ctx, "a", "k", "e"); return err }},
		{"SetState", func() error { return s.SetState(ctx, "a", "k", "e", []byte("x")) }},
		{"PutSecret", func() error { return s.PutSecret(ctx, "a", "k", "K", []byte("sealed")) }},
		{"GetSecret", func() error { _, _, err := s.GetSecret(ctx, "a", "k", "K"); return err }},
		{"ListSecrets", func() error { _, err := s.ListSecrets(ctx, "a", "k"); return err }},
		{"CommitTasks", func() error { return s.CommitTasks(ctx, nil, []string{"t1"}) }},
		{"GetTask", func() error { _, _, err := s.GetTask(ctx, "t1"); return err }},
		{"ListTasks", func() error { _, err := s.ListTasks(ctx, "", ""); return err }},
		{"Close", func() error { return s.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, store.ErrClosed) {
				t.Fatalf("got %v, want ErrClosed", err)
			}
			if err.Error() != "store: closed" {
				t.Fatalf("error text %q, want %q", err, "store: closed")
			}
		})
	}
}

func testCancelled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		call func() error
	}{
		{"LoadInstance", func() error { _, _, _, err := s.LoadInstance(ctx, "a", "k"); return err }},
		{"LoadMeta", func() error { _, _, err := s.LoadMeta(ctx, "a", "k"); return err }},
		{"Commit", func() error { return s.Commit(ctx, "a", "k", store.Batch{Meta: meta(1, 0)}) }},
		{"Fence", func() error { _, err := s.Fence(ctx, "a", "k"); return err }},
		{"Instances", func() error { _, err := s.Instances(ctx, "a"); return err }},
		{"GetState", func() error { _, err := s.GetState(ctx, "a", "k", "e"); return err }},
		{"SetState", func() error { return s.SetState(ctx, "a", "k", "e", []byte("x")) }},
		{"PutSecret", func() error { return s.PutSecret(ctx, "a", "k", "K", []byte("sealed")) }},
		{"GetSecret", func() error { _, _, err := s.GetSecret(ctx, "a", "k", "K"); return err }},
		{"ListSecrets", func() error { _, err := s.ListSecrets(ctx, "a", "k"); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
	}
	wantInstances(t, s, "a")
	wantSecrets(t, s, "a", "k")
}

// testConcurrentCommits hammers the store from many goroutines, each turn
// on its own instance, with readers alongside; run it under -race.
func testConcurrentCommits(t *testing.T, s store.Store) {
	ctx := context.Background()
	const workers, turns = 8, 40
	// A read is made again while it answers store.ErrUnavailable: a
	// replicated store this loaded may answer that the replica that
	// answered stayed behind its leader, its contract's answer for a
	// moment's outage, which is no failure of what this checks (each
	// commit whole, and every one kept). The writes are not made again:
	// each must land.
	var unavailable atomic.Int64
	read := func(f func() error) error {
		deadline := time.Now().Add(time.Minute)
		for {
			err := f()
			if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
				return err
			}
			unavailable.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
	}
	defer func() {
		if n := unavailable.Load(); n > 0 {
			t.Logf("%d reads answered unavailable and were made again", n)
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		key := fmt.Sprintf("k%d", w)
		wg.Go(func() {
			for turn := range int64(turns) {
				seq := uint64(turn) * 2
				err := s.Commit(ctx, "a", key, store.Batch{
					Put:  []store.Record{rec(seq, key), rec(seq+1, key)},
					Meta: meta(turn+1, seq+2),
				})
				if err != nil {
					t.Errorf("commit %s: %v", key, err)
					return
				}
				if err := s.SetState(ctx, "a", key, "e", []byte(key)); err != nil {
					t.Errorf("set state %s: %v", key, err)
					return
				}
				if err := s.PutSecret(ctx, "a", key, fmt.Sprintf("S%d", turn%4), []byte(key)); err != nil {
					t.Errorf("put secret %s: %v", key, err)
					return
				}
				if err := read(func() error { _, _, err := s.GetSecret(ctx, "a", key, "S0"); return err }); err != nil {
					t.Errorf("get secret %s: %v", key, err)
					return
				}
				if err := read(func() error { _, _, _, err := s.LoadInstance(ctx, "a", key); return err }); err != nil {
					t.Errorf("load %s: %v", key, err)
					return
				}
				if err := read(func() error { _, err := s.Instances(ctx, "a"); return err }); err != nil {
					t.Errorf("instances: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	var keys []string
	for w := range workers {
		key := fmt.Sprintf("k%d", w)
		keys = append(keys, key)
		var want []store.Record
		for seq := range uint64(2 * turns) {
			want = append(want, rec(seq, key))
		}
		wantInstance(t, s, "a", key, meta(turns, 2*turns), want)
		wantState(t, s, "a", key, "e", []byte(key))
		wantSecrets(t, s, "a", key, "S0", "S1", "S2", "S3")
	}
	wantInstances(t, s, "a", keys...)
}

func testPending(t *testing.T, s store.Store) {
	ctx := context.Background()
	put := func(id, agent, key, data string) {
		t.Helper()
		if err := s.PutPending(ctx, store.PendingRecord{ID: id, Agent: agent, Instance: key, Data: json.RawMessage(data)}); err != nil {
			t.Fatalf("PutPending(%s): %v", id, err)
		}
	}
	ids := func(agent, key string) string {
		t.Helper()
		rs, err := s.ListPending(ctx, agent, key)
		if err != nil {
			t.Fatalf("ListPending(%q, %q): %v", agent, key, err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return strings.Join(out, ",")
	}
	if _, found, err := s.GetPending(ctx, "q1"); found || err != nil {
		t.Fatalf("GetPending of nothing = %v, %v", found, err)
	}
	buf := []byte(`{"status":"pending"}`)
	put("q2", "a", "k", string(buf))
	put("q1", "a", "k", `{"status":"pending"}`)
	put("q3", "a", "other", `{}`)
	put("q4", "ab", "k", `{}`)
	buf[0] = 'X'                                 // the store keeps its own copy
	put("q1", "a", "k", `{"status":"answered"}`) // replace
	r, found, err := s.GetPending(ctx, "q1")
	if err != nil || !found || r.Agent != "a" || r.Instance != "k" || string(r.Data) != `{"status":"answered"}` {
		t.Errorf("GetPending(q1) = %+v, %v, %v", r, found, err)
	}
	if r, _, _ := s.GetPending(ctx, "q2"); string(r.Data) != `{"status":"pending"}` {
		t.Errorf("q2 data = %s", r.Data)
	}
	for _, tt := range []struct{ agent, key, want string }{
		{"", "", "q1,q2,q3,q4"},
		{"a", "", "q1,q2,q3"},
		{"a", "k", "q1,q2"},
		{"ab", "", "q4"},
		{"", "k", "q1,q2,q4"},
		{"nobody", "", ""},
	} {
		if got := ids(tt.agent, tt.key); got != tt.want {
			t.Errorf("ListPending(%q, %q) = %q, want %q", tt.agent, tt.key, got, tt.want)
		}
	}
	for _, tt := range []struct {
		r    store.PendingRecord
		want string
	}{
		{store.PendingRecord{ID: "bad id", Agent: "a", Instance: "k", Data: json.RawMessage(`{}`)}, `store: invalid pending item ID "bad id": character " " at offset 3 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{store.PendingRecord{ID: "q9", Agent: "a b", Instance: "k", Data: json.RawMessage(`{}`)}, `store: invalid agent name "a b": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{store.PendingRecord{ID: "q9", Agent: "a", Instance: "k", Data: json.RawMessage(`{`)}, `store: pending item "q9": data is not valid JSON`},
	} {
		if err := s.PutPending(ctx, tt.r); err == nil || err.Error() != tt.want {
			t.Errorf("PutPending(%+v) = %v, want %q", tt.r, err, tt.want)
		}
	}
	if got := ids("", ""); got != "q1,q2,q3,q4" {
		t.Errorf("refused puts changed the store: %q", got)
	}
}

// testPendingInBatch commits a message and the pending item it opens in one
// batch: both are stored, and a batch refused for its item stores neither.
func testPendingInBatch(t *testing.T, s store.Store) {
	ctx := context.Background()
	item := store.PendingRecord{ID: "q1", Agent: "a", Instance: "k", Data: json.RawMessage(`{"status":"pending"}`)}
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "question")}, Meta: meta(1, 1), Pending: []store.PendingRecord{item}})
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "question")})
	if r, found, err := s.GetPending(ctx, "q1"); err != nil || !found || string(r.Data) != `{"status":"pending"}` {
		t.Fatalf("GetPending(q1) = %+v, %v, %v", r, found, err)
	}

	bad := store.PendingRecord{ID: "q2", Agent: "a", Instance: "k", Data: json.RawMessage(`{`)}
	err := s.Commit(ctx, "a", "k", store.Batch{Put: []store.Record{rec(1, "second")}, Meta: meta(2, 2), Pending: []store.PendingRecord{bad}})
	if want := `store: pending item "q2": data is not valid JSON`; err == nil || err.Error() != want {
		t.Fatalf("commit with a bad item: err = %v, want %q", err, want)
	}
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "question")})
	if _, found, _ := s.GetPending(ctx, "q2"); found {
		t.Fatal("a refused batch stored its pending item")
	}
	if (&store.Batch{Pending: []store.PendingRecord{item}}).Empty() {
		t.Error("a batch with only a pending item is Empty")
	}
}

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
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// Run runs every case of the conformance suite against the stores open
// returns, each case as a subtest on a store of its own, which Run closes
// at the case's end unless the case did. open fails t if it cannot open
// a store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			CloseAtEnd(t, s)
			c.run(t, s)
		})
	}
}

// CloseAtEnd closes s at the end of the test unless the test did.
func CloseAtEnd(t testing.TB, s store.Store) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
}

// Message returns a message with id, role and content that exercises
// every field JSON must round-trip: an assistant's has reasoning, a tool
// call and metadata.
func Message(id string, role pipeline.Role, content string) pipeline.Message {
	return msg(id, role, content)
}

// Record returns the record at seq of a message with content, a user's at
// an even seq and an assistant's (with reasoning, a tool call and
// metadata, every field JSON must round-trip) at an odd one.
func Record(seq uint64, content string) store.Record { return rec(seq, content) }

// Meta returns the meta of an instance after turns turns, whose next
// message gets seq next.
func Meta(turns int64, next uint64) *store.Meta { return meta(turns, next) }

// Commit commits b to agent's instance key, failing t on an error.
func Commit(t testing.TB, s store.Store, agent, key string, b store.Batch) {
	t.Helper()
	commit(t, s, agent, key, b)
}

// WantInstance loads agent's instance key, with LoadInstance and with
// LoadMeta, and compares it with wantMeta and want; a nil wantMeta and an
// empty want mean not found.
func WantInstance(t *testing.T, s store.Store, agent, key string, wantMeta *store.Meta, want []store.Record) {
	t.Helper()
	wantInstance(t, s, agent, key, wantMeta, want)
}

// WantState checks the state of extension ext of agent's instance key;
// a nil want means none.
func WantState(t *testing.T, s store.Store, agent, key, ext string, want []byte) {
	t.Helper()
	wantState(t, s, agent, key, ext, want)
}

// WantInstances checks the instances listed for agent.
func WantInstances(t *testing.T, s store.Store, agent string, want ...string) {
	t.Helper()
	wantInstances(t, s, agent, want...)
}

// The rules the name errors state (see store.ValidateName and its kin).
const (
	nameRule = "(want [a-zA-Z0-9_.-]{1,64})"
	envRule  = "(want [A-Za-z_][A-Za-z0-9_]{0,63})"
	// storedKeyRule is the looser rule of the keys the store holds.
	storedKeyRule = "(want 1 to 256 bytes of UTF-8 without NUL)"
)

// checkNameError checks err against want: nil for "", else that exact text,
// matching store.ErrInvalidName.
func checkNameError(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %s", want)
	}
	if err.Error() != want {
		t.Fatalf("error\n got: %s\nwant: %s", err, want)
	}
	if !errors.Is(err, store.ErrInvalidName) {
		t.Fatalf("error %v does not match ErrInvalidName", err)
	}
}

var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// msg returns a message that exercises every field JSON must round-trip.
func msg(id string, role pipeline.Role, content string) pipeline.Message {
	m := pipeline.Message{
		ID:        id,
		Role:      role,
		Content:   content,
		Source:    pipeline.Source{Type: pipeline.SourceUser},
		CreatedAt: t0,
	}
	if role == pipeline.RoleAssistant {
		m.Reasoning = "thinking about " + content
		m.Source = pipeline.Source{Type: pipeline.SourceModel}
		m.ToolCalls = []pipeline.ToolCall{{ID: "call-" + id, Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}
		m.Metadata = map[string]any{"memo.injected": "yes"}
	}
	return m
}

func rec(seq uint64, content string) store.Record {
	role := pipeline.RoleUser
	if seq%2 == 1 {
		role = pipeline.RoleAssistant
	}
	m := msg(fmt.Sprintf("m%d", seq), role, content)
	return store.Record{Seq: seq, Message: &m}
}

func meta(turns int64, next uint64) *store.Meta {
	return &store.Meta{Turns: turns, NextSeq: next, CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(turns) * time.Second)}
}

func commit(t testing.TB, s store.Store, agent, key string, b store.Batch) {
	t.Helper()
	if err := s.Commit(context.Background(), agent, key, b); err != nil {
		t.Fatalf("commit %s/%s: %v", agent, key, err)
	}
}

// wantInstance loads agent/key and compares it with want; a nil want means
// not found.
func wantInstance(t *testing.T, s store.Store, agent, key string, wantMeta *store.Meta, want []store.Record) {
	t.Helper()
	m, records, found, err := s.LoadInstance(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("load %s/%s: %v", agent, key, err)
	}
	wantFound := wantMeta != nil || len(want) > 0
	noMeta := wantMeta == nil
	if found != wantFound {
		t.Fatalf("load %s/%s: found = %v, want %v", agent, key, found, wantFound)
	}
	if wantMeta == nil {
		wantMeta = &store.Meta{}
	}
	if m != *wantMeta {
		t.Errorf("load %s/%s: meta = %+v, want %+v", agent, key, m, *wantMeta)
	}
	// LoadMeta reads the same meta, without the records.
	lm, hasMeta, err := s.LoadMeta(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("load meta %s/%s: %v", agent, key, err)
	}
	if lm != m || m != (store.Meta{}) && !hasMeta || noMeta && hasMeta {
		t.Errorf("load meta %s/%s: %+v (found %v), want %+v", agent, key, lm, hasMeta, m)
	}
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(records, want) {
		t.Errorf("load %s/%s: records\n got: %s\nwant: %s", agent, key, seqs(records), seqs(want))
		for i := range min(len(records), len(want)) {
			if !reflect.DeepEqual(records[i], want[i]) {
				t.Errorf("record %d\n got: %+v\nwant: %+v", i, records[i], want[i])
			}
		}
	}
}

// seqs describes records briefly, for failure messages.
func seqs(records []store.Record) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range records {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%s", r.Seq, r.Message.Content)
	}
	b.WriteString("]")
	return b.String()
}

func wantState(t *testing.T, s store.Store, agent, key, ext string, want []byte) {
	t.Helper()
	got, err := s.GetState(context.Background(), agent, key, ext)
	if err != nil {
		t.Fatalf("get state %s/%s/%s: %v", agent, key, ext, err)
	}
	if (got == nil) != (want == nil) || string(got) != string(want) {
		t.Fatalf("get state %s/%s/%s = %q (nil %v), want %q (nil %v)", agent, key, ext, got, got == nil, want, want == nil)
	}
}

func wantInstances(t *testing.T, s store.Store, agent string, want ...string) {
	t.Helper()
	got, err := s.Instances(context.Background(), agent)
	if err != nil {
		t.Fatalf("instances of %s: %v", agent, err)
	}
	if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("instances of %s = %q, want %q", agent, got, want)
	}
}

var conformance = []struct {
	name string
	run  func(t *testing.T, s store.Store)
}{
	{"load unknown instance", func(t *testing.T, s store.Store) {
		m, records, found, err := s.LoadInstance(context.Background(), "a", "nobody")
		if err != nil || found || m != (store.Meta{}) || records != nil {
			t.Fatalf("got %+v, %v, %v, %v; want zero, nil, false, nil", m, records, found, err)
		}
	}},
	{"commit records and meta then load", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "hello"), rec(1, "hi")}, Meta: meta(1, 2)})
		wantInstance(t, s, "a", "k", meta(1, 2), []store.Record{rec(0, "hello"), rec(1, "hi")})
	}},
	{"records come back in seq order", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(5, "five"), rec(3, "three"), rec(300, "300")}})
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(4, "four"), rec(256, "256")}})
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "zero")}})
		wantInstance(t, s, "a", "k", nil, []store.Record{
			rec(0, "zero"), rec(3, "three"), rec(4, "four"), rec(5, "five"), rec(256, "256"), rec(300, "300"),
		})
	}},
	{"overwrite at same seq", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "old"), rec(1, "kept")}, Meta: meta(1, 2)})
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "new")}})
		wantInstance(t, s, "a", "k", meta(1, 2), []store.Record{rec(0, "new"), rec(1, "kept")})
	}},
	{"later duplicate in one batch wins", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(2, "first"), rec(2, "second")}})
		wantInstance(t, s, "a", "k", nil, []store.Record{rec(2, "second")})
	}},
	{"delete", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "a"), rec(1, "b"), rec(2, "c")}, Meta: meta(1, 3)})
		commit(t, s, "a", "k", store.Batch{Delete: []uint64{1, 99}, Meta: meta(2, 3)})
		wantInstance(t, s, "a", "k", meta(2, 3), []store.Record{rec(0, "a"), rec(2, "c")})
	}},
	{"put and delete of one seq in one batch deletes", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "a"), rec(1, "b")}, Delete: []uint64{1}})
		wantInstance(t, s, "a", "k", nil, []store.Record{rec(0, "a")})
	}},
	{"batch without meta keeps meta", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Meta: meta(3, 0)})
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "a")}})
		wantInstance(t, s, "a", "k", meta(3, 0), []store.Record{rec(0, "a")})
	}},
	{"meta alone is found", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Meta: &store.Meta{}})
		m, records, found, err := s.LoadInstance(context.Background(), "a", "k")
		if err != nil || !found || m != (store.Meta{}) || records != nil {
			t.Fatalf("got %+v, %v, %v, %v; want zero, nil, true, nil", m, records, found, err)
		}
		wantInstances(t, s, "a", "k")
	}},
	{"empty batch stores nothing", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{})
		commit(t, s, "a", "k", store.Batch{Delete: []uint64{0}})
		wantInstance(t, s, "a", "k", nil, nil)
		wantInstances(t, s, "a")
	}},
	{"deleting every record forgets the instance", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "a")}})
		commit(t, s, "a", "k", store.Batch{Delete: []uint64{0}})
		wantInstance(t, s, "a", "k", nil, nil)
		wantInstances(t, s, "a")
	}},
	{"loaded records belong to the caller", func(t *testing.T, s store.Store) {
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "a"), rec(1, "b")}})
		_, records, _, err := s.LoadInstance(context.Background(), "a", "k")
		if err != nil {
			t.Fatal(err)
		}
		// The slice is the caller's; the messages are shared and immutable
		// (store.Record), so the caller replaces rather than changes them.
		records[0] = rec(0, "changed")
		records[1] = rec(1, "replaced")
		_ = append(records[:1], rec(7, "appended"))
		wantInstance(t, s, "a", "k", nil, []store.Record{rec(0, "a"), rec(1, "b")})
	}},
	{"committed batch belongs to the caller", func(t *testing.T, s store.Store) {
		m := meta(1, 2)
		b := store.Batch{Put: []store.Record{rec(0, "a"), rec(1, "b")}, Meta: m}
		commit(t, s, "a", "k", b)
		b.Put[0] = rec(0, "changed")
		b.Put[1] = rec(1, "replaced")
		m.Turns = 99
		wantInstance(t, s, "a", "k", meta(1, 2), []store.Record{rec(0, "a"), rec(1, "b")})
	}},
	{"record without a message", func(t *testing.T, s store.Store) {
		err := s.Commit(context.Background(), "a", "k", store.Batch{Put: []store.Record{rec(0, "ok"), {Seq: 1}}, Meta: meta(1, 2)})
		if err == nil || err.Error() != "store: record 1 has no message" {
			t.Fatalf("err = %v", err)
		}
		wantInstance(t, s, "a", "k", nil, nil)
	}},
	{"commit is atomic", testAtomicCommit},
	{"state", testState},
	{"pending items", testPending},
	{"pending items with a batch", testPendingInBatch},
	{"tasks", testTasks},
	{"a record put again under another instance moves", testRecordMoves},
	{"secrets", testSecrets},
	{"secrets alone are neither listed nor found", testSecretsAreNotInstances},
	{"state is the caller's", func(t *testing.T, s store.Store) {
		ctx := context.Background()
		in := []byte("v1")
		if err := s.SetState(ctx, "a", "k", "e", in); err != nil {
			t.Fatal(err)
		}
		in[0] = 'X'
		out, err := s.GetState(ctx, "a", "k", "e")
		if err != nil {
			t.Fatal(err)
		}
		out[0] = 'Y'
		wantState(t, s, "a", "k", "e", []byte("v1"))
	}},
	{"state alone is listed but not found", func(t *testing.T, s store.Store) {
		if err := s.SetState(context.Background(), "a", "k", "e", []byte("x")); err != nil {
			t.Fatal(err)
		}
		wantInstances(t, s, "a", "k")
		wantInstance(t, s, "a", "k", nil, nil)
		if err := s.SetState(context.Background(), "a", "k", "e", nil); err != nil {
			t.Fatal(err)
		}
		wantInstances(t, s, "a")
	}},
	{"instances sorted and prefix-safe", testInstances},
	{"invalid names refused", testInvalidNames},
	{"closed store", testClosed},
	{"cancelled context", testCancelled},
	{"concurrent commits", testConcurrentCommits},
	{"fencing", testFencing},
	{"a fenced takeover", testFencedTakeover},
	{"tasks in a batch", testTasksInBatch},
	{"state in a batch", testStateInBatch},
}

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
				if _, _, err := s.GetSecret(ctx, "a", key, "S0"); err != nil {
					t.Errorf("get secret %s: %v", key, err)
					return
				}
				if _, _, _, err := s.LoadInstance(ctx, "a", key); err != nil {
					t.Errorf("load %s: %v", key, err)
					return
				}
				if _, err := s.Instances(ctx, "a"); err != nil {
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

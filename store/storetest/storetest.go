package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
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

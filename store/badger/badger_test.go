package badger_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// rawUpdate changes the database in dir with Badger itself, bypassing the
// store, as a damaged or foreign database would be.
func rawUpdate(t *testing.T, dir string, fn func(txn *badgerdb.Txn) error) {
	t.Helper()
	db, err := badgerdb.Open(badgerdb.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// messageKey builds a message key by hand, from the layout documented in
// doc.go, so that the test also pins the layout.
func messageKey(agent, key string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("m\x00"+agent+"\x00"+key+"\x00"), seq)
}

func TestBadgerReopenKeepsEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDisk(t, dir)
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "q"), rec(1, "a")}, Meta: meta(1, 2)})
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(2, "q2")}, Delete: []uint64{1}, Meta: meta(2, 3)})
	commit(t, s, "b", "k", store.Batch{Meta: meta(1, 0)})
	if err := s.SetState(ctx, "a", "k", "memo", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState(ctx, "a", "only-state", "memo", []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPending(ctx, store.PendingRecord{ID: "q1", Agent: "a", Instance: "k", Data: []byte(`{"status":"pending"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDisk(t, dir)
	closeStore(t, s)
	wantInstance(t, s, "a", "k", meta(2, 3), []store.Record{rec(0, "q"), rec(2, "q2")})
	wantInstance(t, s, "b", "k", meta(1, 0), nil)
	wantState(t, s, "a", "k", "memo", []byte(`{"n":1}`))
	wantState(t, s, "a", "only-state", "memo", []byte{})
	wantInstances(t, s, "a", "k", "only-state")
	wantInstances(t, s, "b", "k")
	if r, found, err := s.GetPending(ctx, "q1"); err != nil || !found || string(r.Data) != `{"status":"pending"}` || r.Instance != "k" {
		t.Errorf("pending item after reopen = %+v, %v, %v", r, found, err)
	}

	// The reopened store carries on.
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(3, "a2")}, Meta: meta(2, 4)})
	wantInstance(t, s, "a", "k", meta(2, 4), []store.Record{rec(0, "q"), rec(2, "q2"), rec(3, "a2")})
}

func TestBadgerWritesSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	if err := openDisk(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, dir, func(txn *badgerdb.Txn) error {
		item, err := txn.Get([]byte("v"))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if string(v) != "1" {
			t.Errorf("schema version = %q, want %q", v, "1")
		}
		return err
	})
	// And opens it again.
	if err := openDisk(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesOtherData(t *testing.T) {
	tests := []struct {
		name       string
		key, value string
		want       string // after `store: open data directory "<dir>": `
	}{
		{"newer schema", "v", "2", "schema version is 2, this build reads version 1"},
		{"corrupt schema version", "v", "x", `corrupt schema version at key "v": invalid character 'x' looking for beginning of value`},
		{"not a store", "foo", "bar", `no schema version but data (first key "foo"): not a ganglion store`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rawUpdate(t, dir, func(txn *badgerdb.Txn) error { return txn.Set([]byte(tt.key), []byte(tt.value)) })
			s, err := badger.Open(dir)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			want := fmt.Sprintf("store: open data directory %q: %s", dir, tt.want)
			if err.Error() != want {
				t.Fatalf("error\n got: %s\nwant: %s", err, want)
			}
			// The failed open released the directory.
			rawUpdate(t, dir, func(*badgerdb.Txn) error { return nil })
		})
	}
}

// TestBadgerCorruptValues damages the database under the store and checks
// that reading it fails naming the key, without panicking.
func TestBadgerCorruptValues(t *testing.T) {
	ctx := context.Background()
	load := func(s store.Store) error { _, _, _, err := s.LoadInstance(ctx, "a", "k"); return err }
	instances := func(s store.Store) error { _, err := s.Instances(ctx, "a"); return err }
	tests := []struct {
		name       string
		key, value []byte
		call       func(store.Store) error
		want       string
	}{
		{"garbage record", messageKey("a", "k", 1), []byte("garbage"), load,
			`store: load agent "a" instance "k": corrupt value at key "m\x00a\x00k\x00\x00\x00\x00\x00\x00\x00\x00\x01": invalid character 'g' looking for beginning of value`},
		{"truncated meta", []byte("i\x00a\x00k"), []byte(`{"turns":`), load,
			`store: load agent "a" instance "k": corrupt value at key "i\x00a\x00k": unexpected end of JSON input`},
		{"meta of the wrong type", []byte("i\x00a\x00k"), []byte(`{"turns":"many"}`), load,
			`store: load agent "a" instance "k": corrupt value at key "i\x00a\x00k": json: cannot unmarshal string into Go struct field Meta.turns of type int64`},
		{"record under another seq", messageKey("a", "k", 2), []byte(`{"seq":7,"message":{"id":"x","role":"user","source":{"type":"user"},"created_at":"2025-01-01T00:00:00Z"}}`), load,
			`store: load agent "a" instance "k": corrupt value at key "m\x00a\x00k\x00\x00\x00\x00\x00\x00\x00\x00\x02": record has seq 7`},
		{"short message key", []byte("m\x00a\x00k\x00\x01"), []byte(`{}`), load,
			`store: load agent "a" instance "k": malformed key "m\x00a\x00k\x00\x01": wrong length for a message key`},
		{"message key without seq", []byte("m\x00a\x00bad"), []byte(`{}`), instances,
			`store: instances of agent "a": malformed key "m\x00a\x00bad": no sequence number`},
		{"state key without extension", []byte("s\x00a\x00bad"), []byte(`x`), instances,
			`store: instances of agent "a": malformed key "s\x00a\x00bad": no separator after instance key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDisk(t, dir)
			commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "fine")}, Meta: meta(1, 1)})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			rawUpdate(t, dir, func(txn *badgerdb.Txn) error { return txn.Set(tt.key, tt.value) })
			s = openDisk(t, dir)
			closeStore(t, s)
			err := tt.call(s)
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestBadgerCommitTooBig(t *testing.T) {
	s, err := badger.OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "small")}, Meta: meta(1, 1)})

	// 120 records of 100 kB: more than Badger takes in one transaction.
	big := strings.Repeat("x", 100<<10)
	var put []store.Record
	for seq := range uint64(120) {
		put = append(put, rec(seq+1, big))
	}
	err = s.Commit(context.Background(), "a", "k", store.Batch{Put: put, Delete: []uint64{0}, Meta: meta(2, 121)})
	if !errors.Is(err, badgerdb.ErrTxnTooBig) {
		t.Fatalf("got %v, want ErrTxnTooBig", err)
	}
	const prefix = `store: commit agent "a" instance "k": batch of 120 puts and 1 deletes too large for one transaction (about 9830 kB with a memtable of 64 MiB), nothing written: write record `
	const suffix = `: Txn is too big to fit into one request`
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) {
		t.Fatalf("error\n got: %s\nwant: %s<seq>%s", msg, prefix, suffix)
	}
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "small")})
}

func TestBadgerCommitUnencodable(t *testing.T) {
	s, err := badger.OpenInMemory()
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	bad := rec(1, "bad")
	bad.Message.Metadata = map[string]any{"score": math.NaN()}
	err = s.Commit(context.Background(), "a", "k", store.Batch{Put: []store.Record{rec(0, "fine"), bad}, Meta: meta(1, 2)})
	const want = `store: commit agent "a" instance "k": nothing written: encode record 1: json: unsupported value: NaN`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got: %v\nwant: %s", err, want)
	}
	wantInstance(t, s, "a", "k", nil, nil)
}

// checkInUse checks that err is Open refusing dir because another
// store holds it.
func checkInUse(t *testing.T, err error, dir string) {
	t.Helper()
	if err == nil {
		t.Fatal("second open succeeded")
	}
	prefix := fmt.Sprintf("store: open data directory %q: it is in use by another process (another ganglion running?): ", dir)
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error\n got: %s\nwant: %s<badger's error>", err, prefix)
	}
	if !strings.Contains(err.Error(), "Another process is using this Badger database") {
		t.Fatalf("error does not carry Badger's: %s", err)
	}
	if !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("error does not match ErrInUse: %s", err)
	}
}

func TestOpenTwiceInOneProcess(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir)
	start := time.Now()
	_, err := badger.Open(dir)
	checkInUse(t, err, dir)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %v; it should fail at once", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing released the directory.
	if err := openDisk(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
}

// holdDirEnv tells TestHelperProcess which directory to hold open.
const holdDirEnv = "GANGLION_STORE_TEST_HOLD_DIR"

// TestHelperProcess is not a test: TestOpenHeldByAnotherProcess runs
// the test binary again to execute it in a second process. It opens the store
// in $GANGLION_STORE_TEST_HOLD_DIR, prints "ready", holds the store until its
// standard input closes, then closes it and exits.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(holdDirEnv)
	if dir == "" {
		t.Skip("helper process for TestOpenHeldByAnotherProcess")
	}
	s, err := badger.Open(dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Println("close:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestOpenHeldByAnotherProcess(t *testing.T) {
	if os.Getenv(holdDirEnv) != "" {
		t.Skip("in the helper process")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdDirEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	wait := func() error {
		stdin.Close()
		rest, _ := io.ReadAll(stdout)
		waited = true
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("helper: %v; stdout: %q; stderr: %q", err, rest, stderr.String())
		}
		return nil
	}
	defer func() {
		if !waited {
			_ = wait()
		}
	}()

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("helper said %q (%v), want ready; stderr: %s", line, err, stderr.String())
	}

	start := time.Now()
	_, err = badger.Open(dir)
	checkInUse(t, err, dir)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %v; it should fail at once", d)
	}

	if err := wait(); err != nil {
		t.Fatal(err)
	}
	// Once the other process has gone, the directory is free.
	if err := openDisk(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerLogger(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		some  bool // whether an ordinary open, commit and close log anything
	}{
		{"debug", slog.LevelDebug, true},
		{"info", slog.LevelInfo, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &logtest.Recorder{Min: tt.level}
			dir := t.TempDir()
			for range 2 { // create, then reopen
				s, err := badger.Open(dir, badger.WithLogger(slog.New(h)), badger.WithSyncWrites(true))
				if err != nil {
					t.Fatal(err)
				}
				commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "x")}, Meta: meta(1, 1)})
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			recs := h.Records()
			if got := len(recs) > 0; got != tt.some {
				t.Fatalf("logged %d records, want some: %v", len(recs), tt.some)
			}
			for _, r := range recs {
				if r.Level != slog.LevelDebug || !strings.HasPrefix(r.Message, "badger: ") {
					t.Errorf("unexpected record: %v %q", r.Level, r.Message)
				}
				if strings.HasSuffix(r.Message, "\n") {
					t.Errorf("record ends in a newline: %q", r.Message)
				}
			}
		})
	}
}

// TestBadgerSilentByDefault checks that Badger writes nothing to standard
// output, standard error or the log package while the store is used.
func TestBadgerSilentByDefault(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		out <- b
	}()
	stdout, stderr := os.Stdout, os.Stderr
	logOut := log.Writer()
	os.Stdout, os.Stderr = w, w
	log.SetOutput(w)
	restored := false
	restore := func() {
		if !restored {
			os.Stdout, os.Stderr = stdout, stderr
			log.SetOutput(logOut)
			w.Close()
			restored = true
		}
	}
	defer restore()

	dir := t.TempDir()
	for range 2 {
		s, err := badger.Open(dir)
		if err != nil {
			restore()
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Commit(ctx, "a", "k", store.Batch{Put: []store.Record{rec(0, "x")}, Meta: meta(1, 1)}); err != nil {
			restore()
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			restore()
			t.Fatal(err)
		}
	}
	s, err := badger.OpenInMemory()
	if err == nil {
		err = s.Close()
	}
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if b := <-out; len(b) > 0 {
		t.Fatalf("the store printed:\n%s", b)
	}
}

// TestBadgerCloseStopsGoroutines checks that Close leaves no goroutine
// behind.
func TestBadgerCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, impl := range implementations {
		s := impl.open(t)
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "x")}, Meta: meta(1, 1)})
		if err := s.Close(); err != nil {
			t.Fatalf("%s: close: %v", impl.name, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := runtime.NumGoroutine()
		if after <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBadgerSizes: the memtable and block cache sizes are Badger's, a
// memtable's size bounds a commit (a batch over about 15 % of it is
// refused whole), and a size below the minimum is refused at open.
func TestBadgerSizes(t *testing.T) {
	const (
		large = 300 << 10 // kept in the value log: a pointer counts against a commit
		small = 15 << 10  // kept in the tables: counts whole
	)
	tests := []struct {
		name    string
		opts    []badger.Option
		records int // in one batch
		size    int // of each record's content
		wantErr string
		// Badger's sizes
		memTable, blockCache int64
	}{
		{"default: five records of 300 kB", nil, 5, large, "", 8 << 20, 1 << 20},
		{"default: fifty records of 15 kB", nil, 50, small, "", 8 << 20, 1 << 20},
		{"default: a hundred records of 15 kB", nil, 100, small, "Txn is too big to fit into one request", 8 << 20, 1 << 20},
		{"64 MiB memtable: a hundred records of 15 kB", []badger.Option{badger.WithMemTableSize(64 << 20)}, 100, small, "", 64 << 20, 1 << 20},
		{"64 MiB memtable: five records of 300 kB", []badger.Option{badger.WithMemTableSize(64 << 20)}, 5, large, "", 64 << 20, 1 << 20},
		{"8 MiB block cache", []badger.Option{badger.WithBlockCacheSize(8 << 20)}, 5, large, "", 8 << 20, 8 << 20},
		{"256 MiB block cache", []badger.Option{badger.WithBlockCacheSize(256 << 20)}, 5, large, "", 8 << 20, 256 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := badger.Open(dir, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if m, c := badger.BadgerSizes(s); m != tt.memTable || c != tt.blockCache {
				t.Errorf("Badger runs with a memtable of %d bytes, a block cache of %d; want %d, %d", m, c, tt.memTable, tt.blockCache)
			}
			commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "small")}, Meta: meta(1, 1)})
			var put []store.Record
			for seq := range uint64(tt.records) {
				m := msg(fmt.Sprintf("m%d", seq+1), pipeline.RoleUser, strings.Repeat("x", tt.size))
				put = append(put, store.Record{Seq: seq + 1, Message: &m})
			}
			err = s.Commit(context.Background(), "a", "k", store.Batch{Put: put, Meta: meta(2, uint64(tt.records)+1)})
			if tt.wantErr == "" && err != nil {
				t.Fatalf("commit: %v", err)
			}
			if tt.wantErr != "" {
				if !errors.Is(err, badgerdb.ErrTxnTooBig) || !strings.HasSuffix(err.Error(), tt.wantErr) {
					t.Fatalf("commit: %v; want ErrTxnTooBig, ending %q", err, tt.wantErr)
				}
				put = nil
			}
			// What was committed is read back, after a reopen.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = badger.Open(dir, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			closeStore(t, s)
			want, wantMeta := append([]store.Record{rec(0, "small")}, put...), meta(2, uint64(tt.records)+1)
			if put == nil {
				wantMeta = meta(1, 1)
			}
			wantInstance(t, s, "a", "k", wantMeta, want)
		})
	}
}

func TestBadgerSizesRefused(t *testing.T) {
	tests := []struct {
		opt  badger.Option
		want string
	}{
		{badger.WithMemTableSize(4 << 20), "memtable size 4194304 bytes is below the minimum of 8388608 (8 MiB)"},
		{badger.WithBlockCacheSize(-1), "block cache size -1 bytes is below the minimum of 1048576 (1 MiB)"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		s, err := badger.Open(dir, tt.opt)
		if want := fmt.Sprintf("store: open data directory %q: %s", dir, tt.want); err == nil || err.Error() != want {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open: %v; want %s", err, want)
		}
	}
}

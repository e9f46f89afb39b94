package badger_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// valueLogBytes is the size of the value log's files in dir.
func valueLogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// collected between the listing and now
		case err != nil:
			t.Fatal(err)
		default:
			n += fi.Size()
		}
	}
	return n
}

// garbageRounds overwrites large values in rounds, reopening the store
// after each so that Badger writes a table per round; past five tables
// its compaction drops the overwritten versions and counts the value
// log's garbage. It returns the store, open, and what is live.
func garbageRounds(t *testing.T, dir string, opts []badger.Option, write func(s store.Store, round, i int)) store.Store {
	t.Helper()
	s, err := badger.Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 7 {
		for i := range 40 {
			write(s, round, i)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = badger.Open(dir, opts...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestValueLogCollected: large values overwritten or removed leave
// garbage in the value log, which the store reclaims, and what is live
// reads back whole afterwards, after a reopen too.
func TestValueLogCollected(t *testing.T) {
	ctx := context.Background()
	large := func(round, i int) string { return fmt.Sprintf("%d/%d:", round, i) + strings.Repeat("v", 100<<10) }
	tests := []struct {
		name  string
		write func(t *testing.T, s store.Store, round, i int)
		check func(t *testing.T, s store.Store)
	}{
		{
			name: "a state written each turn",
			write: func(t *testing.T, s store.Store, round, i int) {
				commit(t, s, "a", "k", store.Batch{State: map[string][]byte{"ext": []byte(`"` + large(round, i) + `"`)}})
			},
			check: func(t *testing.T, s store.Store) {
				got, err := s.GetState(ctx, "a", "k", "ext")
				if want := `"` + large(6, 39) + `"`; err != nil || string(got) != want {
					t.Fatalf("state after the collection: %d bytes starting %.12q, %v; want the last written", len(got), got, err)
				}
			},
		},
		{
			name: "messages replaced, one kept",
			write: func(t *testing.T, s store.Store, round, i int) {
				m := msg("m1", pipeline.RoleTool, large(round, i))
				put := []store.Record{{Seq: 1, Message: &m}}
				if round == 0 && i == 0 {
					k := msg("m0", pipeline.RoleUser, large(-1, -1))
					put = append(put, store.Record{Seq: 0, Message: &k})
				}
				commit(t, s, "a", "k", store.Batch{Put: put, Meta: meta(int64(round*40+i+1), 2)})
			},
			check: func(t *testing.T, s store.Store) {
				k, m := msg("m0", pipeline.RoleUser, large(-1, -1)), msg("m1", pipeline.RoleTool, large(6, 39))
				wantInstance(t, s, "a", "k", meta(280, 2), []store.Record{{Seq: 0, Message: &k}, {Seq: 1, Message: &m}})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// 1 MiB files, so that the garbage is in files other than
			// the one being written; no collection but the test's.
			opts := []badger.Option{badger.WithValueLog(1<<20, time.Hour)}
			s := garbageRounds(t, dir, opts, func(s store.Store, round, i int) { tt.write(t, s, round, i) })
			before := valueLogBytes(t, dir)
			if before < 25<<20 {
				t.Fatalf("value log %d bytes after 280 values of 100 kB: the large values are not in it", before)
			}
			// Badger counts a file's garbage once it has compacted the
			// tables that point into it, in the background: collect until
			// at most half is left.
			rewritten, after := 0, before
			for deadline := time.Now().Add(10 * time.Second); after > before/2 && time.Now().Before(deadline); after = valueLogBytes(t, dir) {
				n, err := badger.GCValueLog(s)
				if err != nil {
					t.Fatal(err)
				}
				rewritten += n
				time.Sleep(10 * time.Millisecond)
			}
			if after > before/2 {
				t.Fatalf("value log %d bytes before the collection, %d after 10 s of it (%d files rewritten); want at most half left", before, after, rewritten)
			}
			tt.check(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := badger.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer closeStore(t, s)
			tt.check(t, s)
		})
	}
}

// TestValueLogCollectedPeriodically: the store collects by itself, and
// Close stops it.
func TestValueLogCollectedPeriodically(t *testing.T) {
	before := goruntime.NumGoroutine()
	dir := t.TempDir()
	opts := []badger.Option{badger.WithValueLog(1<<20, 10*time.Millisecond)}
	value := []byte(`"` + strings.Repeat("v", 100<<10) + `"`)
	s := garbageRounds(t, dir, opts, func(s store.Store, round, i int) {
		commit(t, s, "a", "k", store.Batch{State: map[string][]byte{"ext": value}})
	})
	deadline := time.Now().Add(10 * time.Second)
	// 280 values of 100 kB were written: at most half of it is left.
	for valueLogBytes(t, dir) > 14<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("value log still %d bytes after 10 s of collections every 10 ms", valueLogBytes(t, dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("second Close: no error")
	}
	// The collector, and Badger's own goroutines, are gone.
	for deadline := time.Now().Add(5 * time.Second); goruntime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before the store, %d after its Close:\n%s", before, goruntime.NumGoroutine(), buf[:goruntime.Stack(buf, true)])
		}
	}
}

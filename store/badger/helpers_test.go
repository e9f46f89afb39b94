package badger_test

import (
	"testing"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
	"github.com/ganglion-dev/ganglion/store/storetest"
)

// The conformance suite's helpers, under the names these tests had
// when they lived beside it in package store.
var (
	msg           = storetest.Message
	rec           = storetest.Record
	meta          = storetest.Meta
	commit        = storetest.Commit
	wantInstance  = storetest.WantInstance
	wantState     = storetest.WantState
	wantInstances = storetest.WantInstances
	closeStore    = storetest.CloseAtEnd
)

// openDisk opens the store in dir, failing t on an error.
func openDisk(t testing.TB, dir string) store.Store {
	t.Helper()
	s, err := badger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// implementations are the Badger stores the conformance suite runs
// against.
var implementations = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"badger-in-memory", func(t testing.TB) store.Store {
		s, err := badger.OpenInMemory()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"badger-on-disk", func(t testing.TB) store.Store { return openDisk(t, t.TempDir()) }},
}

// TestConformance runs the conformance suite against the Badger store, in
// memory and on disk.
func TestConformance(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) store.Store { return impl.open(t) })
		})
	}
}

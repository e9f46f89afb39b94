// Package storetest is the conformance suite of package store: the cases
// every [store.Store] passes, whatever keeps its data. The memory store,
// the Badger store (package store/badger) and the JetStream store
// (package store/jetstream) run it from their tests; a new backend, made a
// Store by [store.Checked], runs it from its own:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(t.TempDir())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Its helpers (Record, Meta, Commit, WantInstance and their kin) are
// those of the suite's cases, for a backend's own tests.
package storetest

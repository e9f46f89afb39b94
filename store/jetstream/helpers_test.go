package jetstream_test

import (
	"testing"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/storetest"
)

// The conformance suite's helpers, under the names these tests had
// when they lived beside it in package store.
var (
	rec           = storetest.Record
	meta          = storetest.Meta
	commit        = storetest.Commit
	wantInstance  = storetest.WantInstance
	wantInstances = storetest.WantInstances
	closeStore    = storetest.CloseAtEnd
)

// TestConformance runs the conformance suite against the JetStream store,
// each case on a server of its own.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openJetStream(t) })
}

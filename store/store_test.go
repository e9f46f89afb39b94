package store_test

import (
	"testing"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/storetest"
)

// TestConformance runs the conformance suite against the memory store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}

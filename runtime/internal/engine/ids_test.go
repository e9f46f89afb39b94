package engine

import (
	"strconv"
	"sync"
	"testing"
)

// TestIDs: message and turn IDs are their prefix and number, from the
// shared table below cachedIDs and formatted above it; the shared ones
// cost no allocation, and the table is built once under concurrent use.
func TestIDs(t *testing.T) {
	tests := []struct {
		of   func(uint64) string
		n    uint64
		want string
	}{
		{MessageID, 0, "msg-0"},
		{MessageID, 9, "msg-9"},
		{MessageID, 10, "msg-10"},
		{MessageID, cachedIDs - 1, "msg-4095"},
		{MessageID, cachedIDs, "msg-4096"},
		{MessageID, 1 << 40, "msg-1099511627776"},
		{TurnID, 1, "turn-1"},
		{TurnID, 4095, "turn-4095"},
		{TurnID, 123456, "turn-123456"},
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, tt := range tests {
				if got := tt.of(tt.n); got != tt.want {
					t.Errorf("ID of %d = %q, want %q", tt.n, got, tt.want)
				}
			}
		})
	}
	wg.Wait()
	for n := range uint64(cachedIDs) {
		if got, want := MessageID(n), "msg-"+strconv.FormatUint(n, 10); got != want {
			t.Fatalf("MessageID(%d) = %q, want %q", n, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = MessageID(4000); _ = TurnID(3) }); allocs != 0 {
		t.Errorf("a shared ID costs %v allocations, want 0", allocs)
	}
}

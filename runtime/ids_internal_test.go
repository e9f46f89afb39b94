package runtime

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
		{messageIDOf, 0, "msg-0"},
		{messageIDOf, 9, "msg-9"},
		{messageIDOf, 10, "msg-10"},
		{messageIDOf, cachedIDs - 1, "msg-4095"},
		{messageIDOf, cachedIDs, "msg-4096"},
		{messageIDOf, 1 << 40, "msg-1099511627776"},
		{turnIDOf, 1, "turn-1"},
		{turnIDOf, 4095, "turn-4095"},
		{turnIDOf, 123456, "turn-123456"},
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
		if got, want := messageIDOf(n), "msg-"+strconv.FormatUint(n, 10); got != want {
			t.Fatalf("messageIDOf(%d) = %q, want %q", n, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = messageIDOf(4000); _ = turnIDOf(3) }); allocs != 0 {
		t.Errorf("a shared ID costs %v allocations, want 0", allocs)
	}
}

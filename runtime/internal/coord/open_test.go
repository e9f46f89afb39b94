package coord

import (
	"context"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
)

// TestOpenWhileAPeerRestarts: the replicated buckets of the cluster mode
// open right after one of the cluster's servers restarts, when the
// JetStream leader still takes it for offline and refuses to place
// replicas for a moment (see store's TestJetStreamOpenWhileAPeerRestarts).
func TestOpenWhileAPeerRestarts(t *testing.T) {
	c := natstest.NewCluster(t, 3)
	nc, js := natstest.Connect(t, c.URL(0))
	ctx := context.Background()
	for i, tc := range []struct {
		name string
		open func() error
	}{
		{"leases", func() error {
			l, err := Open(ctx, js, "leases", "p1", time.Second, 3)
			if err == nil {
				_, err = l.Acquire(ctx, "a/k")
			}
			return err
		}},
		{"counters", func() error {
			cs, err := OpenCounters(ctx, nc, js, "budgets", 3, time.Hour)
			if err == nil {
				_, err = cs.Add(ctx, "a", "turns", 1)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Restart(1 + i%2)
			if err := tc.open(); err != nil {
				t.Fatalf("right after a server restarted: %v", err)
			}
		})
	}
}

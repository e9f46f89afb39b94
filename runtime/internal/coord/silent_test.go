package coord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
)

// TestClusterRequestsBoundedWhenServerSilent: once the server stops answering,
// every request of leases, counters and the wait-for graph returns within
// its bound, as unavailable, even under a caller's ctx whose deadline is
// an hour away (the JetStream client bounds a request only when the ctx
// has none).
func TestClusterRequestsBoundedWhenServerSilent(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 500 * time.Millisecond
	srv := natstest.Server(t)
	p := natstest.NewProxy(t, srv.ClientURL())
	nc, js := natstest.Connect(t, p.URL())
	ctx := context.Background()
	leases, err := Open(ctx, js, "leases", "p1", 10*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	counters, err := OpenCounters(ctx, nc, js, "budgets", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waits, err := OpenWaits(ctx, nc, js, "waits")
	if err != nil {
		t.Fatal(err)
	}
	held, err := leases.Acquire(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	held2, err := leases.Acquire(ctx, "held2")
	if err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	for _, tc := range []struct {
		name string
		call func(context.Context) error
	}{
		{"acquire", func(ctx context.Context) error { _, err := leases.Acquire(ctx, "other"); return err }},
		{"owner", func(ctx context.Context) error { _, err := leases.Owner(ctx, "held"); return err }},
		{"renew", held.Renew},
		{"release", held2.Release},
		{"add to a counter", func(ctx context.Context) error { _, err := counters.Add(ctx, "root", "turns", 1); return err }},
		{"read a counter", func(ctx context.Context) error { _, err := counters.Get(ctx, "root", "turns"); return err }},
		{"forget counters", func(ctx context.Context) error { return counters.Forget(ctx, "root") }},
		{"add a wait", func(ctx context.Context) error { _, err := waits.Add(ctx, "a/1", "b/1", time.Minute); return err }},
		{"path of waits", func(ctx context.Context) error { _, err := waits.Path(ctx, "a/1", "b/1"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx) }()
			select {
			case err = <-done:
			case <-time.After(requestTimeout + 10*time.Second):
				t.Fatalf("no return within %s of a silent server", requestTimeout+10*time.Second)
			}
			if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want one matching store.ErrUnavailable, not the caller's deadline", err)
			}
		})
	}
}

package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ganglion-dev/ganglion/internal/natstest"
)

// jetStream starts a JetStream server on loopback for the test and
// returns a client of it for each of n processes.
func jetStream(t *testing.T, n int) []jetstream.JetStream {
	t.Helper()
	s := natstest.Server(t)
	var out []jetstream.JetStream
	for range n {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, js)
	}
	return out
}

func openLeases(t *testing.T, js jetstream.JetStream, owner string) *Leases {
	t.Helper()
	l, err := Open(context.Background(), js, "leases", owner, time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLeaseIsExclusive: of two processes, one holds a lease at a time; a
// release lets the other take it at once.
func TestLeaseIsExclusive(t *testing.T) {
	ctx := context.Background()
	js := jetStream(t, 2)
	a, b := openLeases(t, js[0], "proc-a"), openLeases(t, js[1], "proc-b")
	la, err := a.Acquire(ctx, "assistant/k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Acquire(ctx, "assistant/k")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "proc-a") {
		t.Fatalf("a second owner's Acquire: %v; want ErrHeld naming proc-a", err)
	}
	if _, err := b.Acquire(ctx, "assistant/other"); err != nil {
		t.Errorf("another name: %v", err)
	}
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := b.Acquire(ctx, "assistant/k"); err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if err := la.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Errorf("renewing a released lease: %v; want ErrLost", err)
	}
}

// TestLeaseExpires: a lease its owner stops renewing expires after its
// TTL, another process takes it, and the old owner's renewal and release
// fail with ErrLost without touching the new owner's lease.
func TestLeaseExpires(t *testing.T) {
	ctx := context.Background()
	js := jetStream(t, 2)
	a, b := openLeases(t, js[0], "proc-a"), openLeases(t, js[1], "proc-b")
	la, err := a.Acquire(ctx, "assistant/k")
	if err != nil {
		t.Fatal(err)
	}
	// Renewed, it outlives its TTL.
	for range 3 {
		time.Sleep(a.TTL() / 2)
		if err := la.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	if _, err := b.Acquire(ctx, "assistant/k"); !errors.Is(err, ErrHeld) {
		t.Fatalf("while renewed: %v; want ErrHeld", err)
	}
	// Not renewed, it expires and b takes it.
	var lb *Lease
	deadline := time.Now().Add(10 * time.Second)
	for lb == nil {
		if lb, err = b.Acquire(ctx, "assistant/k"); err != nil && !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := la.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("the old owner's Renew: %v; want ErrLost", err)
	}
	if err := la.Release(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("the old owner's Release: %v; want ErrLost", err)
	}
	if err := lb.Renew(ctx); err != nil {
		t.Fatalf("the new owner's lease after the old one's attempts: %v", err)
	}
}

// TestLeaseRace: of many processes acquiring one name at once, exactly one
// gets it.
func TestLeaseRace(t *testing.T) {
	ctx := context.Background()
	js := jetStream(t, 8)
	var (
		mu   sync.Mutex
		won  []string
		wg   sync.WaitGroup
		errs []error
	)
	for i, j := range js {
		l := openLeases(t, j, "proc-"+string(rune('a'+i)))
		wg.Go(func() {
			_, err := l.Acquire(ctx, "assistant/k")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, l.owner)
			case !errors.Is(err, ErrHeld):
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 || len(errs) > 0 {
		t.Fatalf("winners %v, errors %v; want exactly one winner", won, errs)
	}
}

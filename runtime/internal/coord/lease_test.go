package coord

import (
	"context"
	"errors"
	"slices"
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
	_, js := connect(t, n)
	return js
}

// connect is jetStream with the clients' connections.
func connect(t *testing.T, n int) ([]*nats.Conn, []jetstream.JetStream) {
	t.Helper()
	s := natstest.Server(t)
	var ncs []*nats.Conn
	var out []jetstream.JetStream
	for range n {
		nc, js := natstest.Connect(t, s.ClientURL())
		ncs, out = append(ncs, nc), append(out, js)
	}
	return ncs, out
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

// TestWatchHoldersAndOwner: over a bucket where each process holds a
// lease on its own name, WatchHolders follows the processes alive; one
// that releases, or stops renewing, drops out. Owner names a lease's
// holder, "" for none.
func TestWatchHoldersAndOwner(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js := jetStream(t, 3)
	var leases []*Leases
	var held []*Lease
	for i, owner := range []string{"proc-a", "proc-b", "proc-c"} {
		l := openLeases(t, js[i], owner)
		le, err := l.Acquire(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		leases, held = append(leases, l), append(held, le)
	}
	seen := make(chan []string, 100)
	if err := leases[0].WatchHolders(ctx, func(h []string) { seen <- h }); err != nil {
		t.Fatal(err)
	}
	await := func(want ...string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case got := <-seen:
				if slices.Equal(got, want) {
					return
				}
			case <-timeout:
				t.Fatalf("holders never became %v", want)
			}
		}
	}
	await("proc-a", "proc-b", "proc-c")
	if owner, err := leases[2].Owner(ctx, "proc-a"); err != nil || owner != "proc-a" {
		t.Errorf("Owner(proc-a) = %q, %v", owner, err)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	await("proc-a", "proc-c")
	if owner, err := leases[2].Owner(ctx, "proc-b"); err != nil || owner != "" {
		t.Errorf("Owner of a released lease = %q, %v; want none", owner, err)
	}
	// proc-c stops renewing: gone within its TTL (1 s), while proc-a renews.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				held[0].Renew(ctx)
			}
		}
	}()
	await("proc-a")
}

// TestLeaseRaceAfterRelease: on a replicated bucket, owners racing for a
// lease just released all get it or ErrHeld. The key is deleted then, and
// the second write of a deleted key fails with the replicated stream's
// own code (10164, not 10071), which the client does not take for "the
// key exists": it reached the runtime as "take its lease: wrong last
// sequence", answered 500, in the chaos soak.
func TestLeaseRaceAfterRelease(t *testing.T) {
	ctx := context.Background()
	url := natstest.Cluster(t, 3)
	var all []*Leases
	for i := range 6 {
		_, js := natstest.Connect(t, url)
		l, err := Open(ctx, js, "leases", "proc-"+string(rune('a'+i)), 5*time.Second, 3)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, l)
	}
	for round := range 10 {
		first, err := all[0].Acquire(ctx, "assistant/k")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := first.Release(ctx); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
		var (
			mu   sync.Mutex
			won  []*Lease
			errs []error
			wg   sync.WaitGroup
		)
		for _, l := range all[1:] {
			wg.Go(func() {
				le, err := l.Acquire(ctx, "assistant/k")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, le)
				case !errors.Is(err, ErrHeld):
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		if len(won) > 1 || len(errs) > 0 {
			t.Fatalf("round %d: %d winners, errors %v; want at most one winner, and ErrHeld for the others", round, len(won), errs)
		}
		for _, le := range won {
			// Cleanup for the next round. Under load (1 full CI run in 5),
			// the winner's release has found its lease lost: the key is
			// gone either way.
			if err := le.Release(ctx); err != nil && !errors.Is(err, ErrLost) {
				t.Fatalf("round %d: release: %v", round, err)
			}
		}
	}
}

// unansweredCreate is a bucket whose first create is applied but gets no
// answer, as when a stream's leader changes under it; the creates after
// it reach the bucket, and then fail with then instead of the bucket's
// error, if set.
type unansweredCreate struct {
	jetstream.KeyValue
	creates int
	then    error
}

func (u *unansweredCreate) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	u.creates++
	rev, err := u.KeyValue.Create(ctx, key, value, opts...)
	switch {
	case u.creates == 1 && err == nil:
		return 0, jetstream.ErrNoStreamResponse
	case u.creates > 1 && err != nil && u.then != nil:
		return 0, u.then
	}
	return rev, err
}

// TestAcquireWhoseCreateLandedUnanswered: a create that was applied but
// got no answer is tried again, and the second finds the key written,
// by this owner: the lease is taken, with the revision the key has, so
// that it renews and releases. A replicated bucket says "wrong last
// sequence" (10164) where a single server says "key exists": the chaos
// soak's lease race saw the first taken for another owner's, which left
// the key held by nobody's lease until it expired.
func TestAcquireWhoseCreateLandedUnanswered(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	for _, tc := range []struct {
		name string
		then error
	}{
		{"key exists", nil},
		{"wrong last sequence", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence: 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(ctx, js, "leases_"+strings.ReplaceAll(tc.name, " ", "_"), "proc-a", 5*time.Second, 1)
			if err != nil {
				t.Fatal(err)
			}
			l.kv = &unansweredCreate{KeyValue: l.kv, then: tc.then}
			le, err := l.Acquire(ctx, "assistant/k")
			if err != nil {
				t.Fatalf("Acquire = %v; want the lease, whose create landed", err)
			}
			if err := le.Renew(ctx); err != nil {
				t.Fatalf("Renew = %v", err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatalf("Release = %v", err)
			}
			if owner, err := l.Owner(ctx, "assistant/k"); owner != "" || err != nil {
				t.Fatalf("Owner after the release = %q, %v; want none", owner, err)
			}
		})
	}
}

// TestLeaseBucketReadsFromTheLeader: a replicated lease bucket is read
// from its stream's leader, not by direct gets that a replica behind it
// answers (TestLeaseRaceAfterRelease once found a lease released in the
// round before still held, "held by another owner (proc-c)", read from
// such a replica). Another process opening the bucket leaves it so; a
// bucket of one replica has only one server to ask.
func TestLeaseBucketReadsFromTheLeader(t *testing.T) {
	ctx := context.Background()
	url := natstest.Cluster(t, 3)
	allowDirect := func(js jetstream.JetStream, stream string) bool {
		t.Helper()
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.AllowDirect
	}
	_, js := natstest.Connect(t, url)
	for _, owner := range []string{"proc-a", "proc-b"} {
		l, err := Open(ctx, js, "replicated", owner, time.Second, 3)
		if err != nil {
			t.Fatal(err)
		}
		if allowDirect(js, "KV_replicated") {
			t.Fatalf("after %s opened it, the replicated bucket's reads are direct gets", owner)
		}
		if _, err := l.Acquire(ctx, owner+"-lease"); err != nil {
			t.Fatal(err)
		}
		if got, err := l.Owner(ctx, owner+"-lease"); err != nil || got != owner {
			t.Fatalf("owner of %s-lease: %q, %v", owner, got, err)
		}
	}
	if _, err := Open(ctx, js, "single", "proc-a", time.Second, 1); err != nil {
		t.Fatal(err)
	}
	if !allowDirect(js, "KV_single") {
		t.Error("a bucket of one replica lost its direct gets")
	}
}

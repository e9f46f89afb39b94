package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
	jsstore "github.com/ganglion-dev/ganglion/store/jetstream"
)

// lostAnswers is a store whose commits, while lose is set, are stored
// and then reported as unanswered: their outcome unknown.
type lostAnswers struct {
	store.Store
	lose atomic.Bool
}

func (s *lostAnswers) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if err := s.Store.Commit(ctx, agent, key, b); err != nil || !s.lose.Load() {
		return err
	}
	return fmt.Errorf("store: commit agent %q instance %q: the server did not answer; the batch may or may not be stored: %w: %w", agent, key, store.ErrOutcomeUnknown, store.ErrUnavailable)
}

// TestClusterUnknownCommitTakesNewFence: after a commit whose answer was lost,
// the owner keeps the instance's lease, and before the next turn takes a
// new fence (so that the batch, were it still in flight, would be
// refused) and reads the instance again; meanwhile no write goes out
// under the old fence.
func TestClusterUnknownCommitTakesNewFence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := natstest.Server(t).ClientURL()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(fmt.Sprintf(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\ncluster: {url: %q, lease_ttl: 10s}\n", url)))
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := natstest.Connect(t, url)
	js, err := jsstore.Open(ctx, nc, "unknown")
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	st := &lostAnswers{Store: js}
	np := openedNode(t)
	r, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithModel(textModel(t)), runtime.WithStore(st), runtime.WithSecretKey([]byte("0123456789abcdef0123456789abcdef")), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := *np
	if _, err := r.Send(ctx, "a", "k", runtime.UserMessage("one")); err != nil {
		t.Fatal(err)
	}
	inst := n.cached(t, "a", "k")
	lease, old := ownOf(inst).lease, n.fenceOf("a", "k")

	st.lose.Store(true)
	if _, err := r.Send(ctx, "a", "k", runtime.UserMessage("two")); !errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("the turn whose commit got no answer: %v, want an error matching store.ErrOutcomeUnknown", err)
	}
	st.lose.Store(false)
	if f := n.fenceOf("a", "k"); f != unknownFence {
		t.Fatalf("fence after the lost answer = %d, want unknownFence: the old one would let a late batch land", f)
	}
	if unpin, ok := n.pin("a", "k"); ok {
		unpin()
		t.Fatal("pin is ok while the instance's fence must be taken again")
	}

	if _, err := r.Send(ctx, "a", "k", runtime.UserMessage("three")); err != nil {
		t.Fatalf("the next turn: %v", err)
	}
	if ownOf(inst).lease != lease || !lease.Held() {
		t.Fatal("the lease was given up and taken again; want it kept")
	}
	f := n.fenceOf("a", "k")
	if f == old || f == unknownFence || f == lostFence || f == 0 {
		t.Fatalf("fence after the next turn = %d (old %d), want a new one", f, old)
	}
	// A batch of the unanswered commit landing now is refused.
	if err := js.Commit(ctx, "a", "k", store.Batch{State: map[string][]byte{"late": []byte("1")}, Fence: old}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a commit under the old fence: %v, want store.ErrFenced", err)
	}
	msgs, err := r.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if got := strings.Join(users, ","); got != "one,two,three" {
		t.Fatalf("user messages: %s, want one,two,three (the unanswered commit was stored, and read again once)", got)
	}
}

// TestClusterLostLeaseLoggedOnce: a lease found lost at a renewal leaves the
// leases held, so that it is not renewed, and reported, every round.
func TestClusterLostLeaseLoggedOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := natstest.Server(t).ClientURL()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(fmt.Sprintf(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\ncluster: {url: %q, lease_ttl: 1s}\n", url)))
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	np := openedNode(t)
	r, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithModel(textModel(t)), runtime.WithSecretKey([]byte("0123456789abcdef0123456789abcdef")), runtime.WithoutExpiryTimer(),
		runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := *np
	if _, err := r.Send(ctx, "a", "k", runtime.UserMessage("one")); err != nil {
		t.Fatal(err)
	}
	inst := n.cached(t, "a", "k")
	ownOf(inst).used.Store(time.Now().Add(time.Hour).UnixNano()) // not idle: renewed, not given up
	// Another writer of the lease's key: its next renewal finds it lost.
	_, js := natstest.Connect(t, url)
	kv, err := js.KeyValue(ctx, "ganglion_leases")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "lease."+base64.RawURLEncoding.EncodeToString([]byte("a/k")), []byte("another")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ownOf(inst).lease.Held() {
		if time.Now().After(deadline) {
			t.Fatal("the renewals did not find the lease lost within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // six more rounds
	if n := strings.Count(logs.String(), "a lease expired before it was renewed"); n != 1 {
		t.Fatalf("the lost lease was reported %d times, want once:\n%s", n, logs.String())
	}
	n.mu.Lock()
	_, held := n.held[inst]
	n.mu.Unlock()
	if held {
		t.Fatal("the lost lease is still among those held")
	}
}

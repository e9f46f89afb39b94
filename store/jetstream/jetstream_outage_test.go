package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/jetstream"
)

// TestJetStreamServerSilent: once the server stops answering (its replies
// are lost on the way back), every call of the JetStream store returns
// within its request timeout: a commit whose answer never came matches
// ErrOutcomeUnknown and ErrUnavailable, and says that the batch may or
// may not be stored; a read or a fence matches ErrUnavailable alone. On
// one server, and on three keeping three replicas, whose reads ask the
// stream's leader too.
func TestJetStreamServerSilent(t *testing.T) {
	t.Run("one server", func(t *testing.T) { testServerSilent(t, natstest.Server(t).ClientURL(), 1) })
	t.Run("three replicas", func(t *testing.T) { testServerSilent(t, natstest.NewCluster(t, 3).URL(0), 3) })
}

func testServerSilent(t *testing.T, url string, replicas int) {
	const timeout = time.Second
	records := func(n int) store.Batch {
		var b store.Batch
		for i := range n {
			b.Put = append(b.Put, rec(uint64(i), "hello"))
		}
		b.Meta = &store.Meta{Turns: 1, NextSeq: uint64(n)}
		return b
	}
	for _, tc := range []struct {
		name    string
		call    func(ctx context.Context, s store.Store) error
		unknown bool
		want    string
	}{
		{"commit of one message", func(ctx context.Context, s store.Store) error {
			return s.Commit(ctx, "a", "k", store.Batch{Meta: &store.Meta{Turns: 1}})
		}, true, `store: commit agent "a" instance "k": `},
		{"commit of a batch", func(ctx context.Context, s store.Store) error {
			return s.Commit(ctx, "a", "k", records(3))
		}, true, `store: commit agent "a" instance "k": `},
		{"load", func(ctx context.Context, s store.Store) error {
			_, _, _, err := s.LoadInstance(ctx, "a", "k")
			return err
		}, false, `store: load agent "a" instance "k": `},
		{"load meta", func(ctx context.Context, s store.Store) error {
			_, _, err := s.LoadMeta(ctx, "a", "k")
			return err
		}, false, `store: load agent "a" instance "k" meta: `},
		{"fence", func(ctx context.Context, s store.Store) error {
			_, err := s.Fence(ctx, "a", "k")
			return err
		}, false, `store: take the fence of agent "a" instance "k": `},
		{"list pending", func(ctx context.Context, s store.Store) error {
			_, err := s.ListPending(ctx, "a", "k")
			return err
		}, false, `store: list pending items: `},
		{"instances", func(ctx context.Context, s store.Store) error {
			_, err := s.Instances(ctx, "a")
			return err
		}, false, `store: instances of agent "a": `},
		{"ping", func(ctx context.Context, s store.Store) error {
			return s.(interface{ Ping(context.Context) error }).Ping(ctx)
		}, false, `store: ping bucket "silent": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := natstest.NewProxy(t, url)
			nc, _ := natstest.Connect(t, p.URL())
			s, err := jetstream.Open(context.Background(), nc, "silent", jetstream.WithReplicas(replicas), jetstream.WithRequestTimeout(timeout))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.name == "ping" {
				if err := tc.call(context.Background(), s); err != nil {
					t.Fatalf("ping of a server that answers: %v", err)
				}
			}
			p.Freeze()
			done := make(chan error, 1)
			go func() { done <- tc.call(context.Background(), s) }()
			select {
			case err = <-done:
			case <-time.After(timeout + 10*time.Second):
				t.Fatalf("no return %s after the server went silent", timeout+10*time.Second)
			}
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("got %v, want an error matching ErrUnavailable", err)
			}
			if got := errors.Is(err, store.ErrOutcomeUnknown); got != tc.unknown {
				t.Fatalf("errors.Is(%v, ErrOutcomeUnknown) = %v, want %v", err, got, tc.unknown)
			}
			says := "the server did not answer within 1s"
			if tc.unknown {
				says += "; the batch may or may not be stored"
			}
			if !strings.HasPrefix(err.Error(), tc.want) || !strings.Contains(err.Error(), says) {
				t.Fatalf("got error\n%s\nwant it to begin with\n%s\nand say\n%s", err, tc.want, says)
			}
			if tc.unknown && strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("the error of a commit of unknown outcome says nothing was written: %v", err)
			}
		})
	}
}

// TestJetStreamCommitAcrossReconnect: when the connection's server dies
// with a commit in flight and the client reconnects to another, the
// commit's answer is lost with the old connection: the commit ends, its
// outcome unknown, about a second after the reconnection, not when its
// request timeout (here a minute) runs out. The chaos soak saw turns wait
// the whole default timeout (10 s) after each NATS server's death.
func TestJetStreamCommitAcrossReconnect(t *testing.T) {
	c := natstest.NewCluster(t, 3)
	p := natstest.NewProxy(t, c.URL(0))
	// Through the proxy; the client learns the other servers from it, and
	// reconnects to one of them.
	nc, _ := natstest.Connect(t, p.URL())
	s, err := jetstream.Open(context.Background(), nc, "moving", jetstream.WithReplicas(3), jetstream.WithRequestTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(1, "before")}, Meta: meta(1, 2)})
	p.Freeze() // the next commit's answer is lost
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- s.Commit(context.Background(), "a", "k", store.Batch{Put: []store.Record{rec(2, "lost answer")}, Meta: meta(2, 3)})
	}()
	time.Sleep(200 * time.Millisecond) // the commit is in flight
	p.Cut()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the commit did not end within 30 s of its connection's reconnection")
	}
	t.Logf("the commit ended %s after it began: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, store.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "the connection to the server was lost") {
		t.Fatalf("commit across a reconnection = %v; want one matching store.ErrOutcomeUnknown, saying the connection was lost", err)
	}
	// The store serves on the new connection.
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(3, "after")}, Meta: meta(3, 4)})
}

package jetstream_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/jetstream"
)

// TestJetStreamListingsSeeCommitsOnReplicas reads lists of keys that had
// no match before a commit through another server: the tasks and the
// pending items of a fresh instance, its secrets. A replica behind its
// leader has no key to show for them, and must not be taken at its word.
func TestJetStreamListingsSeeCommitsOnReplicas(t *testing.T) {
	stores := clusterStores(t, "lists")
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			agent := fmt.Sprintf("a%d", g)
			for i := range 150 {
				w, r := stores[(i+g)%3], stores[(i+g+1)%3]
				key := fmt.Sprintf("k%d", i)
				for _, c := range []struct {
					what  string
					write func() error
					read  func() (int, error)
				}{
					{"tasks", func() error {
						return w.CommitTasks(ctx, []store.TaskRecord{{ID: fmt.Sprintf("t%d-%d", g, i), Agent: agent, Instance: key, Data: []byte(`{}`)}}, nil)
					}, func() (int, error) { ts, err := r.ListTasks(ctx, agent, key); return len(ts), err }},
					{"pending items", func() error {
						return w.Commit(ctx, agent, key, store.Batch{Pending: []store.PendingRecord{{ID: fmt.Sprintf("p%d-%d", g, i), Agent: agent, Instance: key, Data: []byte(`{}`)}}})
					}, func() (int, error) { ps, err := r.ListPending(ctx, agent, key); return len(ps), err }},
					{"secrets", func() error { return w.PutSecret(ctx, agent, key, "K", []byte("sealed")) },
						func() (int, error) { ns, err := r.ListSecrets(ctx, agent, key); return len(ns), err }},
				} {
					if err := c.write(); err != nil {
						t.Error(err)
						return
					}
					if n, err := c.read(); err != nil || n != 1 {
						t.Errorf("%s/%s: %s listed after their commit through another server: %d, %v; want 1", agent, key, c.what, n, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestJetStreamReadsMakeNoConsumer: the reads a turn makes (loading an
// instance, its secrets, its pending items and tasks) are direct gets.
// A consumer is made through the cluster's meta leader, and many at once
// (an instance load each) made its creation time out.
func TestJetStreamReadsMakeNoConsumer(t *testing.T) {
	srv := natsServer(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, "reads")
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "hi")}, Meta: meta(1, 1),
		Pending: []store.PendingRecord{{ID: "p1", Agent: "a", Instance: "k", Data: []byte(`{}`)}}})
	if err := s.PutSecret(ctx, "a", "k", "K", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitTasks(ctx, []store.TaskRecord{{ID: "t1", Agent: "a", Instance: "k", Data: []byte(`{}`)}}, nil); err != nil {
		t.Fatal(err)
	}
	// Every consumer request of the JetStream API, seen on the server.
	watch, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	// A channel subscription is fed in order by the connection's reader,
	// so after a flush it holds every request the server had before.
	seen := make(chan *nats.Msg, 1024)
	sub, err := watch.ChanSubscribe("$JS.API.CONSUMER.>", seen)
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func() (int, error)
	}{
		{"LoadInstance", func() (int, error) { _, rs, _, err := s.LoadInstance(ctx, "a", "k"); return len(rs), err }},
		{"ListSecrets", func() (int, error) { ns, err := s.ListSecrets(ctx, "a", "k"); return len(ns), err }},
		{"ListPending", func() (int, error) { ps, err := s.ListPending(ctx, "a", "k"); return len(ps), err }},
		{"ListTasks", func() (int, error) { ts, err := s.ListTasks(ctx, "a", "k"); return len(ts), err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(seen)
			if n, err := c.read(); err != nil || n != 1 {
				t.Fatalf("%s = %d, %v; want 1", c.name, n, err)
			}
			if err := watch.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := len(seen) - before; n != 0 {
				t.Errorf("%s made %d consumer requests; want none", c.name, n)
			}
		})
	}
	// The check sees consumers: a listing of instances still reads
	// through a watch.
	if _, err := s.Instances(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	if sub.Unsubscribe(); len(seen) == 0 {
		t.Error("Instances made no consumer request: the check sees none")
	}
}

// TestJetStreamManySecrets lists more secrets than one direct get returns
// (1,024): the rest come through a watch.
func TestJetStreamManySecrets(t *testing.T) {
	s := openJetStream(t)
	ctx := context.Background()
	var want []string
	for i := range 1030 {
		name := fmt.Sprintf("S%04d", i)
		if err := s.PutSecret(ctx, "a", "k", name, []byte("sealed")); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	got, err := s.ListSecrets(ctx, "a", "k")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ListSecrets = %d names (first %q), %v; want %d", len(got), got[:min(len(got), 3)], err, len(want))
	}
}

// BenchmarkJetStreamReads reads what each load of an instance reads: its
// two secrets' names (or, for most instances, none), and the instance
// (meta and 20 records). The bucket's last write is a record of 500 KB
// of another instance: a read must not pay for what it does not read (one
// that fetched the leader's last message did, 5 ms a read). On one
// server, and on a bucket of three replicas through a server that may
// not lead it.
func BenchmarkJetStreamReads(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name     string
		replicas int
	}{{"single", 1}, {"replicated", 3}} {
		url := func(b *testing.B) string {
			if bc.replicas > 1 {
				return strings.Split(natstest.Cluster(b, bc.replicas), ",")[1]
			}
			return natsServer(b).ClientURL()
		}
		open := func(b *testing.B) store.Store {
			nc, err := nats.Connect(url(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(nc.Close)
			s, err := jetstream.Open(ctx, nc, "bench", jetstream.WithReplicas(bc.replicas))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			for _, name := range []string{"A", "B"} {
				if err := s.PutSecret(ctx, "a", "k", name, []byte("sealed")); err != nil {
					b.Fatal(err)
				}
			}
			var recs []store.Record
			for i := range 20 {
				recs = append(recs, rec(uint64(i), fmt.Sprintf("message %d of the conversation", i)))
			}
			commit(b, s, "a", "k", store.Batch{Put: recs, Meta: meta(20, 20)})
			commit(b, s, "a", "other", store.Batch{Put: []store.Record{rec(0, strings.Repeat("x", 500<<10))}})
			return s
		}
		for _, read := range []struct {
			name string
			want int // names or records read
			read func(s store.Store) (int, error)
		}{
			{"ListSecrets", 2, func(s store.Store) (int, error) { ns, err := s.ListSecrets(ctx, "a", "k"); return len(ns), err }},
			{"ListSecretsNone", 0, func(s store.Store) (int, error) { ns, err := s.ListSecrets(ctx, "a", "none"); return len(ns), err }},
			{"LoadInstance", 20, func(s store.Store) (int, error) { _, rs, _, err := s.LoadInstance(ctx, "a", "k"); return len(rs), err }},
		} {
			b.Run(read.name+"/"+bc.name, func(b *testing.B) {
				s := open(b)
				b.ReportAllocs()
				for b.Loop() {
					if n, err := read.read(s); err != nil || n != read.want {
						b.Fatalf("%s = %d, %v; want %d", read.name, n, err, read.want)
					}
				}
			})
		}
	}
}

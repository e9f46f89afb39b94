package jetstream_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/jetstream"
	"github.com/ganglion-dev/ganglion/store/storetest"
)

// writerEnv makes the test binary a process that commits to the JetStream
// store at the server URL it names until it is killed (jetStreamWriter).
const writerEnv = "GANGLION_TEST_JETSTREAM_WRITER"

// jetStreamWriter commits turns of five records and the meta to instance
// a/k of bucket "crash", and prints each committed turn's number.
func jetStreamWriter(url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := jetstream.Open(context.Background(), nc, "crash")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	m, _, err := s.LoadMeta(ctx, "a", "k")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for turn := m.Turns; ; turn++ {
		seq := uint64(turn) * 5
		var b store.Batch
		for i := range uint64(5) {
			b.Put = append(b.Put, rec(seq+i, "turn "+strconv.FormatInt(turn, 10)))
		}
		b.Meta = &store.Meta{Turns: turn + 1, NextSeq: seq + 5}
		if err := s.Commit(ctx, "a", "k", b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(turn + 1)
	}
}

// TestMain makes the test binary a JetStream writer when writerEnv is set
// (TestJetStreamCommitSurvivesKill).
func TestMain(m *testing.M) {
	if url := os.Getenv(writerEnv); url != "" {
		jetStreamWriter(url)
		return
	}
	os.Exit(m.Run())
}

// natsServer is natstest.Server.
func natsServer(t testing.TB) *natsserver.Server { return natstest.Server(t) }

// openJetStream opens a store on a server of its own; the connection
// closes with the test.
func openJetStream(t testing.TB) store.Store {
	t.Helper()
	nc, err := nats.Connect(natsServer(t).ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := jetstream.Open(context.Background(), nc, "ganglion")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clusterStores opens bucket with three replicas on a cluster of three,
// once through each server; the connections close with the test.
func clusterStores(t *testing.T, bucket string) []store.Store {
	t.Helper()
	var stores []store.Store
	for _, u := range strings.Split(natstest.Cluster(t, 3), ",") {
		nc, err := nats.Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := jetstream.Open(context.Background(), nc, bucket, jetstream.WithReplicas(3))
		if err != nil {
			t.Fatal(err)
		}
		closeStore(t, s)
		stores = append(stores, s)
	}
	return stores
}

// TestJetStreamSharedBetweenConnections: two stores on one bucket, as two
// processes of a cluster would open it, see each other's commits.
func TestJetStreamSharedBetweenConnections(t *testing.T) {
	srv := natsServer(t)
	ctx := context.Background()
	open := func() store.Store {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := jetstream.Open(ctx, nc, "shared")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	commit(t, a, "agent", "k", store.Batch{Put: []store.Record{rec(0, "from a")}, Meta: meta(1, 1),
		Pending: []store.PendingRecord{{ID: "p1", Agent: "agent", Instance: "k", Data: []byte(`{"q":1}`)}}})
	wantInstance(t, b, "agent", "k", meta(1, 1), []store.Record{rec(0, "from a")})
	if r, found, err := b.GetPending(ctx, "p1"); err != nil || !found || r.Instance != "k" {
		t.Fatalf("GetPending from the other store: %+v, %v, %v", r, found, err)
	}
}

// TestJetStreamLimits: a commit past the server's batch size, or with a
// value past its payload limit, fails with an error that says so, and
// writes nothing.
func TestJetStreamLimits(t *testing.T) {
	ctx := context.Background()
	s := openJetStream(t)
	defer s.Close()
	tests := []struct {
		name  string
		batch store.Batch
		want  string
	}{
		{"batch of 1001", store.Batch{Put: func() []store.Record {
			var rs []store.Record
			for i := range 1001 {
				rs = append(rs, rec(uint64(i), "x"))
			}
			return rs
		}(), Meta: meta(1, 1001)}, "atomic publish batch is too large"},
		{"value of 2 MB", store.Batch{Put: []store.Record{rec(0, "small"), rec(1, strings.Repeat("x", 2<<20))}, Meta: meta(1, 2)},
			"more than the NATS server takes in one message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Commit(ctx, "a", tt.name, tt.batch)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("Commit = %v, want an error saying %q and nothing written", err, tt.want)
			}
			wantInstance(t, s, "a", tt.name, nil, nil)
		})
	}
}

// TestJetStreamLeavesNoGoroutines: a store's reads and writes leave no
// goroutine once it, its connection and its server are closed.
func TestJetStreamLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	s, err := jetstream.Open(context.Background(), nc, "ganglion")
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(0, "x")}, Meta: meta(1, 1)})
	wantInstance(t, s, "a", "k", meta(1, 1), []store.Record{rec(0, "x")})
	wantInstances(t, s, "a", "k")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestJetStreamLargeInstance: an instance of more keys than one isolated
// read returns (1,024) loads whole, through a watch.
func TestJetStreamLargeInstance(t *testing.T) {
	s := openJetStream(t)
	defer s.Close()
	var want []store.Record
	for part := range 3 {
		var b store.Batch
		for i := range 400 {
			r := rec(uint64(part*400+i), "x")
			b.Put = append(b.Put, r)
			want = append(want, r)
		}
		b.Meta = meta(int64(part+1), uint64((part+1)*400))
		commit(t, s, "a", "k", b)
	}
	wantInstance(t, s, "a", "k", meta(3, 1200), want)
}

// BenchmarkJetStreamCommit is a commit to the JetStream store on a server
// embedded in the test process (loopback, file storage, one replica):
// one message (the meta alone: a plain publish), and a step's commit
// (three records and the meta: an atomic batch); and an instance's load.
func BenchmarkJetStreamCommit(b *testing.B) {
	ctx := context.Background()
	// commits commits batches of n records and the meta to s.
	commits := func(b *testing.B, s store.Store, n int) {
		seq := uint64(0)
		for b.Loop() {
			var batch store.Batch
			for range n {
				batch.Put = append(batch.Put, rec(seq, "a message of a few words"))
				seq++
			}
			batch.Meta = meta(1, seq)
			if err := s.Commit(ctx, "a", "k", batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("one-message", func(b *testing.B) { s := openJetStream(b); defer s.Close(); commits(b, s, 0) })
	b.Run("step", func(b *testing.B) { s := openJetStream(b); defer s.Close(); commits(b, s, 3) })
	b.Run("step-r3", func(b *testing.B) {
		// The step's commit on a cluster of three, three replicas.
		nc, err := nats.Connect(natstest.Cluster(b, 3))
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		s, err := jetstream.Open(ctx, nc, "ganglion", jetstream.WithReplicas(3))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		commits(b, s, 3)
	})
	b.Run("load-20", func(b *testing.B) {
		s := openJetStream(b)
		defer s.Close()
		var batch store.Batch
		for i := range 20 {
			batch.Put = append(batch.Put, rec(uint64(i), "a message of a few words"))
		}
		batch.Meta = meta(5, 20)
		if err := s.Commit(ctx, "a", "k", batch); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, records, _, err := s.LoadInstance(ctx, "a", "k"); err != nil || len(records) != 20 {
				b.Fatal(len(records), err)
			}
		}
	})
}

// TestJetStreamReplicated runs the conformance suite on a cluster of three
// servers, each bucket kept in three replicas: there a batch is staged in
// memory and made durable by the cluster's consensus, not on one disk.
func TestJetStreamReplicated(t *testing.T) {
	urls := natstest.Cluster(t, 3)
	cases := 0 // each case opens a bucket of its own
	storetest.Run(t, func(t *testing.T) store.Store {
		nc, err := nats.Connect(urls)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s, err := jetstream.Open(context.Background(), nc, "case-"+strconv.Itoa(cases), jetstream.WithReplicas(3))
		if err != nil {
			t.Fatal(err)
		}
		cases++
		return s
	})
}

// TestJetStreamReadsSeeCommitsOnReplicas: on three replicas, a read or a
// listing right after a commit sees it, also through a connection to another server,
// while other writers keep the servers busy. Any replica answers a direct
// get, and a follower may not have applied the commit yet: a delegation's
// report turn read its task as it was before its last report, and the
// fan-out hung (BENCHMARKS.md, "Cluster mode"). The benchmark reproduced
// that every time; this test holds the store to the contract, but on a
// quiet machine it rarely catches a follower behind.
func TestJetStreamReadsSeeCommitsOnReplicas(t *testing.T) {
	stores := clusterStores(t, "fresh")
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			id := fmt.Sprintf("t%d", g)
			for i := range 100 {
				w, r := stores[(i+g)%3], stores[(i+g+1)%3]
				want := fmt.Sprintf(`{"v":%d}`, i)
				if err := w.CommitTasks(ctx, []store.TaskRecord{{ID: id, Agent: "a", Instance: "k", Data: []byte(want)}}, nil); err != nil {
					t.Error(err)
					return
				}
				got, found, err := r.GetTask(ctx, id)
				if err != nil || !found || string(got.Data) != want {
					t.Errorf("%s: read %d after its commit: %s, %v, %v; want %s", id, i, got.Data, found, err, want)
					return
				}
				agent, key := fmt.Sprintf("a%d", g), fmt.Sprintf("k%d", i)
				if err := w.Commit(ctx, agent, key, store.Batch{Meta: &store.Meta{NextSeq: uint64(i + 1)}}); err != nil {
					t.Error(err)
					return
				}
				meta, _, found, err := r.LoadInstance(ctx, agent, key)
				if err != nil || !found || meta.NextSeq != uint64(i+1) {
					t.Errorf("%s: load %d after its commit: %+v, %v, %v", id, i, meta, found, err)
					return
				}
				// Listings too. Instances reads through a watch, whose
				// consumer may be on a follower, and makes that consumer
				// through the cluster's meta leader: one in five
				// iterations, so as not to overload it. (The other
				// listings are direct gets, read at every iteration by
				// TestJetStreamListingsSeeCommitsOnReplicas.)
				if i%5 != 0 {
					continue
				}
				if keys, err := r.Instances(ctx, agent); err != nil || len(keys) != i+1 || !slices.Contains(keys, key) {
					t.Errorf("%s: instances after commit %d: %d of them, %q among them: %v, %v", id, i, len(keys), key, slices.Contains(keys, key), err)
					return
				}
				if err := w.PutSecret(ctx, agent, key, "K", []byte("sealed")); err != nil {
					t.Error(err)
					return
				}
				if names, err := r.ListSecrets(ctx, agent, key); err != nil || !slices.Equal(names, []string{"K"}) {
					t.Errorf("%s: secrets of %s after their put: %q, %v; want [K]", id, key, names, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

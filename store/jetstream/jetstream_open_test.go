package jetstream_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/jetstream"
)

// TestJetStreamOpenWhileAPeerRestarts: a replicated bucket opens right
// after one of the cluster's servers restarts. Until the restarted
// server's first statistics reach the JetStream leader, the leader
// refuses to place replicas ("no suitable peers for placement, peer
// offline"): every try failed so before opening tried again, and so did
// CI's TestJetStreamReplicated, 1 full run in 3, when a route came back
// in the middle of it.
func TestJetStreamOpenWhileAPeerRestarts(t *testing.T) {
	c := natstest.NewCluster(t, 3)
	nc, err := nats.Connect(c.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	for i := range 4 {
		c.Restart(1 + i%2)
		bucket := "restart-" + strconv.Itoa(i)
		s, err := jetstream.Open(ctx, nc, bucket, jetstream.WithReplicas(3))
		if err != nil {
			t.Fatalf("open %s right after s%d restarted: %v", bucket, 2+i%2, err)
		}
		commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(1, "kept")}, Meta: meta(1, 2)})
		_, records, found, err := s.LoadInstance(ctx, "a", "k")
		if err != nil || !found || len(records) != 1 || records[0].Message.Content != "kept" {
			t.Fatalf("%s: load after a commit = %v, %v, %v", bucket, records, found, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJetStreamOpenFailsAtOnce: a refusal that lasts is not tried again:
// more replicas than servers fails with the server's reason.
func TestJetStreamOpenFailsAtOnce(t *testing.T) {
	nc, err := nats.Connect(natstest.Cluster(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, err = jetstream.Open(context.Background(), nc, "five", jetstream.WithReplicas(5))
	if err == nil {
		t.Fatal("a bucket of 5 replicas opened on 3 servers")
	}
	if msg := err.Error(); !strings.Contains(msg, `store: open bucket "five"`) || strings.Contains(msg, "still so after") {
		t.Fatalf("error = %q; want the bucket's name and the server's reason, without tries again", msg)
	}
	t.Log(err)
}

// TestJetStreamOpenKeepsAtomicBatches: a process that opens a bucket other
// processes commit to leaves its stream taking atomic batches. Opening
// used to update the bucket's stream from the bucket's configuration,
// which cannot say "atomic batches", and only then set the flag again:
// meanwhile every other process's batch was refused ("atomic publish is
// disabled (error 10174)"), seen in the chaos soak as a process started.
func TestJetStreamOpenKeepsAtomicBatches(t *testing.T) {
	url := natstest.Server(t).ClientURL()
	nc, _ := natstest.Connect(t, url)
	ctx := context.Background()
	first, err := jetstream.Open(ctx, nc, "shared")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, js := natstest.Connect(t, url)
	done := make(chan struct{})
	opened := make(chan error, 1)
	go func() {
		defer close(done)
		for range 20 {
			nc2, _ := natstest.Connect(t, url)
			s, err := jetstream.Open(ctx, nc2, "shared")
			if err != nil {
				opened <- err
				return
			}
			s.Close()
		}
	}()
	for i := uint64(1); ; i++ {
		select {
		case <-done:
			select {
			case err := <-opened:
				t.Fatalf("open the bucket again: %v", err)
			default:
			}
			info, err := js.Stream(ctx, "KV_shared")
			if err != nil {
				t.Fatal(err)
			}
			if !info.CachedInfo().Config.AllowAtomicPublish {
				t.Fatal("the bucket's stream no longer takes atomic batches")
			}
			return
		default:
		}
		b := store.Batch{Put: []store.Record{rec(i, "m"), rec(i+1000000, "n")}, Meta: meta(1, i+1)}
		if err := first.Commit(ctx, "a", "k", b); err != nil {
			t.Fatalf("commit %d while another process opens the bucket: %v", i, err)
		}
	}
}

package runtime_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
	jsstore "github.com/ganglion-dev/ganglion/store/jetstream"
)

// jetStreamStore opens a store in bucket on the servers at urls, with
// options opts; its connection closes with the test.
func jetStreamStore(tb testing.TB, urls, bucket string, opts ...jsstore.Option) store.Store {
	tb.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	st, err := jsstore.Open(context.Background(), nc, bucket, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// TestRuntimeOnJetStreamStore: turns on the JetStream store are there for
// the next runtime on the same bucket, as on badger: the history, the
// meta's count and usage.
func TestRuntimeOnJetStreamStore(t *testing.T) {
	srv := natstest.Server(t)
	ctx := context.Background()
	rt := newBenchRuntime(t, runtime.WithStore(jetStreamStore(t, srv.ClientURL(), "ganglion")))
	for range 3 {
		res, err := rt.Send(ctx, "bench", "k", runtime.UserMessage("What is the answer?"))
		if err != nil || res.FinishReason != pipeline.FinishText || res.Response.Content != "The answer is 42." {
			t.Fatalf("turn: %+v, %v", res, err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	again := newBenchRuntime(t, runtime.WithStore(jetStreamStore(t, srv.ClientURL(), "ganglion")))
	msgs, err := again.History(ctx, "bench", "k")
	if err != nil || len(msgs) != 12 {
		t.Fatalf("the next runtime sees %d messages, %v; want 12", len(msgs), err)
	}
	if res, err := again.Send(ctx, "bench", "k", runtime.UserMessage("And again?")); err != nil || res.FinishReason != pipeline.FinishText {
		t.Fatalf("a turn on the reopened store: %+v, %v", res, err)
	}
	if msgs, _ := again.History(ctx, "bench", "k"); len(msgs) != 16 || msgs[12].Content != "And again?" {
		t.Fatalf("after one more turn: %d messages", len(msgs))
	}
}

// BenchmarkTurnJetStream is BenchmarkTurn/badger on the JetStream store,
// on servers embedded in the test process (loopback): what a turn costs
// when its commits go over NATS. r1: one server, one replica; r3: a
// cluster of three, three replicas.
func BenchmarkTurnJetStream(b *testing.B) {
	for _, bc := range []struct {
		name     string
		replicas int
	}{{"r1", 1}, {"r3", 3}} {
		b.Run(bc.name, func(b *testing.B) {
			urls := natstest.Server(b).ClientURL()
			if bc.replicas > 1 {
				urls = natstest.Cluster(b, bc.replicas)
			}
			rt := newBenchRuntime(b, runtime.WithStore(jetStreamStore(b, urls, "ganglion", jsstore.WithReplicas(bc.replicas))))
			ctx := context.Background()
			in := runtime.UserMessage("What is the answer?")
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := "i" + strconv.FormatInt(next.Add(1), 10)
				for pb.Next() {
					res, err := rt.Send(ctx, "bench", key, in)
					if err != nil || res.FinishReason != pipeline.FinishText {
						b.Fatalf("turn: %+v, %v", res, err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

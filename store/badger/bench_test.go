package badger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// turnsPerInstance is how many turns a benchmark commits to one instance
// before moving to the next, so instances stay a realistic size.
const turnsPerInstance = 1024

// benchTurn is what one agent turn commits: the user's message, the
// model's reply and the meta.
type benchTurn struct {
	records [2]store.Record
	meta    store.Meta
}

// t0 is the time of the benchmarks' messages.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func newBenchTurn() *benchTurn {
	var t benchTurn
	t.records[0].Message = &pipeline.Message{
		ID: "u", Role: pipeline.RoleUser, Content: "What is the weather in Paris tomorrow?",
		Source: pipeline.Source{Type: pipeline.SourceUser}, CreatedAt: t0,
	}
	t.records[1].Message = &pipeline.Message{
		ID: "a", Role: pipeline.RoleAssistant,
		Content: "Tomorrow in Paris: cloudy in the morning, sunny spells after noon, 14 to 19 °C, light westerly wind.",
		Source:  pipeline.Source{Type: pipeline.SourceModel}, CreatedAt: t0,
	}
	t.meta = store.Meta{CreatedAt: t0, UpdatedAt: t0}
	return &t
}

// batch returns the batch of turn n of an instance.
func (t *benchTurn) batch(n int) store.Batch {
	seq := uint64(n) * 2
	t.records[0].Seq, t.records[1].Seq = seq, seq+1
	t.meta.Turns, t.meta.NextSeq = int64(n+1), seq+2
	return store.Batch{Put: t.records[:], Meta: &t.meta}
}

// BenchmarkCommit measures committing one turn: two records and the meta.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	b.Run("memory", func(b *testing.B) {
		b.ReportAllocs()
		turn := newBenchTurn()
		var s store.Store
		key := ""
		for i := 0; b.Loop(); i++ {
			// A fresh store every 64 instances bounds the memory used.
			if i%(64*turnsPerInstance) == 0 {
				s = store.NewMemory()
			}
			if i%turnsPerInstance == 0 {
				key = fmt.Sprintf("k%d", i/turnsPerInstance)
			}
			if err := s.Commit(ctx, "bench", key, turn.batch(i%turnsPerInstance)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("badger", func(b *testing.B) {
		b.ReportAllocs()
		s, err := badger.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		turn := newBenchTurn()
		key := ""
		for i := 0; b.Loop(); i++ {
			if i%turnsPerInstance == 0 {
				key = fmt.Sprintf("k%d", i/turnsPerInstance)
			}
			if err := s.Commit(ctx, "bench", key, turn.batch(i%turnsPerInstance)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommitParallel measures turns committed from many goroutines,
// each to its own instances.
func BenchmarkCommitParallel(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, s store.Store) {
		b.ReportAllocs()
		var worker atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			w := worker.Add(1)
			turn := newBenchTurn()
			key := ""
			for i := 0; pb.Next(); i++ {
				if i%turnsPerInstance == 0 {
					key = fmt.Sprintf("w%d-k%d", w, i/turnsPerInstance)
				}
				if err := s.Commit(ctx, "bench", key, turn.batch(i%turnsPerInstance)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("memory", func(b *testing.B) {
		s := store.NewMemory()
		defer s.Close()
		run(b, s)
	})
	b.Run("badger", func(b *testing.B) {
		s, err := badger.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		run(b, s)
	})
}

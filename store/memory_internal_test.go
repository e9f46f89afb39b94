package store

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// TestMemInstanceChunks drives the chunked history of a memInstance with
// random puts and deletes and compares it with a plain map after each step.
func TestMemInstanceChunks(t *testing.T) {
	tests := []struct {
		name    string
		ops     int
		seqs    uint64 // seqs drawn from [0, seqs)
		appends int    // percent of puts that append above the last seq
		deletes int    // percent of operations that delete
	}{
		{"appends only", 1000, 1 << 62, 100, 0},
		{"inserts into a narrow range", 3000, 400, 0, 20},
		{"mixed", 5000, 2000, 50, 30},
		{"delete heavy", 3000, 300, 10, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.ops)))
			var in memInstance
			want := map[uint64]string{}
			next := uint64(0)
			for op := range tt.ops {
				switch {
				case rng.IntN(100) < tt.deletes:
					seq := rng.Uint64N(tt.seqs)
					if len(want) > 0 && rng.IntN(2) == 0 { // often delete one that exists
						for s := range want {
							seq = s
							break
						}
					}
					in.delete(seq)
					delete(want, seq)
				case rng.IntN(100) < tt.appends:
					next += 1 + rng.Uint64N(3)
					in.put(Record{Seq: next, Message: &pipeline.Message{}})
					want[next] = ""
				default:
					seq := rng.Uint64N(tt.seqs)
					id := string(rune('a' + op%26))
					r := Record{Seq: seq, Message: &pipeline.Message{ID: id}}
					in.put(r)
					want[seq] = id
					next = max(next, seq)
				}
				if op < 500 || op%50 == 0 || op == tt.ops-1 {
					checkChunks(t, &in, want, op)
				}
			}
		})
	}
}

func checkChunks(t *testing.T, in *memInstance, want map[uint64]string, op int) {
	t.Helper()
	if in.n != len(want) {
		t.Fatalf("op %d: n = %d, want %d", op, in.n, len(want))
	}
	for i, c := range in.chunks {
		if len(c) == 0 {
			t.Fatalf("op %d: chunk %d is empty", op, i)
		}
		if len(c) > chunkLen {
			t.Fatalf("op %d: chunk %d holds %d records", op, i, len(c))
		}
	}
	got := in.records()
	if len(got) != len(want) {
		t.Fatalf("op %d: %d records, want %d", op, len(got), len(want))
	}
	seqs := make([]uint64, 0, len(want))
	for s := range want {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for i, r := range got {
		if r.Seq != seqs[i] || r.Message.ID != want[r.Seq] {
			t.Fatalf("op %d: record %d = seq %d id %q, want seq %d id %q", op, i, r.Seq, r.Message.ID, seqs[i], want[seqs[i]])
		}
	}
}

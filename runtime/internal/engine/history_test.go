package engine

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// TestHistoryMatchesASlice drives the chunked History and a plain slice with
// the same random appends and removals, across chunk boundaries.
func TestHistoryMatchesASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h History
	var want []Entry
	for step := range 5000 {
		if len(want) > 0 && rng.IntN(4) == 0 {
			i := rng.IntN(len(want))
			h.Remove(i)
			want = append(want[:i], want[i+1:]...)
		} else {
			e := Entry{Msg: &pipeline.Message{ID: "m" + strconv.Itoa(step)}, Seq: uint64(step)}
			h.Append(e)
			want = append(want, e)
		}
		if h.Len() != len(want) {
			t.Fatalf("step %d: len = %d, want %d", step, h.Len(), len(want))
		}
		if len(want) > 0 {
			i := rng.IntN(len(want))
			if got := *h.At(i); got.Seq != want[i].Seq || got.Msg.ID != want[i].Msg.ID {
				t.Fatalf("step %d: at(%d) = %v, want %v", step, i, got.Seq, want[i].Seq)
			}
			if j := h.IndexOf(want[i].Msg.ID); j != i {
				t.Fatalf("step %d: indexOf(%q) = %d, want %d", step, want[i].Msg.ID, j, i)
			}
		}
	}
	for i := range want {
		if h.At(i).Seq != want[i].Seq {
			t.Fatalf("final: at(%d) = %d, want %d", i, h.At(i).Seq, want[i].Seq)
		}
	}
	if h.IndexOf("absent") != -1 {
		t.Fatal("indexOf found an absent ID")
	}
}

package runtime

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// TestHistoryMatchesASlice drives the chunked history and a plain slice with
// the same random appends and removals, across chunk boundaries.
func TestHistoryMatchesASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h history
	var want []entry
	for step := range 5000 {
		if len(want) > 0 && rng.IntN(4) == 0 {
			i := rng.IntN(len(want))
			h.remove(i)
			want = append(want[:i], want[i+1:]...)
		} else {
			e := entry{msg: &pipeline.Message{ID: "m" + strconv.Itoa(step)}, seq: uint64(step)}
			h.append(e)
			want = append(want, e)
		}
		if h.len() != len(want) {
			t.Fatalf("step %d: len = %d, want %d", step, h.len(), len(want))
		}
		if len(want) > 0 {
			i := rng.IntN(len(want))
			if got := *h.at(i); got.seq != want[i].seq || got.msg.ID != want[i].msg.ID {
				t.Fatalf("step %d: at(%d) = %v, want %v", step, i, got.seq, want[i].seq)
			}
			if j := h.indexOf(want[i].msg.ID); j != i {
				t.Fatalf("step %d: indexOf(%q) = %d, want %d", step, want[i].msg.ID, j, i)
			}
		}
	}
	for i := range want {
		if h.at(i).seq != want[i].seq {
			t.Fatalf("final: at(%d) = %d, want %d", i, h.at(i).seq, want[i].seq)
		}
	}
	if h.indexOf("absent") != -1 {
		t.Fatal("indexOf found an absent ID")
	}
}

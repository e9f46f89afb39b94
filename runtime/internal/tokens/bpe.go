package tokens

import (
	"container/heap"
	"math"
	"strings"
	"unicode/utf8"
)

// ranks is an encoding's vocabulary: each token's bytes and its rank,
// which is its ID. Byte-pair encoding merges the pair of adjacent parts
// whose union has the lowest rank, until no union is a token.
type ranks map[string]int32

// count returns the number of tokens the piece p merges into.
func (r ranks) count(p string) int {
	if !utf8.ValidString(p) {
		// Sent as JSON, each byte that is not UTF-8 is U+FFFD.
		p = replaceInvalid(p)
	}
	if _, ok := r[p]; ok {
		return 1
	}
	if len(p) < 2 {
		return len(p)
	}
	if len(p) > longPiece {
		return r.countLong(p)
	}
	return r.countScan(p)
}

// countScan is count for a short piece: merge by merge, each found by a
// scan of the parts, with no allocation up to 63 bytes.
func (r ranks) countScan(p string) int {
	// parts[i] starts a part; rank[i] is the rank of parts i and i+1 merged.
	var pbuf, rbuf [64]int32
	parts, rank := pbuf[:0], rbuf[:0]
	if len(p)+1 > len(pbuf) {
		parts, rank = make([]int32, 0, len(p)+1), make([]int32, 0, len(p)+1)
	}
	for i := 0; i <= len(p); i++ {
		parts = append(parts, int32(i))
	}
	pair := func(i int) int32 { // the rank of parts i and i+1 merged
		if i+2 >= len(parts) {
			return math.MaxInt32
		}
		if v, ok := r[p[parts[i]:parts[i+2]]]; ok {
			return v
		}
		return math.MaxInt32
	}
	for i := range parts {
		rank = append(rank, pair(i))
	}
	for len(parts) > 2 {
		best, at := int32(math.MaxInt32), -1
		for i, v := range rank[:len(rank)-2] {
			if v < best {
				best, at = v, i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = pair(at)
		if at > 0 {
			rank[at-1] = pair(at - 1)
		}
	}
	return len(parts) - 1
}

// longPiece is the length from which count merges through a heap: the
// scan for the lowest rank costs the square of the length.
const longPiece = 128

// countLong is count for a long piece: the same merges in the same order
// (the lowest rank first, the leftmost of equal ones), in O(n log n).
func (r ranks) countLong(p string) int {
	n := int32(len(p))
	next := make([]int32, n) // node i is the part p[i:next[i]]
	prev := make([]int32, n)
	rank := make([]int32, n) // of node i merged with the next
	dead := make([]bool, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	pair := func(i int32) int32 {
		j := next[i]
		if j >= n {
			return math.MaxInt32
		}
		k := n
		if j < n {
			k = next[j]
		}
		if v, ok := r[p[i:k]]; ok {
			return v
		}
		return math.MaxInt32
	}
	h := make(mergeHeap, 0, n)
	for i := range n {
		if rank[i] = pair(i); rank[i] != math.MaxInt32 {
			h = append(h, merge{rank[i], i})
		}
	}
	heap.Init(&h)
	parts := int(n)
	for h.Len() > 0 {
		m := heap.Pop(&h).(merge)
		i := m.at
		if dead[i] || rank[i] != m.rank {
			continue // stale: the part changed since
		}
		j := next[i]
		next[i], dead[j] = next[j], true
		if next[i] < n {
			prev[next[i]] = i
		}
		parts--
		if rank[i] = pair(i); rank[i] != math.MaxInt32 {
			heap.Push(&h, merge{rank[i], i})
		}
		if k := prev[i]; k >= 0 {
			if rank[k] = pair(k); rank[k] != math.MaxInt32 {
				heap.Push(&h, merge{rank[k], k})
			}
		}
	}
	return parts
}

// merge is a possible merge of the part at at with the next one.
type merge struct{ rank, at int32 }

// mergeHeap orders merges by rank, then position.
type mergeHeap []merge

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].at < h[j].at
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(merge)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// replaceInvalid replaces each byte of s that is not UTF-8 with U+FFFD, as
// encoding/json does.
func replaceInvalid(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+w])
		}
		i += w
	}
	return b.String()
}

package engine

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tokens"
)

func countCl100k(m *pipeline.Message) int { return CountTokens(tokens.Cl100k(), m) }

// benchMessages returns n messages of mixed roles and lengths, a fifth of
// them assistant messages with a tool call followed by its result.
func benchMessages(n int) []pipeline.Message {
	rng := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("the runtime keeps every message of a conversation and shows the model only what fits its context window with summaries in place of older turns")
	text := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	out := make([]pipeline.Message, 0, n)
	for len(out) < n {
		id := "m" + strconv.Itoa(len(out))
		switch rng.IntN(5) {
		case 0:
			out = append(out, pipeline.Message{ID: id, Role: pipeline.RoleUser, Content: text(5 + rng.IntN(40))})
		case 1, 2:
			out = append(out, pipeline.Message{ID: id, Role: pipeline.RoleAssistant, Content: text(10 + rng.IntN(80))})
		default:
			call := "c" + strconv.Itoa(len(out))
			out = append(out,
				pipeline.Message{ID: id, Role: pipeline.RoleAssistant, Content: text(3),
					ToolCalls: []pipeline.ToolCall{{ID: call, Name: "read_file", Arguments: []byte(`{"path":"src/` + words[rng.IntN(len(words))] + `.go"}`)}}},
				pipeline.Message{ID: id + "r", Role: pipeline.RoleTool, ToolCallID: call, Name: "read_file", Content: text(20 + rng.IntN(200))})
		}
	}
	return out[:n]
}

// BenchmarkEffectiveHistory: the cost of keeping the effective history
// per appended message — append one message, read the view's length and
// token total — at 1,000 and 10,000 messages (it must not depend on the
// length), and, for reference, a full rebuild after a mark at 10,000.
func BenchmarkEffectiveHistory(b *testing.B) {
	pool := benchMessages(4096)
	counter := countCl100k
	build := func(n int) *History {
		h := &History{}
		h.SetCounter(counter)
		for i := range n {
			h.Append(Entry{Msg: &pool[i%len(pool)], Seq: uint64(i)})
		}
		h.effective()
		return h
	}
	for _, bc := range []struct {
		name  string
		n     int
		count func(*pipeline.Message) int
	}{
		{"append/n=1000", 1000, countCl100k},
		{"append/n=10000", 10000, countCl100k},
		// Without the token counter: the index's own cost, the
		// tokenizer's left out.
		{"append-nocount/n=1000", 1000, nil},
		{"append-nocount/n=10000", 10000, nil},
	} {
		n := bc.n
		b.Run(bc.name, func(b *testing.B) {
			counter = bc.count
			defer func() { counter = countCl100k }()
			h := build(n)
			b.ReportAllocs()
			i := n
			for b.Loop() {
				if h.Len() >= 2*n { // keep the length between n and 2n
					b.StopTimer()
					h = build(n)
					i = n
					b.StartTimer()
				}
				// A fresh copy: the count is cached per entry, so each
				// appended message is counted once, as in a turn.
				h.Append(Entry{Msg: &pool[i%len(pool)], Seq: uint64(i)})
				pos := h.Positions()
				if len(pos) != h.Len() || (h.Tokens() <= 0) == (counter != nil) {
					b.Fatalf("effective %d of %d, %d tokens", len(pos), h.Len(), h.Tokens())
				}
				i++
			}
		})
	}
	b.Run("rebuild/n=10000", func(b *testing.B) {
		h := build(10000)
		marked := make([]pipeline.Message, len(pool))
		for i, m := range pool {
			m.Metadata = map[string]any{pipeline.MetaTruncated: true}
			marked[i] = m
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// A mark replaces one message (its count dropped) and
			// invalidates the index; the next read rebuilds it. Every
			// other op takes the mark back, so the view keeps its size.
			p := (i / 2 * 7919) % h.Len()
			e := h.At(p)
			if i%2 == 0 {
				e.Set(&marked[p%len(pool)])
			} else {
				e.Set(&pool[p%len(pool)])
			}
			h.Changed()
			if pos := h.Positions(); len(pos) < h.Len()-1 || h.Tokens() <= 0 {
				b.Fatalf("effective %d of %d, %d tokens", len(pos), h.Len(), h.Tokens())
			}
			i++
		}
	})
}

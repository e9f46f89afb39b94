package engine

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// effIDs lists the IDs of the effective history, in order.
func effIDs(h *History) []string {
	e := h.effective()
	out := make([]string, len(e.idx))
	for i, p := range e.idx {
		out[i] = h.At(p).Msg.ID
	}
	return out
}

// TestEffectiveIndex: the effective History of hand-marked histories: what
// is left out, where each summary stands, what a summary that is gone or
// left out does.
func TestEffectiveIndex(t *testing.T) {
	type m = pipeline.Message
	trunc := map[string]any{pipeline.MetaTruncated: true}
	by := func(s string) map[string]any { return map[string]any{pipeline.MetaCondensedBy: s} }
	sum := map[string]any{pipeline.MetaSummary: map[string]any{"messages": 2}}
	tests := []struct {
		name string
		msgs []m
		want []string
	}{
		{"no marks", []m{{ID: "u1"}, {ID: "a1"}, {ID: "u2"}}, []string{"u1", "a1", "u2"}},
		{"truncated left out", []m{{ID: "u1"}, {ID: "a1", Metadata: trunc}, {ID: "u2", Metadata: trunc}, {ID: "a2"}}, []string{"u1", "a2"}},
		{"truncated false is shown", []m{{ID: "u1", Metadata: map[string]any{pipeline.MetaTruncated: false}}}, []string{"u1"}},
		{"summary where the first condensed was", []m{{ID: "u1"}, {ID: "a1", Metadata: by("s")}, {ID: "u2", Metadata: by("s")}, {ID: "a2"}, {ID: "s", Metadata: sum}, {ID: "u3"}},
			[]string{"u1", "s", "a2", "u3"}},
		{"summary of messages that are not contiguous", []m{{ID: "u1"}, {ID: "a1", Metadata: by("s")}, {ID: "p"}, {ID: "u2", Metadata: by("s")}, {ID: "s", Metadata: sum}},
			[]string{"u1", "s", "p"}},
		{"two summaries", []m{{ID: "u1"}, {ID: "a1", Metadata: by("s1")}, {ID: "s1", Metadata: sum}, {ID: "a2", Metadata: by("s2")}, {ID: "u3", Metadata: by("s2")}, {ID: "s2", Metadata: sum}, {ID: "a3"}},
			[]string{"u1", "s1", "s2", "a3"}},
		{"a summary that is gone hides nothing", []m{{ID: "u1"}, {ID: "a1", Metadata: by("gone")}, {ID: "a2"}}, []string{"u1", "a1", "a2"}},
		{"a truncated summary hides what it condensed", []m{{ID: "u1"}, {ID: "a1", Metadata: by("s")}, {ID: "s", Metadata: map[string]any{pipeline.MetaSummary: true, pipeline.MetaTruncated: true}}, {ID: "u2"}},
			[]string{"u1", "u2"}},
		{"a summary condensing nothing is not shown", []m{{ID: "u1"}, {ID: "s", Metadata: sum}, {ID: "u2"}}, []string{"u1", "u2"}},
		{"condensed and truncated", []m{{ID: "u1"}, {ID: "a1", Metadata: map[string]any{pipeline.MetaCondensedBy: "s", pipeline.MetaTruncated: true}}, {ID: "a2", Metadata: by("s")}, {ID: "s", Metadata: sum}},
			[]string{"u1", "s"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Appended one by one (the incremental index), then rebuilt.
			var h History
			h.effective()
			for i := range tt.msgs {
				h.Append(Entry{Msg: &tt.msgs[i], Seq: uint64(i)})
			}
			if got := effIDs(&h); !slices.Equal(got, tt.want) {
				t.Errorf("incremental: %v, want %v", got, tt.want)
			}
			h.Changed()
			if got := effIDs(&h); !slices.Equal(got, tt.want) {
				t.Errorf("rebuilt: %v, want %v", got, tt.want)
			}
			// effectiveView is what the model request reads.
			v := Effective{&h}
			var got []string
			for i := range v.Len() {
				got = append(got, v.At(i).ID)
			}
			if !slices.Equal(got, tt.want) && len(tt.want) > 0 {
				t.Errorf("view: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEffectiveTokens: with a counter set, the index sums the token counts
// of the effective messages, counting each message once, and a replaced
// message (its count dropped) is counted again.
func TestEffectiveTokens(t *testing.T) {
	calls := map[string]int{}
	count := func(m *pipeline.Message) int { calls[m.ID]++; return len(m.Content) }
	var h History
	for i, c := range []string{"aaaa", "bb", "cccccc"} {
		h.Append(Entry{Msg: &pipeline.Message{ID: "m" + strconv.Itoa(i), Content: c}, Seq: uint64(i)})
	}
	if h.effective().tokens != 0 {
		t.Fatalf("tokens without a counter = %d", h.effective().tokens)
	}
	h.SetCounter(count)
	if got := h.effective().tokens; got != 12 {
		t.Fatalf("tokens = %d, want 12", got)
	}
	h.Append(Entry{Msg: &pipeline.Message{ID: "m3", Content: "d"}, Seq: 3})
	if got := h.effective().tokens; got != 13 {
		t.Fatalf("after an append: tokens = %d, want 13", got)
	}
	h.Changed()
	if got := h.effective().tokens; got != 13 {
		t.Fatalf("after a rebuild: tokens = %d, want 13", got)
	}
	// A mark: the entry gets a new message whose count is dropped.
	e := h.At(1)
	e.Msg, e.tokens = &pipeline.Message{ID: "m1", Content: "bb", Metadata: map[string]any{pipeline.MetaTruncated: true}}, 0
	h.Changed()
	if got := h.effective().tokens; got != 11 {
		t.Fatalf("after truncating m1: tokens = %d, want 11", got)
	}
	h.Remove(0)
	if got, ids := h.effective().tokens, effIDs(&h); got != 7 || !slices.Equal(ids, []string{"m2", "m3"}) {
		t.Fatalf("after removing m0: tokens = %d, ids %v; want 7, [m2 m3]", got, ids)
	}
	want := map[string]int{"m0": 1, "m1": 1, "m2": 1, "m3": 1}
	if !maps.Equal(calls, want) {
		t.Errorf("counts per message = %v, want %v (each message once)", calls, want)
	}
	// reset keeps the counter.
	h.Reset()
	h.Append(Entry{Msg: &pipeline.Message{ID: "x", Content: "12345"}})
	if got := h.effective().tokens; got != 5 {
		t.Errorf("after reset: tokens = %d, want 5", got)
	}
}

package engine

import (
	"github.com/ganglion-dev/ganglion/pipeline"
)

// effIndex is the effective history of an instance: the positions, in its
// full history, of the messages the model sees. Messages marked truncated
// or condensed (pipeline.MetaTruncated, MetaCondensedBy) are left out, and
// each summary (MetaSummary) stands where the first message it condenses
// was. It is kept incrementally: appending a plain message appends its
// position, O(1); a replace, a remove or an appended mark makes the next
// read rebuild it, O(n) — marks change rarely.
//
// tokens sums the token counts of the effective messages when a counter is
// set (the condense extension sets one); each message is counted once, its
// count kept in its entry.
type effIndex struct {
	idx    []int
	valid  bool
	tokens int
	count  func(*pipeline.Message) int
}

// effective returns the effective history, rebuilt if needed.
func (h *History) effective() *effIndex {
	e := &h.eff
	if e.valid {
		return e
	}
	e.idx, e.tokens = e.idx[:0], 0
	var summaries map[string]int // summary ID → position
	for i := 0; i < h.n; i++ {
		if m := h.At(i).Msg; IsSummary(m) {
			if summaries == nil {
				summaries = map[string]int{}
			}
			summaries[m.ID] = i
		}
	}
	var shown map[string]bool
	for i := 0; i < h.n; i++ {
		m := h.At(i).Msg
		switch {
		case IsTruncated(m), IsSummary(m):
			continue
		}
		if s := CondensedBy(m); s != "" {
			if p, ok := summaries[s]; ok {
				if !shown[s] && !IsTruncated(h.At(p).Msg) {
					if shown == nil {
						shown = map[string]bool{}
					}
					shown[s] = true
					e.add(h, p)
				}
				continue
			}
			// A summary that is not there hides nothing.
		}
		e.add(h, i)
	}
	e.valid = true
	return e
}

// add appends position p to the index, counting its tokens if asked.
func (e *effIndex) add(h *History, p int) {
	e.idx = append(e.idx, p)
	if e.count != nil {
		en := h.At(p)
		if en.tokens == 0 {
			en.tokens = int32(e.count(en.Msg)) + 1 // +1: 0 means not counted
		}
		e.tokens += int(en.tokens) - 1
	}
}

// appended keeps the index up to date with the entry just appended.
func (h *History) appended() {
	e := &h.eff
	if !e.valid {
		return
	}
	m := h.At(h.n - 1).Msg
	if IsTruncated(m) || IsSummary(m) || CondensedBy(m) != "" {
		e.valid = false
		return
	}
	e.add(h, h.n-1)
}

// Changed says that an entry's message was replaced: the next read
// rebuilds the effective history.
func (h *History) Changed() { h.eff.valid = false }

// SetCounter makes the effective history sum token counts with count.
func (h *History) SetCounter(count func(*pipeline.Message) int) {
	if h.eff.count == nil && count != nil {
		h.eff.count = count
		h.eff.valid = false
	}
}

// Counting reports whether a counter is set (SetCounter).
func (h *History) Counting() bool { return h.eff.count != nil }

// Tokens returns the token count of the effective history, 0 without a
// counter.
func (h *History) Tokens() int { return h.effective().tokens }

// Positions returns the positions in the full history of the effective
// history's messages, in order. The slice is the history's own: read it,
// never change it, and not past the next change of the history.
func (h *History) Positions() []int { return h.effective().idx }

// IsTruncated, IsSummary, IsPinned and CondensedBy read the marks the
// effective history follows.
func IsTruncated(m *pipeline.Message) bool {
	b, _ := m.Metadata[pipeline.MetaTruncated].(bool)
	return b
}

// IsSummary reports whether m is a summary of condensed messages.
func IsSummary(m *pipeline.Message) bool {
	_, ok := m.Metadata[pipeline.MetaSummary]
	return ok
}

// IsPinned reports whether m is kept by every reduction.
func IsPinned(m *pipeline.Message) bool {
	b, _ := m.Metadata[pipeline.MetaPinned].(bool)
	return b
}

// CondensedBy returns the ID of the summary that stands for m, if any.
func CondensedBy(m *pipeline.Message) string {
	s, _ := m.Metadata[pipeline.MetaCondensedBy].(string)
	return s
}

// Effective is the model request's Messages: the effective history as a
// pipeline.MessageList. Only the turn holding the instance's slot reads
// it, between appends.
type Effective struct{ H *History }

// Len returns how many messages the model sees.
func (v Effective) Len() int { return len(v.H.effective().idx) }

// At returns the i-th of them.
func (v Effective) At(i int) pipeline.Message { return *v.H.At(v.H.effective().idx[i]).Msg }

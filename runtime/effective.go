package runtime

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
func (h *history) effective() *effIndex {
	e := &h.eff
	if e.valid {
		return e
	}
	e.idx, e.tokens = e.idx[:0], 0
	var summaries map[string]int // summary ID → position
	for i := 0; i < h.n; i++ {
		if m := h.at(i).msg; isSummary(m) {
			if summaries == nil {
				summaries = map[string]int{}
			}
			summaries[m.ID] = i
		}
	}
	var shown map[string]bool
	for i := 0; i < h.n; i++ {
		m := h.at(i).msg
		switch {
		case isTruncated(m), isSummary(m):
			continue
		}
		if s := condensedBy(m); s != "" {
			if p, ok := summaries[s]; ok {
				if !shown[s] && !isTruncated(h.at(p).msg) {
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
func (e *effIndex) add(h *history, p int) {
	e.idx = append(e.idx, p)
	if e.count != nil {
		en := h.at(p)
		if en.tokens == 0 {
			en.tokens = int32(e.count(en.msg)) + 1 // +1: 0 means not counted
		}
		e.tokens += int(en.tokens) - 1
	}
}

// appended keeps the index up to date with the entry just appended.
func (h *history) appended() {
	e := &h.eff
	if !e.valid {
		return
	}
	m := h.at(h.n - 1).msg
	if isTruncated(m) || isSummary(m) || condensedBy(m) != "" {
		e.valid = false
		return
	}
	e.add(h, h.n-1)
}

// changed makes the next read rebuild the index.
func (h *history) changed() { h.eff.valid = false }

// setCounter makes the index sum token counts with count.
func (h *history) setCounter(count func(*pipeline.Message) int) {
	if h.eff.count == nil && count != nil {
		h.eff.count = count
		h.eff.valid = false
	}
}

func isTruncated(m *pipeline.Message) bool {
	b, _ := m.Metadata[pipeline.MetaTruncated].(bool)
	return b
}

func isSummary(m *pipeline.Message) bool {
	_, ok := m.Metadata[pipeline.MetaSummary]
	return ok
}

func isPinned(m *pipeline.Message) bool {
	b, _ := m.Metadata[pipeline.MetaPinned].(bool)
	return b
}

func condensedBy(m *pipeline.Message) string {
	s, _ := m.Metadata[pipeline.MetaCondensedBy].(string)
	return s
}

// effectiveView is the model request's Messages: the effective history as
// a pipeline.MessageList. Only the turn holding the instance's slot reads
// it, between appends.
type effectiveView struct{ h *history }

func (v effectiveView) Len() int { return len(v.h.effective().idx) }

func (v effectiveView) At(i int) pipeline.Message { return *v.h.at(v.h.effective().idx[i]).msg }

package engine

import "github.com/ganglion-dev/ganglion/pipeline"

// historyChunk is how many messages a chunk of a history holds.
const historyChunk = 64

// Entry is a message and its position in the store. The message is the
// one the store keeps too (store.Record): immutable once appended.
type Entry struct {
	Msg *pipeline.Message
	Seq uint64
	// tokens is the message's token count plus one, 0 until counted (see
	// effIndex).
	tokens int32
}

// Tokens returns the message's token count as the history's counter
// counted it, -1 if it did not.
func (e *Entry) Tokens() int { return int(e.tokens) - 1 }

// Set replaces the entry's message, whose count is then dropped.
func (e *Entry) Set(m *pipeline.Message) { e.Msg, e.tokens = m, 0 }

// History is an instance's conversation in memory, in chunks of
// historyChunk entries: appending never copies earlier messages, so the
// cost of a turn does not grow with the conversation. Removing a message
// (rare: only a middleware does it) shifts the ones after it. Only the
// turn holding the instance's slot uses it.
type History struct {
	chunks [][]Entry
	n      int
	eff    effIndex // the effective history, see effective.go
}

// Len returns the number of messages.
func (h *History) Len() int { return h.n }

// At returns entry i.
func (h *History) At(i int) *Entry { return &h.chunks[i/historyChunk][i%historyChunk] }

// Append adds e at the end.
func (h *History) Append(e Entry) {
	if h.n%historyChunk == 0 {
		h.chunks = append(h.chunks, make([]Entry, 0, historyChunk))
	}
	last := len(h.chunks) - 1
	h.chunks[last] = append(h.chunks[last], e)
	h.n++
	h.appended()
}

// Remove deletes entry i, moving the later ones down by one.
func (h *History) Remove(i int) {
	for j := i; j < h.n-1; j++ {
		*h.At(j) = *h.At(j + 1)
	}
	h.n--
	last := len(h.chunks) - 1
	h.chunks[last][len(h.chunks[last])-1] = Entry{} // drop references
	h.chunks[last] = h.chunks[last][:len(h.chunks[last])-1]
	if len(h.chunks[last]) == 0 {
		h.chunks = h.chunks[:last]
	}
	h.Changed()
}

// Reset empties the history, keeping its token counter.
func (h *History) Reset() { *h = History{eff: effIndex{count: h.eff.count, idx: h.eff.idx[:0]}} }

// IndexOf finds a message by ID, newest first (edits usually concern
// recent messages); -1 if there is none.
func (h *History) IndexOf(id string) int {
	for i := h.n - 1; i >= 0; i-- {
		if h.At(i).Msg.ID == id {
			return i
		}
	}
	return -1
}

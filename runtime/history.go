package runtime

import "github.com/ganglion-dev/ganglion/pipeline"

// historyChunk is how many messages a chunk of a history holds.
const historyChunk = 64

// entry is a message and its position in the store. The message is the
// one the store keeps too (store.Record): immutable once appended.
type entry struct {
	msg *pipeline.Message
	seq uint64
	// tokens is the message's token count plus one, 0 until counted (see
	// effIndex).
	tokens int32
}

// history is an instance's conversation in memory, in chunks of
// historyChunk entries: appending never copies earlier messages, so the
// cost of a turn does not grow with the conversation. Removing a message
// (rare: only a middleware does it) shifts the ones after it.
type history struct {
	chunks [][]entry
	n      int
	eff    effIndex // the effective history, see effective.go
}

func (h *history) len() int { return h.n }

func (h *history) at(i int) *entry { return &h.chunks[i/historyChunk][i%historyChunk] }

func (h *history) append(e entry) {
	if h.n%historyChunk == 0 {
		h.chunks = append(h.chunks, make([]entry, 0, historyChunk))
	}
	last := len(h.chunks) - 1
	h.chunks[last] = append(h.chunks[last], e)
	h.n++
	h.appended()
}

// remove deletes entry i, moving the later ones down by one.
func (h *history) remove(i int) {
	for j := i; j < h.n-1; j++ {
		*h.at(j) = *h.at(j + 1)
	}
	h.n--
	last := len(h.chunks) - 1
	h.chunks[last][len(h.chunks[last])-1] = entry{} // drop references
	h.chunks[last] = h.chunks[last][:len(h.chunks[last])-1]
	if len(h.chunks[last]) == 0 {
		h.chunks = h.chunks[:last]
	}
	h.changed()
}

// reset empties the history, keeping its token counter.
func (h *history) reset() { *h = history{eff: effIndex{count: h.eff.count, idx: h.eff.idx[:0]}} }

// indexOf finds a message by ID, newest first: edits usually concern recent messages.
func (h *history) indexOf(id string) int {
	for i := h.n - 1; i >= 0; i-- {
		if h.at(i).msg.ID == id {
			return i
		}
	}
	return -1
}

package wasm

import "encoding/binary"

// The inbox (sdk/ABI.md, "inbox"): a guest may register, in its init or a hook,
// 24 bytes of its memory where the host keeps, for the hook whose guest
// code runs, its handle (bytes 0-7) and the generations of its INPUT_TEXT
// (bytes 8-15) and TOOL_NAME (bytes 16-23), each a little-endian u64, 0
// where the hook has no such field. The host writes them as the hook
// starts, when its next returns (what ran there may have changed the
// input, or written the inbox for a nested hook) and when it sets its
// input. Two hook calls of one instance given the same generation in a
// slot have the same value there, so a guest that kept the value it read
// has it again without a host call. A field read is a round trip through
// the sandbox, about 120 ns in a Go guest, and a turn's hooks read the
// same input text at every step (RATIONALE.md, "The inbox").
//
// The host only ever writes the inbox, never reads it: what the guest
// stores there can mislead nothing but the guest's own cache.

const (
	inboxLen = 24
	// maxInboxText is the longest value given a generation (longer ones
	// get 0: read them). It bounds what an instance keeps alive to compare
	// with and what the comparison costs; the Go SDK keeps no longer text.
	maxInboxText = 4 << 10
)

// inboxSlots are the values an instance gave the generations it wrote
// last, slot by slot.
type inboxSlots struct {
	ptr  uint32 // the inbox's address in the guest's memory
	on   bool   // the guest registered one
	last [2]string
	gen  [2]uint64
	seq  uint64 // the last generation made; never reused in an instance
}

// hostInbox is inbox(ptr, len): the guest registers its inbox, once: in
// ganglion_init after the manifest, or in a hook, for which the host then
// writes it at once. A guest may so register it only when it first reads
// a field the inbox is for: a hook that reads neither costs nothing more.
func hostInbox(in *instance, p []uint64) int32 {
	switch st := in.init; {
	case st == nil && len(in.frames) == 0:
		return in.fail(codePhase, "inbox is registered in ganglion_init or in a hook")
	case st != nil && st.manifest == nil:
		return in.fail(codePhase, "inbox before manifest: declare the manifest first")
	}
	if in.inbox.on {
		return in.fail(codePhase, "inbox is registered once")
	}
	ptr, n := uint32(p[0]), uint32(p[1])
	if n != inboxLen {
		return in.fail(codeInvalid, "inbox: %d bytes, want %d", n, inboxLen)
	}
	if ptr%8 != 0 {
		return in.fail(codeInvalid, "inbox: address %d is not a multiple of 8", ptr)
	}
	if _, ok := in.mem.Read(ptr, n); !ok {
		return in.fail(codeBounds, "inbox: (%d, %d) is outside the guest's memory", ptr, n)
	}
	in.inbox.ptr, in.inbox.on = ptr, true
	if n := len(in.frames); n > 0 {
		in.writeInbox(in.frames[n-1])
	}
	return 0
}

// generation returns the generation of value v in slot i: the last one if
// v is the value it was given, else a new one.
func (b *inboxSlots) generation(i int, v string) uint64 {
	if len(v) > maxInboxText {
		return 0
	}
	if b.gen[i] == 0 || v != b.last[i] {
		b.seq++
		b.last[i], b.gen[i] = v, b.seq
	}
	return b.gen[i]
}

// fillInbox writes f's handle and generations into the guest's inbox, if
// it has one: f is the hook whose guest code runs next. A linear memory
// never shrinks, so the inbox, checked when registered, stays inside it.
func (in *instance) fillInbox(f *frame) {
	if in.inbox.on {
		in.writeInbox(f)
	}
}

// writeInbox is fillInbox's work, out of line: fillInbox is inlined in
// the hook path of every instance, most with no inbox.
func (in *instance) writeInbox(f *frame) {
	b := &in.inbox
	var text, name uint64
	switch {
	case f.turn != nil:
		text = b.generation(0, f.turn.Input().Text)
	case f.step != nil:
		text = b.generation(0, f.step.Input().Text)
	case f.call != nil:
		name = b.generation(1, f.call.Name())
	}
	if w, ok := in.mem.Read(b.ptr, inboxLen); ok {
		binary.LittleEndian.PutUint64(w, uint64(uint32(f.handle)))
		binary.LittleEndian.PutUint64(w[8:], text)
		binary.LittleEndian.PutUint64(w[16:], name)
	}
}

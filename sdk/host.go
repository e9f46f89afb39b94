package ganglion

// abiVersion is the guest ABI version this SDK implements (sdk/ABI.md).
const abiVersion = 2

// Registration kinds of the register import.
const (
	kindTurn     = 1
	kindStep     = 2
	kindToolCall = 3
	kindTool     = 4
	kindEvent    = 5
	kindPending  = 6
	kindReply    = 7
)

// Field IDs of the field and set_field imports.
const (
	fieldAgent      = 1
	fieldInstance   = 2
	fieldTurnID     = 3
	fieldInput      = 4
	fieldInputText  = 5
	fieldStep       = 6
	fieldToolName   = 7
	fieldToolArgs   = 8
	fieldCallID     = 9
	fieldTools      = 10
	fieldResult     = 11
	fieldEventTopic = 12
	fieldEventData  = 13
	fieldConfig     = 14
	// fieldIdempotencyKey: see ToolCall.IdempotencyKey.
	fieldIdempotencyKey = 15
	fieldPendingPhase   = 16
	fieldPendingItem    = 17
	fieldAction         = 18
	fieldResuming       = 19
	fieldReply          = 20
)

var fieldNames = [...]string{"", "AGENT", "INSTANCE", "TURN_ID", "INPUT", "INPUT_TEXT", "STEP", "TOOL_NAME",
	"TOOL_ARGS", "CALL_ID", "TOOLS", "RESULT", "EVENT_TOPIC", "EVENT_DATA", "CONFIG", "IDEMPOTENCY_KEY",
	"PENDING_PHASE", "PENDING_ITEM", "ACTION", "RESUMING", "REPLY"}

// kindName names a registration kind as the manifest does.
func kindName(kind int32) string {
	switch kind {
	case kindTurn:
		return "turn"
	case kindStep:
		return "step"
	case kindToolCall:
		return "tool_call"
	case kindTool:
		return "tool"
	case kindEvent:
		return "event"
	case kindPending:
		return "pending"
	case kindReply:
		return "reply"
	}
	return "unknown"
}

// abi is the host's module ganglion, one method per import. In a wasip1
// guest host calls the imports; elsewhere every call fails (noHost), and
// the package's tests may put a fake in its place.
type abi interface {
	manifest(b []byte) int32
	register(kind int32, spec []byte) int32
	field(h, field int32, buf []byte) int32
	setField(h, field int32, v []byte) int32
	messagesLen(h int32) int32
	message(h, index int32, buf []byte) int32
	emit(h int32, ev []byte) int32
	next(h int32) int32
	stateGet(h int32, buf []byte) int32
	stateSet(h int32, v []byte) int32
	publish(h int32, topic string, data []byte) int32
	log(level int32, msg string) int32
	secret(h int32, name string, buf []byte) int32
	agentsRequest(h int32, req, buf []byte) int32
	agentsSend(h int32, req []byte) int32
	window(h int32, buf []byte) int32
	windowApply(h int32, req, buf []byte) int32
	complete(h int32, req, buf []byte) int32
	httpRequest(h int32, req, buf []byte) int32
	setError(msg string) int32
	lastError(buf []byte) int32
	inbox(p *[3]uint64) int32
	pause(h int32, req, buf []byte) int32
	fileRead(h int32, path string, buf []byte) int32
	fileList(h int32, path string, buf []byte) int32
	fileWrite(h int32, path string, data []byte, mode int32) int32
}

// A guest runs one call at a time (a hook, or a hook nested in another's
// next), so one reusable buffer serves every read. A value read into it
// must be copied out (decoded, converted to a string) before the next host
// call: a nested hook reuses the buffer while its outer hook waits in next.
const (
	initialBuf = 4 << 10
	// maxKeptBuf is the largest buffer kept for reuse; a larger value gets
	// a buffer of its own, so one big read does not pin its memory.
	maxKeptBuf = 64 << 10
)

var buf = make([]byte, initialBuf)

// read calls get with a buffer until the value fits, and returns the
// value. The result may alias the shared buffer: copy it before the next
// host call. A negative result becomes an [*Error] named op.
func read(op string, get func(b []byte) int32) ([]byte, error) {
	return readFrom(op, get(buf), get)
}

// readFrom is read after the first call, which answered n for the shared
// buffer.
func readFrom(op string, n int32, get func(b []byte) int32) ([]byte, error) {
	b := buf
	for calls := 1; ; calls++ {
		if n < 0 {
			return nil, hostError(op, n)
		}
		if int(n) <= len(b) {
			return b[:n], nil
		}
		if calls == 4 {
			return nil, &Error{Op: op, Code: CodeFailed, Message: "the value kept growing between reads"}
		}
		// Too small: nothing was written. Grow and ask again.
		b = make([]byte, n)
		if n <= maxKeptBuf {
			buf = b
		}
		n = get(b)
	}
}

// readString is read, as a string.
func readString(op string, get func(b []byte) int32) (string, error) {
	b, err := read(op, get)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// lastError returns the host's message for the last failed import.
func lastError() string {
	b := make([]byte, 256)
	for range 4 {
		n := host.lastError(b)
		if n <= 0 {
			return ""
		}
		if int(n) <= len(b) {
			return string(b[:n])
		}
		b = make([]byte, n)
	}
	return ""
}

package wasm

// abiVersion is the newest guest ABI version this host implements, and
// abiOldest the oldest it still loads (sdk/ABI.md, "Versioning"): a guest
// built for version 1 loads unchanged.
const (
	abiVersion = 2
	abiOldest  = 1
)

// abiSupported reports whether the host loads guests of ABI version v.
func abiSupported(v int) bool { return v >= abiOldest && v <= abiVersion }

// abiHost names the versions the host loads, for errors.
const abiHost = "host ABI versions 1 and 2"

// Error codes of the host imports (sdk/ABI.md, "Results and error codes").
const (
	codeInvalid  = -1
	codeNotFound = -2
	codeDenied   = -3
	codeFailed   = -4
	codeBounds   = -5
	codeTooLarge = -6
	codeStale    = -7
	codePhase    = -8
)

// Registration kinds of the register import.
const (
	kindTurn     = 1
	kindStep     = 2
	kindToolCall = 3
	kindTool     = 4
	kindEvent    = 5
	// kindPending handles a kind of pending item the guest opens
	// (version 2): it resolves, expires and resumes the guest's items.
	kindPending = 6
	// kindReply reads the model's reply of each step before it is stored
	// (version 2): a pending item it opens commits with the reply.
	kindReply = 7
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
	// fieldIdempotencyKey is the call's stable idempotency key
	// (pipeline.ToolCallContext.IdempotencyKey).
	fieldIdempotencyKey = 15
	// Version 2: a pending hook's context (see pause.go).
	fieldPendingPhase = 16 // "resolve", "expire" or "resume"
	fieldPendingItem  = 17 // the item, JSON
	fieldAction       = 18 // the human's action, JSON (resolve)
	// fieldResuming is, in a toolCall hook, the guest's own pending item
	// whose resume runs the call.
	fieldResuming = 19
	// fieldReply is, in a reply hook, the model's reply, JSON.
	fieldReply = 20
)

// Guest export names.
const (
	exportVersion  = "ganglion_abi_version"
	exportInit     = "ganglion_init"
	exportTurn     = "ganglion_turn"
	exportStep     = "ganglion_step"
	exportToolCall = "ganglion_tool_call"
	exportTool     = "ganglion_tool"
	exportEvent    = "ganglion_event"
	exportPending  = "ganglion_pending"
	exportReply    = "ganglion_reply"
)

// hookExport returns the export that runs hooks of kind.
func hookExport(kind int32) string {
	switch kind {
	case kindTurn:
		return exportTurn
	case kindStep:
		return exportStep
	case kindToolCall:
		return exportToolCall
	case kindTool:
		return exportTool
	case kindEvent:
		return exportEvent
	case kindPending:
		return exportPending
	case kindReply:
		return exportReply
	}
	return ""
}

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

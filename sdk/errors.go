package ganglion

import (
	"errors"
	"strconv"
)

// Code is a host import's negative result (sdk/ABI.md, "Results and error
// codes").
type Code int32

// The host's error codes.
const (
	// CodeInvalid: a bad argument (unknown field, malformed JSON, invalid UTF-8).
	CodeInvalid Code = -1
	// CodeNotFound: no such message index, state or secret.
	CodeNotFound Code = -2
	// CodeDenied: not declared in the manifest, or not granted by the config.
	CodeDenied Code = -3
	// CodeFailed: the operation failed (for next: the rest of the chain failed).
	CodeFailed Code = -4
	// CodeBounds: a buffer outside the guest's memory (an SDK bug).
	CodeBounds Code = -5
	// CodeTooLarge: a value over the extension's max_payload.
	CodeTooLarge Code = -6
	// CodeStale: a context used after its hook returned.
	CodeStale Code = -7
	// CodePhase: an import used where it is not allowed (next twice,
	// registering after init).
	CodePhase Code = -8
)

var codeNames = map[Code]string{
	CodeInvalid: "invalid", CodeNotFound: "not found", CodeDenied: "denied", CodeFailed: "failed",
	CodeBounds: "out of bounds", CodeTooLarge: "too large", CodeStale: "stale handle", CodePhase: "wrong phase",
}

// String returns the code's name, "not found" for CodeNotFound.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code " + strconv.Itoa(int(c))
}

// Sentinels for [errors.Is]: an [*Error] matches the sentinel of its code.
var (
	ErrInvalid  = errors.New("invalid")
	ErrNotFound = errors.New("not found")
	ErrDenied   = errors.New("denied")
	ErrFailed   = errors.New("failed")
	ErrBounds   = errors.New("out of bounds")
	ErrTooLarge = errors.New("too large")
	ErrStale    = errors.New("stale handle")
	ErrPhase    = errors.New("wrong phase")
)

var codeErrs = map[Code]error{
	CodeInvalid: ErrInvalid, CodeNotFound: ErrNotFound, CodeDenied: ErrDenied, CodeFailed: ErrFailed,
	CodeBounds: ErrBounds, CodeTooLarge: ErrTooLarge, CodeStale: ErrStale, CodePhase: ErrPhase,
}

// Error is a host import's refusal: the import, the code it returned and
// the host's last_error message.
type Error struct {
	// Op names the import, "state_get".
	Op string
	// Code is the import's result.
	Code Code
	// Message is the host's last_error text.
	Message string
}

// Error returns "ganglion: op: message".
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.String()
	}
	return "ganglion: " + e.Op + ": " + msg
}

// Unwrap returns the sentinel of e's code, so that
// errors.Is(err, ErrNotFound) works.
func (e *Error) Unwrap() error { return codeErrs[e.Code] }

// hostError builds the error for an import that returned code, with the
// host's message.
func hostError(op string, code int32) error {
	return &Error{Op: op, Code: Code(code), Message: lastError()}
}

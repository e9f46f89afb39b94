package protocol

import "errors"

// Error is a problem with a block in model output: a missing or malformed
// field, a value its kind refuses, a block never closed or too long, a closing
// tag without an opening one. Its message is written for the model to read and
// correct itself, for example
//
//	line 3: [USER_QUESTION] is missing the required field "question"
//	[DEPENDENCY_REQUEST] opened at line 7 is never closed
//
// A block with several problems yields one Error per problem; they share Raw,
// StartLine and EndLine.
type Error struct {
	// Line is the line the problem is on (1-based).
	Line int
	// Kind is the block's kind, such as "USER_QUESTION".
	Kind string
	// Msg is the complete message, including the line where it names one.
	Msg string
	// Raw is the text of the region the problem belongs to (the block, or a
	// stray closing tag line). The region is not passed through as text.
	Raw string
	// StartLine and EndLine are the first and last lines of Raw.
	StartLine, EndLine int
}

// Error returns e.Msg.
func (e *Error) Error() string { return e.Msg }

// FieldError blames one field of a block. A [Kind]'s Build returns it so that
// the message is reported at the field's line.
type FieldError struct {
	// Field is the field's name.
	Field string
	// Msg says what is wrong, without the line, e.g.
	// `unknown category "biz" (want business, clarification, choice or confirmation)`.
	Msg string
}

// Error returns e.Msg.
func (e *FieldError) Error() string { return e.Msg }

// ErrInvalid is matched (with [errors.Is]) by every error that refuses an
// answer or a dependency value as invalid, as opposed to a failure to check
// it.
var ErrInvalid = errors.New("invalid")

// invalidError is an [ErrInvalid] error. Its text is msg alone: the cause is
// reachable through errors.Is and errors.As but never printed, so that no
// provided value (nor a path or URL derived from one) reaches an error text.
type invalidError struct {
	msg   string
	cause error
}

func invalid(msg string) error { return &invalidError{msg: msg} }

func invalidCause(msg string, cause error) error { return &invalidError{msg: msg, cause: cause} }

func (e *invalidError) Error() string { return e.msg }

func (e *invalidError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

var (
	_ error = (*Error)(nil)
	_ error = (*FieldError)(nil)
	_ error = (*invalidError)(nil)
)

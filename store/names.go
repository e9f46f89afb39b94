package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrInvalidName is matched (with [errors.Is]) by every error that
// [ValidateName] and [ValidateInstanceKey] return, and so by every store
// method refusing a name.
var ErrInvalidName = errors.New("store: invalid name")

// Limits on names. They keep every store key short and unambiguous: NUL
// separates the parts of a key (see the package documentation).
const (
	// maxNameLen is the longest agent or extension name, in bytes.
	maxNameLen = 64
	// maxInstanceKeyLen is the longest instance key, in bytes.
	maxInstanceKeyLen = 256
)

const (
	nameRule = "want [a-zA-Z0-9_.-]{1,64}"
	keyRule  = "want 1 to 256 bytes of UTF-8 without NUL"
	// quoteMax is how many bytes of a refused name an error shows.
	quoteMax = 80
)

// nameError is a refused name. Its text is
//
//	store: invalid <kind> "<value>": <reason> (<rule>)
type nameError struct {
	kind, value, reason, rule string
}

func (e *nameError) Error() string {
	return "store: invalid " + e.kind + " " + quoteShort(e.value) + ": " + e.reason + " (" + e.rule + ")"
}

// Is makes errors.Is(err, ErrInvalidName) hold.
func (e *nameError) Is(target error) bool { return target == ErrInvalidName }

// ValidateName reports whether s is a valid agent or extension name:
// 1 to 64 bytes from [a-zA-Z0-9_.-]. kind names what s is in the error, for
// example "agent name" or "extension name":
//
//	store: invalid agent name "a b": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})
//
// The error matches [ErrInvalidName].
func ValidateName(kind, s string) error {
	switch {
	case s == "":
		return &nameError{kind, s, "empty", nameRule}
	case len(s) > maxNameLen:
		return &nameError{kind, s, strconv.Itoa(len(s)) + " bytes long", nameRule}
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			_, w := utf8.DecodeRuneInString(s[i:])
			reason := fmt.Sprintf("character %q at offset %d not allowed", s[i:i+w], i)
			return &nameError{kind, s, reason, nameRule}
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-'
}

// ValidateEnvName reports whether s is a valid environment variable name,
// as secrets and API key variables are named: 1 to 64 bytes of letters,
// digits and '_', not starting with a digit:
//
//	store: invalid secret name "1KEY": starts with a digit (want [A-Za-z_][A-Za-z0-9_]{0,63})
//
// kind names what s is in the error. The error matches [ErrInvalidName].
func ValidateEnvName(kind, s string) error {
	const rule = "want [A-Za-z_][A-Za-z0-9_]{0,63}"
	switch {
	case s == "":
		return &nameError{kind, s, "empty", rule}
	case len(s) > maxNameLen:
		return &nameError{kind, s, strconv.Itoa(len(s)) + " bytes long", rule}
	case '0' <= s[0] && s[0] <= '9':
		return &nameError{kind, s, "starts with a digit", rule}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			_, w := utf8.DecodeRuneInString(s[i:])
			return &nameError{kind, s, fmt.Sprintf("character %q at offset %d not allowed", s[i:i+w], i), rule}
		}
	}
	return nil
}

// ValidateInstanceKey reports whether s is a valid instance key: 1 to 256
// bytes of valid UTF-8 without NUL. The error reads
//
//	store: invalid instance key "a\x00b": NUL at offset 1 (want 1 to 256 bytes of UTF-8 without NUL)
//
// and matches [ErrInvalidName].
func ValidateInstanceKey(s string) error {
	const kind = "instance key"
	switch {
	case s == "":
		return &nameError{kind, s, "empty", keyRule}
	case len(s) > maxInstanceKeyLen:
		return &nameError{kind, s, strconv.Itoa(len(s)) + " bytes long", keyRule}
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return &nameError{kind, s, "NUL at offset " + strconv.Itoa(i), keyRule}
		}
	}
	if !utf8.ValidString(s) {
		return &nameError{kind, s, "not valid UTF-8", keyRule}
	}
	return nil
}

// validate checks the agent name and instance key a store method receives.
func validate(agent, key string) error {
	if err := ValidateName("agent name", agent); err != nil {
		return err
	}
	return ValidateInstanceKey(key)
}

// validateState checks the names the state methods receive.
func validateState(agent, key, extension string) error {
	if err := validate(agent, key); err != nil {
		return err
	}
	return ValidateName("extension name", extension)
}

// quoteShort quotes s, cutting it to quoteMax bytes so that an error about
// an overlong name stays readable.
func quoteShort(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:quoteMax]) + "..."
}

// checked is every store method's preamble once the store is known open:
// the argument check's error, invalid, if there is one, else ctx's.
func checked(ctx context.Context, invalid error) error {
	if invalid != nil {
		return invalid
	}
	return ctx.Err()
}

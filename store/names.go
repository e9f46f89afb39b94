package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
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
	nameRule      = "want [a-zA-Z0-9_.-]{1,64}"
	keyRule       = `want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or ".."`
	storedKeyRule = "want 1 to 256 bytes of UTF-8 without NUL"
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

// ValidateInstanceKey reports whether s is a valid new instance key: 1 to
// 256 bytes of printable UTF-8 (as [unicode.IsPrint] says: letters, marks,
// numbers, punctuation, symbols and the ASCII space), without '/', '\',
// '*' or '>', with no space at either end, and neither "." nor "..". The
// error says what is wrong and where:
//
//	store: invalid instance key "a/b": character "/" at offset 1 not allowed (want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")
//
// and matches [ErrInvalidName].
//
// A key is shown in logs, listings and the web console, put in URL paths,
// and may one day name a file or a NATS subject; the rule refuses what
// would read there as something else. Control characters (a newline, a
// tab, DEL) and the invisible ones (bidirectional overrides, zero-width
// spaces, a no-break space) make two keys look alike or a listing lie;
// '/' and '\' are path separators, and "." and ".." are directories;
// '*' and '>' are NATS wildcards; a space at an end is invisible. What
// people name conversations by stays valid: "alice@example.com",
// "user:42", "chat #3", "ключ".
//
// The runtime checks every key that comes from outside with it: the keys
// of its Send and Ask, and so of the HTTP API, the CLI and MCP, and of an
// agent call. The store itself holds any key of 1 to 256 bytes of
// UTF-8 without NUL, the older rule, so that instances stored under it
// stay readable and their tasks and pending items finish.
func ValidateInstanceKey(s string) error {
	const kind = "instance key"
	switch {
	case s == "":
		return &nameError{kind, s, "empty", keyRule}
	case len(s) > maxInstanceKeyLen:
		return &nameError{kind, s, strconv.Itoa(len(s)) + " bytes long", keyRule}
	case s == "." || s == "..":
		return &nameError{kind, s, strconv.Quote(s) + " is not allowed as a whole key", keyRule}
	}
	for i, r := range s {
		var what string
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			return &nameError{kind, s, "invalid UTF-8 at offset " + strconv.Itoa(i), keyRule}
		case unicode.IsControl(r):
			what = "control character"
		case r == '/' || r == '\\' || r == '*' || r == '>':
			what = "character"
		case r == ' ' && i == 0:
			return &nameError{kind, s, "space at offset 0, at the start, not allowed", keyRule}
		case r == ' ' && i == len(s)-1:
			return &nameError{kind, s, "space at offset " + strconv.Itoa(i) + ", at the end, not allowed", keyRule}
		case !unicode.IsPrint(r):
			what = "unprintable character"
		default:
			continue
		}
		return &nameError{kind, s, fmt.Sprintf("%s %q at offset %d not allowed", what, string(r), i), keyRule}
	}
	return nil
}

// ValidateStoredKey reports whether s is a key the store holds: 1 to 256
// bytes of valid UTF-8 without NUL, which separates the parts of a key.
// It is looser than [ValidateInstanceKey], the rule for new keys, so that
// instances stored before that rule stay readable. Every store method
// applies it to the instance key it receives, and a backend to a key it
// reads back from its storage. Its error matches [ErrInvalidName].
func ValidateStoredKey(s string) error {
	const kind = "instance key"
	switch {
	case s == "":
		return &nameError{kind, s, "empty", storedKeyRule}
	case len(s) > maxInstanceKeyLen:
		return &nameError{kind, s, strconv.Itoa(len(s)) + " bytes long", storedKeyRule}
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return &nameError{kind, s, "NUL at offset " + strconv.Itoa(i), storedKeyRule}
	}
	if !utf8.ValidString(s) {
		return &nameError{kind, s, "not valid UTF-8", storedKeyRule}
	}
	return nil
}

// validate checks the agent name and instance key a store method receives.
func validate(agent, key string) error {
	if err := ValidateName("agent name", agent); err != nil {
		return err
	}
	return ValidateStoredKey(key)
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

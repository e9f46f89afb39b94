package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/store"
)

const (
	nameRule = "(want [a-zA-Z0-9_.-]{1,64})"
	envRule  = "(want [A-Za-z_][A-Za-z0-9_]{0,63})"
	keyRule  = `(want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")`
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		kind string
		in   string
		want string // "" for valid
	}{
		{"simple", "agent name", "support", ""},
		{"every allowed byte", "agent name", "azAZ09_.-", ""},
		{"64 bytes", "agent name", strings.Repeat("a", 64), ""},
		{"empty", "agent name", "", `store: invalid agent name "": empty ` + nameRule},
		{"65 bytes", "agent name", strings.Repeat("a", 65),
			`store: invalid agent name "` + strings.Repeat("a", 65) + `": 65 bytes long ` + nameRule},
		{"long name quoted short", "agent name", strings.Repeat("b", 100),
			`store: invalid agent name "` + strings.Repeat("b", 80) + `"...: 100 bytes long ` + nameRule},
		{"space", "agent name", "a b", `store: invalid agent name "a b": character " " at offset 1 not allowed ` + nameRule},
		{"slash", "extension name", "ext/1", `store: invalid extension name "ext/1": character "/" at offset 3 not allowed ` + nameRule},
		{"non-ASCII", "extension name", "mémo", `store: invalid extension name "mémo": character "é" at offset 1 not allowed ` + nameRule},
		{"NUL", "agent name", "a\x00", `store: invalid agent name "a\x00": character "\x00" at offset 1 not allowed ` + nameRule},
		{"invalid UTF-8", "agent name", "a\xff", `store: invalid agent name "a\xff": character "\xff" at offset 1 not allowed ` + nameRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNameError(t, store.ValidateName(tt.kind, tt.in), tt.want)
		})
	}
}

func TestValidateInstanceKey(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"simple", "ticket-42", ""},
		{"an email", "alice@example.com", ""},
		{"user:42", "user:42", ""},
		{"spaces inside", "user 7 chat #3", ""},
		{"dots inside", "v1.2..3", ""},
		{"a dot and more", ".profile", ""},
		{"three dots", "...", ""},
		{"punctuation", `a-b_c+d=e,f;g!h?i#j%k&l'm"n(o)p[q]r{s}t|u~v^w$x<`, ""},
		{"unicode", "ключ", ""},
		{"emoji", "chat 💬", ""},
		{"256 bytes", strings.Repeat("é", 128), ""},
		{"empty", "", `store: invalid instance key "": empty ` + keyRule},
		{"257 bytes", strings.Repeat("k", 257),
			`store: invalid instance key "` + strings.Repeat("k", 80) + `"...: 257 bytes long ` + keyRule},
		{"NUL", "k\x00x", `store: invalid instance key "k\x00x": control character "\x00" at offset 1 not allowed ` + keyRule},
		{"newline", "a\nb", `store: invalid instance key "a\nb": control character "\n" at offset 1 not allowed ` + keyRule},
		{"tab", "a\tb", `store: invalid instance key "a\tb": control character "\t" at offset 1 not allowed ` + keyRule},
		{"carriage return", "a\r", `store: invalid instance key "a\r": control character "\r" at offset 1 not allowed ` + keyRule},
		{"DEL", "a\x7f", `store: invalid instance key "a\x7f": control character "\x7f" at offset 1 not allowed ` + keyRule},
		{"C1 control", "a\u0085", `store: invalid instance key "a\u0085": control character "\u0085" at offset 1 not allowed ` + keyRule},
		{"right-to-left override", "abc\u202Etxt.exe", `store: invalid instance key "abc\u202etxt.exe": unprintable character "\u202e" at offset 3 not allowed ` + keyRule},
		{"bidi isolate", "\u2067x", `store: invalid instance key "\u2067x": unprintable character "\u2067" at offset 0 not allowed ` + keyRule},
		{"zero-width space", "ad\u200bmin", `store: invalid instance key "ad\u200bmin": unprintable character "\u200b" at offset 2 not allowed ` + keyRule},
		{"byte order mark", "\ufeffk", `store: invalid instance key "\ufeffk": unprintable character "\ufeff" at offset 0 not allowed ` + keyRule},
		{"no-break space", "a\u00a0b", `store: invalid instance key "a\u00a0b": unprintable character "\u00a0" at offset 1 not allowed ` + keyRule},
		{"line separator", "a\u2028b", `store: invalid instance key "a\u2028b": unprintable character "\u2028" at offset 1 not allowed ` + keyRule},
		{"slash", "a/b", `store: invalid instance key "a/b": character "/" at offset 1 not allowed ` + keyRule},
		{"backslash", `a\b`, `store: invalid instance key "a\\b": character "\\" at offset 1 not allowed ` + keyRule},
		{"NATS wildcard >", "a>b", `store: invalid instance key "a>b": character ">" at offset 1 not allowed ` + keyRule},
		{"NATS wildcard *", "*", `store: invalid instance key "*": character "*" at offset 0 not allowed ` + keyRule},
		{"dot", ".", `store: invalid instance key ".": "." is not allowed as a whole key ` + keyRule},
		{"dot dot", "..", `store: invalid instance key "..": ".." is not allowed as a whole key ` + keyRule},
		{"leading space", " k", `store: invalid instance key " k": space at offset 0, at the start, not allowed ` + keyRule},
		{"trailing space", "k ", `store: invalid instance key "k ": space at offset 1, at the end, not allowed ` + keyRule},
		{"only a space", " ", `store: invalid instance key " ": space at offset 0, at the start, not allowed ` + keyRule},
		{"invalid UTF-8", "k\xff", `store: invalid instance key "k\xff": invalid UTF-8 at offset 1 ` + keyRule},
		{"cut rune", "\xc3", `store: invalid instance key "\xc3": invalid UTF-8 at offset 0 ` + keyRule},
		{"the first fault is named", "a/b\n", `store: invalid instance key "a/b\n": character "/" at offset 1 not allowed ` + keyRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNameError(t, store.ValidateInstanceKey(tt.in), tt.want)
		})
	}
}

// FuzzValidateInstanceKey checks the rule's promises on any string: a key
// it accepts is 1 to 256 bytes of printable UTF-8 that no path, URL or
// NATS subject reads as structure, and the store holds it; a key it
// refuses gets an error that names the rule and matches ErrInvalidName.
func FuzzValidateInstanceKey(f *testing.F) {
	for _, s := range []string{"ticket-42", "alice@example.com", "user:42", "a/b", "..", ".", " k", "k ",
		"a\nb", "a>b", "*", "abc\u202Etxt", "\xc3", "k\x00", "ключ", strings.Repeat("é", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := store.ValidateInstanceKey(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidName) || !strings.HasPrefix(err.Error(), "store: invalid instance key ") || !strings.HasSuffix(err.Error(), " "+keyRule) {
				t.Fatalf("ValidateInstanceKey(%q) = %v", s, err)
			}
			return
		}
		switch {
		case len(s) < 1 || len(s) > 256:
			t.Fatalf("accepted %q: %d bytes", s, len(s))
		case !utf8.ValidString(s):
			t.Fatalf("accepted %q: not UTF-8", s)
		case strings.ContainsAny(s, "/\\*>"):
			t.Fatalf("accepted %q: a path separator or a NATS wildcard", s)
		case s == "." || s == "..":
			t.Fatalf("accepted %q", s)
		case s[0] == ' ' || s[len(s)-1] == ' ':
			t.Fatalf("accepted %q: space at an end", s)
		}
		for i, r := range s {
			if !unicode.IsPrint(r) {
				t.Fatalf("accepted %q: %U at offset %d is not printable", s, r, i)
			}
		}
		// What the rule accepts, the store holds.
		st := store.NewMemory()
		defer st.Close()
		if err := st.Commit(context.Background(), "a", s, store.Batch{Meta: &store.Meta{NextSeq: 1}}); err != nil {
			t.Fatalf("the store refuses %q: %v", s, err)
		}
	})
}

// checkNameError checks err against want: nil for "", else that exact text,
// matching store.ErrInvalidName.
func checkNameError(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %s", want)
	}
	if err.Error() != want {
		t.Fatalf("error\n got: %s\nwant: %s", err, want)
	}
	if !errors.Is(err, store.ErrInvalidName) {
		t.Fatalf("error %v does not match ErrInvalidName", err)
	}
}

func TestValidateEnvName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"OPENAI_API_KEY", ""},
		{"_x9", ""},
		{strings.Repeat("K", 64), ""},
		{"", `store: invalid secret name "": empty ` + envRule},
		{"1KEY", `store: invalid secret name "1KEY": starts with a digit ` + envRule},
		{"A-B", `store: invalid secret name "A-B": character "-" at offset 1 not allowed ` + envRule},
		{"A.B", `store: invalid secret name "A.B": character "." at offset 1 not allowed ` + envRule},
		{"KÉY", `store: invalid secret name "KÉY": character "É" at offset 1 not allowed ` + envRule},
		{strings.Repeat("K", 65), `store: invalid secret name "` + strings.Repeat("K", 65) + `": 65 bytes long ` + envRule},
	} {
		err := store.ValidateEnvName("secret name", tt.in)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("ValidateEnvName(%q) = %v, want %q", tt.in, err, tt.want)
		}
		if err != nil && !errors.Is(err, store.ErrInvalidName) {
			t.Errorf("ValidateEnvName(%q): %v does not match ErrInvalidName", tt.in, err)
		}
	}
}

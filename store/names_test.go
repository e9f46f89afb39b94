package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

const (
	nameRule = "(want [a-zA-Z0-9_.-]{1,64})"
	envRule  = "(want [A-Za-z_][A-Za-z0-9_]{0,63})"
	keyRule  = "(want 1 to 256 bytes of UTF-8 without NUL)"
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
		{"spaces and punctuation", "user 7 / chat #3", ""},
		{"unicode", "ключ", ""},
		{"256 bytes", strings.Repeat("é", 128), ""},
		{"empty", "", `store: invalid instance key "": empty ` + keyRule},
		{"257 bytes", strings.Repeat("k", 257),
			`store: invalid instance key "` + strings.Repeat("k", 80) + `"...: 257 bytes long ` + keyRule},
		{"NUL", "k\x00x", `store: invalid instance key "k\x00x": NUL at offset 1 ` + keyRule},
		{"invalid UTF-8", "k\xff", `store: invalid instance key "k\xff": not valid UTF-8 ` + keyRule},
		{"cut rune", "\xc3", `store: invalid instance key "\xc3": not valid UTF-8 ` + keyRule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNameError(t, store.ValidateInstanceKey(tt.in), tt.want)
		})
	}
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

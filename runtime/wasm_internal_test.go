package runtime

import "testing"

// TestGuestConfigError: a guest's init failure that spells a config
// problem as "config: PATH: MESSAGE" is found, wherever it stands in the
// error's text; any other failure is not one.
func TestGuestConfigError(t *testing.T) {
	tests := []struct {
		text, path, msg string
		ok              bool
	}{
		{`setup: config: $.block: lists no pattern`, "$.block", "lists no pattern", true},
		{`config: $: expected a mapping, found a list`, "$", "expected a mapping, found a list", true},
		{`ganglion_init failed: setup: config: $.rules[2].name: unknown field "nme" (known: name)`, "$.rules[2].name", `unknown field "nme" (known: name)`, true},
		{`setup: config: $.named["odd key"]: too long`, `$.named["odd key"]`, "too long", true},
		{`setup: config: block lists no pattern`, "", "", false},
		{`setup: myconfig: $.a: x`, "", "", false},
		{`setup: config: $.a:`, "", "", false},
		{`setup: config: $.a b: x`, "", "", false},
		{`setup: no luck`, "", "", false},
	}
	for _, tt := range tests {
		path, msg, ok := guestConfigError(tt.text)
		if path != tt.path || msg != tt.msg || ok != tt.ok {
			t.Errorf("guestConfigError(%q) = %q, %q, %v; want %q, %q, %v", tt.text, path, msg, ok, tt.path, tt.msg, tt.ok)
		}
	}
}

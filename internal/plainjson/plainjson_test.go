package plainjson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/plainjson"
)

// escaped is a type whose MarshalJSON escapes as json.Marshal does.
type escaped string

func (e escaped) MarshalJSON() ([]byte, error) { return json.Marshal(string(e)) }

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"a string", "echo a > b && cat < b", `"echo a > b && cat < b"`},
		{"a struct, in field order", struct {
			Command string `json:"command"`
			Args    []int  `json:"args"`
		}{"x <y>", []int{1, 2}}, `{"command":"x <y>","args":[1,2]}`},
		{"a raw message escaped already", json.RawMessage(`{"c": "a \u003e b \u0026\u0026 c"}`), `{"c":"a > b && c"}`},
		{"a MarshalJSON that escapes", map[string]escaped{"k": "<&>"}, `{"k":"<&>"}`},
		{"an escaped backslash stays", `\u003c`, `"\\u003c"`},
		{"other escapes stay", "line\n\ttab \u2028 \"q\" \x01", `"line\n\ttab \u2028 \"q\" \u0001"`},
		{"no trailing newline", 3, `3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plainjson.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := plainjson.Marshal(make(chan int)); err == nil || err.Error() != "json: unsupported type: chan int" {
		t.Errorf("Marshal of a channel: %v", err)
	}
}

func TestCompact(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"spaces and escapes", "{ \"command\" : \"echo edited \\u003e out.txt \\u0026\\u0026 cat \\u003C x\" ,\n \"n\": 1.50 }",
			`{"command":"echo edited > out.txt && cat < x","n":1.50}`},
		{"key order kept", `{"z":1,"a":2}`, `{"z":1,"a":2}`},
		{"escaped backslashes", `["\\u003c", "\\\u003c", "\\\\u0026"]`, `["\\u003c","\\<","\\\\u0026"]`},
		{"other unicode escapes", `"\u0041\u00e9\u2028\u003d"`, `"\u0041\u00e9\u2028\u003d"`},
		{"a short escape at the end", `"\u003"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plainjson.Compact([]byte(tt.src))
			if tt.want == "" {
				if err == nil {
					t.Errorf("Compact(%s) = %s, want an error", tt.src, got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("Compact(%s) = %s, %v; want %s", tt.src, got, err, tt.want)
			}
		})
	}
	if _, err := plainjson.Compact([]byte(`{"a":`)); err == nil || err.Error() != "unexpected end of JSON input" {
		t.Errorf("Compact of a cut text: %v", err)
	}
}

// htmlEscape matches an HTML escape that is one: after an even number of
// backslashes.
var htmlEscape = regexp.MustCompile(`(^|[^\\])(\\\\)*\\u00(3[cCeE]|26)`)

// FuzzCompact: for any JSON text, Compact returns JSON that decodes to the
// same value, holds no HTML escape, and is its own Compact.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{
		`{"a":"<>&"}`, `"\u003c\u003E\u0026"`, `"\\u003c"`, `"\\\u003e"`, `[1, 2.50, {"k": "\u0026amp;"}]`,
		`{"command":"echo edited \u003e out.txt"}`, `"\u2028\ud83d\ude00"`, `{`, `"\u003"`, `null`, ` [ ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := plainjson.Compact(src)
		if !json.Valid(src) {
			if err == nil {
				t.Fatalf("Compact(%q) = %q for a text that is not JSON", src, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("Compact(%q): %v", src, err)
		}
		if !json.Valid(got) {
			t.Fatalf("Compact(%q) = %q, not JSON", src, got)
		}
		decode := func(b []byte) any {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				t.Fatalf("decode %q: %v", b, err)
			}
			return v
		}
		if a, b := decode(src), decode(got); !reflect.DeepEqual(a, b) {
			t.Fatalf("Compact(%q) = %q decodes to %#v, not %#v", src, got, b, a)
		}
		if htmlEscape.Match(got) {
			t.Fatalf("Compact(%q) = %q holds an HTML escape", src, got)
		}
		if again, _ := plainjson.Compact(got); !bytes.Equal(again, got) {
			t.Fatalf("Compact(%q) = %q, not %q", got, again, got)
		}
	})
}

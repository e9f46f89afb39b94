package wasm

import "testing"

// TestDecodeStrict: what a guest hands the host is one JSON value, with
// no unknown field and nothing after it but white space.
func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"one value", `{"text": "x"}`, ""},
		{"white space after", "{\"text\": \"x\"} \n\t", ""},
		{"a second value", `{"text": "x"} {"text": "y"}`, "trailing data after the JSON value"},
		{"a closing brace after", `{"text": "x"}}`, "trailing data after the JSON value"},
		{"a closing bracket after", `{"text": "x"}]`, "trailing data after the JSON value"},
		{"a word after", `{"text": "x"} x`, "trailing data after the JSON value"},
		{"unknown field", `{"txt": "x"}`, `json: unknown field "txt"`},
		{"cut short", `{"text": `, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct{ Text string }
			err := decodeStrict([]byte(tt.in), &v)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("decodeStrict(%q) = %v, want no error", tt.in, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("decodeStrict(%q) = %v, want %s", tt.in, err, tt.want)
			}
		})
	}
}

package plainjson

import (
	"bytes"
	"encoding/json"
)

// Marshal returns the JSON encoding of v, as json.Marshal does, but
// without the HTML escapes, also where v holds JSON that was escaped
// already (a json.RawMessage, the output of a MarshalJSON method).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return unescape(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// Compact returns the JSON text src without insignificant space, as
// json.Compact does, and without the HTML escapes it holds. It returns
// json.Compact's error for a src that is not JSON.
func Compact(src []byte) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, src); err != nil {
		return nil, err
	}
	return unescape(b.Bytes()), nil
}

// unescape replaces, in place, the escapes \u003c, \u003e and \u0026 (hex
// digits of either case) of JSON text b with <, > and &. In JSON a
// backslash occurs only in strings, where it starts an escape, so reading
// escape by escape never mistakes an escaped backslash followed by
// "u003c" for one.
func unescape(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := b[:0] // never longer than what it has read
	for i := 0; i < len(b); {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			i++
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := html(b[i+2 : i+6]); ok {
				out = append(out, c)
				i += 6
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i += 2
	}
	return out
}

// html returns the character the four hex digits h of an escape stand
// for, when it is one encoding/json escapes for HTML.
func html(h []byte) (byte, bool) {
	if h[0] != '0' || h[1] != '0' {
		return 0, false
	}
	switch {
	case h[2] == '3' && (h[3] == 'c' || h[3] == 'C'):
		return '<', true
	case h[2] == '3' && (h[3] == 'e' || h[3] == 'E'):
		return '>', true
	case h[2] == '2' && h[3] == '6':
		return '&', true
	}
	return 0, false
}

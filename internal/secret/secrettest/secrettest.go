// Package secrettest finds secret values in what a test collected (logs,
// events, stored bytes), for the canary tests of the packages that handle
// provided secrets. It looks harder than a [secret.Redactor] masks: it
// decodes every run of base64, hex and percent escapes it meets, at every
// alignment, and every JSON string, so a test that passes shows that no
// value got through in any of those forms, whole.
package secrettest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Forms returns v and the encodings of v that [reveals] looks for as they
// are: base64 (standard and URL-safe, padded or not), hex (lower and upper
// case), percent escapes (query, strict, path) and JSON string escapes
// (with and without HTML escaping).
func Forms(v string) []string {
	b := []byte(v)
	forms := []string{
		v,
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
		hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		jsonEscape(v, true), jsonEscape(v, false),
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

func jsonEscape(v string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v)
	return strings.Trim(strings.TrimSpace(buf.String()), `"`)
}

// reveals returns how text shows one of values, or "" if it shows none: as
// one of its [Forms], or once decoded from a run of base64 (at each of the
// four character alignments, so that a value inside a longer encoded text
// counts), of hex (at both alignments), or of percent escapes.
func reveals(text string, values []string) string {
	for _, v := range values {
		for _, f := range Forms(v) {
			if strings.Contains(text, f) {
				return "the form " + f + " of " + v
			}
		}
	}
	holds := func(b []byte) string {
		for _, v := range values {
			if bytes.Contains(b, []byte(v)) {
				return v
			}
		}
		return ""
	}
	b64 := strings.NewReplacer("-", "+", "_", "/")
	for _, run := range runs(text, isBase64) {
		run = b64.Replace(run)
		for off := range 4 {
			s := run[off:]
			if len(s)%4 == 1 {
				s = s[:len(s)-1] // a lone last character encodes no whole byte
			}
			if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
				if v := holds(b); v != "" {
					return "the base64 " + s + " of " + v
				}
			}
		}
	}
	for _, run := range runs(text, isHex) {
		for off := range 2 {
			s := run[off:]
			if b, err := hex.DecodeString(s[:len(s)/2*2]); err == nil {
				if v := holds(b); v != "" {
					return "the hex " + s + " of " + v
				}
			}
		}
	}
	for tok := range strings.FieldsFuncSeq(text, func(r rune) bool { return strings.ContainsRune(" \t\r\n\"'<>", r) }) {
		if !strings.Contains(tok, "%") {
			continue
		}
		for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
			if u, err := unescape(tok); err == nil {
				if v := holds([]byte(u)); v != "" {
					return "the percent escapes " + tok + " of " + v
				}
			}
		}
	}
	return ""
}

func isBase64(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("+/-_", r)
}

func isHex(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' }

// runs returns the runs of at least 8 characters of text that in accepts.
func runs(text string, in func(rune) bool) []string {
	var out []string
	for run := range strings.FieldsFuncSeq(text, func(r rune) bool { return !in(r) }) {
		if len(run) >= 8 {
			out = append(out, run)
		}
	}
	return out
}

// Check reports, as errors of tb, where v reveals one of values (see
// [reveals]). v is a string or []byte, taken as it is and, line by line,
// as JSON; or any other value, which is marshalled to JSON first. In
// decoded JSON every string is checked, and checked again as JSON if it is
// some: a value can hide behind JSON escapes, two levels deep in a JSON
// string that holds JSON. what names v in the errors, which say at most
// three leaks.
func Check(tb testing.TB, what string, v any, values []string) {
	tb.Helper()
	var raw string
	switch x := v.(type) {
	case string:
		raw = x
	case []byte:
		raw = string(x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		raw = string(b)
	}
	leaks := 0
	report := func(how, in string) {
		tb.Helper()
		if leaks++; leaks <= 3 {
			tb.Errorf("%s reveals a secret (%s) in:\n%s", what, how, cut(in))
		}
	}
	if how := reveals(raw, values); how != "" {
		report(how, raw)
	}
	var walk func(x any)
	walk = func(x any) {
		tb.Helper()
		switch x := x.(type) {
		case string:
			if how := reveals(x, values); how != "" {
				report(how, x)
			}
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				walk(inner)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, line := range strings.Split(raw, "\n") { // not an iterator: its body would be no helper
		var decoded any
		if json.Unmarshal([]byte(line), &decoded) == nil {
			walk(decoded)
		}
	}
}

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 1000 {
		return s[:1000] + "…"
	}
	return s
}

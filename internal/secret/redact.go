package secret

import (
	"cmp"
	"slices"
	"strings"
)

// MinRedactLen is the length, in bytes, of the shortest value a [Redactor]
// masks. Masking shorter values would mangle ordinary text: a secret "abc"
// or "42" occurs in words and numbers everywhere. The runtime therefore does
// not count on redaction to hide a value shorter than this.
const MinRedactLen = 4

// Redactor replaces secret values in text with "[secret NAME]". Make one
// with [NewRedactor]. A nil *Redactor masks nothing.
//
// It matches a value's exact bytes only: a value in another encoding (JSON
// escaped, base64, URL encoded) or split across two calls is not masked.
//
// A Redactor is safe for concurrent use.
type Redactor struct {
	// secrets by length, longest first, then by value; no two share a
	// value. All are at least MinRedactLen bytes long.
	secrets []namedValue
}

type namedValue struct {
	name, value string
	label       string // "[secret NAME]"
}

// NewRedactor returns a Redactor for secrets, a map from name to value.
// Values shorter than [MinRedactLen] bytes are ignored (see there). Of names
// that share a value, the first in byte order labels it.
func NewRedactor(secrets map[string]string) *Redactor {
	r := &Redactor{}
	for name, value := range secrets {
		if len(value) >= MinRedactLen {
			r.secrets = append(r.secrets, namedValue{name: name, value: value})
		}
	}
	slices.SortFunc(r.secrets, func(a, b namedValue) int {
		return cmp.Or(
			cmp.Compare(len(b.value), len(a.value)),
			strings.Compare(a.value, b.value),
			strings.Compare(a.name, b.name))
	})
	r.secrets = slices.CompactFunc(r.secrets, func(a, b namedValue) bool { return a.value == b.value })
	for i := range r.secrets {
		r.secrets[i].label = "[secret " + r.secrets[i].name + "]"
	}
	return r
}

// Empty reports whether r masks nothing: it is nil or has no value of at
// least [MinRedactLen] bytes.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// Redact returns s with every occurrence of every value replaced by
// "[secret NAME]". When s holds no value, it returns s itself without
// allocating.
//
// Where occurrences overlap, the whole stretch they cover is replaced. A
// value inside a longer one's occurrence leaves no trace: with values
// "sk-abcd1234" (A) and "abcd" (B), "key sk-abcd1234" becomes
// "key [secret A]". Partly overlapping occurrences of different values get
// one label each, in order: with "abcdef" (A) and "defghi" (B),
// "abcdefghi" becomes "[secret A][secret B]".
func (r *Redactor) Redact(s string) string {
	if r.Empty() {
		return s
	}
	first := -1 // index of the first secret found, if any
	for i, sv := range r.secrets {
		if strings.Contains(s, sv.value) {
			first = i
			break
		}
	}
	if first < 0 {
		return s
	}

	// Every occurrence, overlapping ones included, as [start, end); a
	// value's overlapping occurrences are merged into one.
	type match struct {
		start, end int
		secret     int // index in r.secrets
	}
	var matches []match
	for i := first; i < len(r.secrets); i++ {
		v := r.secrets[i].value
		for off := 0; off <= len(s)-len(v); {
			j := strings.Index(s[off:], v)
			if j < 0 {
				break
			}
			start := off + j
			if n := len(matches); n > 0 && matches[n-1].secret == i && matches[n-1].end > start {
				matches[n-1].end = start + len(v) // overlaps itself: "aaaa" in "aaaaaa"
			} else {
				matches = append(matches, match{start, start + len(v), i})
			}
			off = start + 1
		}
	}
	// By start, then longest first: a match that begins inside the stretch
	// covered so far and ends within it adds nothing.
	slices.SortFunc(matches, func(a, b match) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end))
	})

	var b strings.Builder
	b.Grow(len(s))
	done := 0        // s[:done] is written
	end := -1        // end of the stretch being covered; -1 when none
	var labels []int // secrets labelling that stretch
	flush := func() {
		for _, i := range labels {
			b.WriteString(r.secrets[i].label)
		}
		labels = labels[:0]
		done = end
	}
	for _, m := range matches {
		switch {
		case end >= 0 && m.start < end: // overlaps the stretch
			if m.end > end {
				end = m.end
				if !slices.Contains(labels, m.secret) {
					labels = append(labels, m.secret)
				}
			}
			continue
		case end >= 0:
			flush()
		}
		b.WriteString(s[done:m.start])
		end = m.end
		labels = append(labels, m.secret)
	}
	flush()
	b.WriteString(s[done:])
	return b.String()
}

package secret

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// minRedactLen is the length, in bytes, of the shortest value a [Redactor]
// masks, and of the shortest encoded form it looks for. Masking shorter
// values would mangle ordinary text: a secret "abc" or "42" occurs in words
// and numbers everywhere. The runtime therefore does not count on redaction
// to hide a value shorter than this.
const minRedactLen = 4

// Redactor replaces secret values in text with "[secret NAME]". Make one
// with [NewRedactor]. A nil *Redactor masks nothing.
//
// # What it catches
//
// Besides each value's exact bytes, it masks the forms a value commonly
// takes on its way through a command, a URL or a serialisation:
//
//   - base64, standard and URL-safe, padded or not; and, since a value
//     inside a longer text that is base64 encoded as a whole lands on one
//     of three alignments, the characters that encode only the value's
//     bytes at each alignment (the one or two characters on either edge,
//     which mix in neighbouring bytes, stay, so up to 4 bits of the value
//     may show at each end);
//   - hex, lower and upper case;
//   - percent escapes as a query (space as "+"), as strict RFC 3986 (space
//     as "%20"), as a path segment and as a URL's userinfo, with upper case
//     hex digits as Go, Python, JavaScript and curl write them;
//   - JSON string escapes, with and without HTML escaping, and with "/"
//     escaped as "\/";
//   - the password of every URL in the value (scheme://user:PASSWORD@host,
//     a service URL), unescaped and as the value writes it, in all the
//     forms above: a URL rewritten around its password (another host,
//     another user, another path) still has the password masked.
//
// Forms shorter than [minRedactLen] are not looked for, nor are the
// passwords of URLs that short.
//
// # What it does not catch
//
// Redaction works on one text at a time and on whole forms. It does not
// catch a value split across lines or texts (fold, a base64 encoder that
// wraps its lines at 76 columns when the value's encoding crosses a line
// end, output cut at a size limit, two tool results), encodings nested in
// one another (the hex of the base64 of a value), other encodings
// (base32, rot13, lower case percent escapes, gzip), or a value otherwise
// transformed (reversed, one character per line, spelled out). A command
// that means to reveal a secret it is given can: redaction keeps secrets
// out of sight by accident, it is not a sandbox.
//
// A Redactor is safe for concurrent use.
type Redactor struct {
	// labels of the secrets, "[secret NAME]", by secret index.
	labels []string
	// patterns are every form of every value, longest first, then by
	// text; no two share a text. All are at least minRedactLen bytes long.
	patterns []pattern
	// probes are the patterns that contain no other pattern: text holds a
	// pattern if and only if it holds a probe, so the search for none
	// looks only for these, all at once (see findProbes).
	probes []string
	// window is the length of the text findProbes looks at each time: the
	// length of the shortest probe, at most maxWindow.
	window int
	// shift says, by the hash of the gramLen bytes that end the window,
	// how far the window may move without skipping over a probe.
	shift *[1 << shiftBits]uint8
	// byGram are the probes by their first gramLen bytes.
	byGram map[uint32][]int
}

// The multi-pattern search of findProbes (Wu and Manber's): a window as
// long as the shortest probe moves along the text; the last gramLen bytes
// of the window, hashed, tell how far it may move on, and when that is 0,
// the probes that begin as the window does are compared with the text.
const (
	gramLen   = 4  // bytes hashed at a time; at most minRedactLen
	shiftBits = 12 // the shift table has 1<<shiftBits entries
	maxWindow = 64 // longest window: shifts fit in a byte
)

// pattern is one form of one secret's value.
type pattern struct {
	text   string
	secret int // index in labels
	probe  int // index in probes of one that text contains
}

// NewRedactor returns a Redactor for secrets, a map from name to value.
// Values shorter than [minRedactLen] bytes are ignored (see there). Of names
// whose values share a form, the first in byte order labels it, a value
// itself before a value's encoding.
func NewRedactor(secrets map[string]string) *Redactor {
	r := &Redactor{}
	type candidate struct {
		pattern
		encoded bool // a form other than a value's exact bytes
	}
	var cands []candidate
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		v := secrets[name]
		if len(v) < minRedactLen {
			continue
		}
		i := len(r.labels)
		r.labels = append(r.labels, "[secret "+name+"]")
		for _, base := range append([]string{v}, urlPasswords(v)...) {
			for _, f := range forms(base) {
				if len(f) >= minRedactLen {
					cands = append(cands, candidate{pattern{text: f, secret: i}, f != v})
				}
			}
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(len(b.text), len(a.text)),
			strings.Compare(a.text, b.text),
			compareBool(a.encoded, b.encoded),
			cmp.Compare(a.secret, b.secret))
	})
	cands = slices.CompactFunc(cands, func(a, b candidate) bool { return a.text == b.text })
	r.patterns = make([]pattern, len(cands))
	for i, c := range cands {
		r.patterns[i] = c.pattern
	}
	// Shortest first, so that a pattern is checked against the probes
	// that could be inside it.
	for i := len(r.patterns) - 1; i >= 0; i-- {
		p := r.patterns[i].text
		if !slices.ContainsFunc(r.probes, func(q string) bool { return strings.Contains(p, q) }) {
			r.probes = append(r.probes, p)
		}
	}
	if len(r.probes) == 0 {
		return r
	}
	for i := range r.patterns {
		p := &r.patterns[i]
		p.probe = slices.IndexFunc(r.probes, func(q string) bool { return strings.Contains(p.text, q) })
	}
	r.window = min(len(r.probes[0]), maxWindow)
	r.shift = new([1 << shiftBits]uint8)
	for i := range r.shift {
		r.shift[i] = uint8(r.window - gramLen + 1)
	}
	r.byGram = make(map[uint32][]int)
	for i, p := range r.probes {
		// The window may end with any gram of the probe's first window
		// bytes; the one that ends at q is window-q bytes short of the end.
		for q := gramLen; q <= r.window; q++ {
			h := gramHash(gram(p[q-gramLen:]))
			r.shift[h] = min(r.shift[h], uint8(r.window-q))
		}
		g := gram(p)
		r.byGram[g] = append(r.byGram[g], i)
	}
	return r
}

// gram returns the first gramLen bytes of s, which has that many.
func gram(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func gramHash(g uint32) uint32 { return (g * 0x9e3779b1) >> (32 - shiftBits) }

// findProbes reports whether s holds one of r.probes, which it has, and
// sets bit i of found (a bit set of len(r.probes) bits) for every probe i
// that s holds.
func (r *Redactor) findProbes(s string, found []uint64) bool {
	holds := false
	for end := r.window; end <= len(s); {
		if n := r.shift[gramHash(gram(s[end-gramLen:]))]; n > 0 {
			end += int(n)
			continue
		}
		// The window ends as the first bytes of a probe may.
		start := end - r.window
		for _, i := range r.byGram[gram(s[start:])] {
			if strings.HasPrefix(s[start:], r.probes[i]) {
				holds = true
				found[i/64] |= 1 << (i % 64)
			}
		}
		end++
	}
	return holds
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// forms returns v and its encodings; some may be equal, or short.
func forms(v string) []string {
	b := []byte(v)
	out := []string{
		v,
		hex.EncodeToString(b),
		strings.ToUpper(hex.EncodeToString(b)),
		url.QueryEscape(v),
		strings.ReplaceAll(url.QueryEscape(v), "+", "%20"), // a "+" in v is "%2B" by now
		url.PathEscape(v),
		strings.TrimPrefix(url.UserPassword("", v).String(), ":"),
	}
	plain := jsonEscape(v, false)
	out = append(out, plain, jsonEscape(v, true), strings.ReplaceAll(plain, "/", `\/`))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString(b), enc.WithPadding(base64.NoPadding).EncodeToString(b))
		// At alignment k, v follows k bytes of a longer encoded text:
		// encode it after k zero bytes and keep the characters whose six
		// bits all come from v.
		for k := range 3 {
			e := enc.WithPadding(base64.NoPadding).EncodeToString(append(make([]byte, k), b...))
			out = append(out, e[(8*k+5)/6:(8*k+8*len(b))/6])
		}
	}
	return out
}

// jsonEscape returns v as a JSON string holds it, without the quotes.
func jsonEscape(v string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // a string always encodes
	s := strings.TrimSuffix(buf.String(), "\n")
	return s[1 : len(s)-1]
}

// urlPasswords returns the passwords of the URLs in v
// (scheme://user:PASSWORD@host), as v writes them and unescaped.
func urlPasswords(v string) []string {
	var out []string
	for rest := v; ; {
		_, after, ok := strings.Cut(rest, "://")
		if !ok {
			return out
		}
		rest = after
		authority := after[:strings.IndexFunc(after+"/", func(r rune) bool { return strings.ContainsRune("/?# \t\r\n", r) })]
		at := strings.LastIndexByte(authority, '@')
		if at < 0 {
			continue
		}
		_, pw, ok := strings.Cut(authority[:at], ":")
		if !ok || pw == "" {
			continue
		}
		out = append(out, pw)
		if u, err := url.PathUnescape(pw); err == nil && u != pw {
			out = append(out, u)
		}
	}
}

// empty reports whether r masks nothing: it is nil or has no value of at
// least [minRedactLen] bytes.
func (r *Redactor) empty() bool { return r == nil || len(r.patterns) == 0 }

// Redact returns s with every occurrence of every value, in every form the
// [Redactor] knows, replaced by "[secret NAME]". When s holds none, it
// returns s itself without allocating.
//
// Where occurrences overlap, the whole stretch they cover is replaced. A
// value inside a longer one's occurrence leaves no trace: with values
// "sk-abcd1234" (A) and "abcd" (B), "key sk-abcd1234" becomes
// "key [secret A]". Partly overlapping occurrences of different values get
// one label each, in order: with "abcdef" (A) and "defghi" (B),
// "abcdefghi" becomes "[secret A][secret B]". The forms of one value are
// that value: overlapping forms of one value get one label.
func (r *Redactor) Redact(s string) string {
	if r.empty() {
		return s
	}
	var buf [4]uint64 // up to 256 probes without allocating
	found := buf[:]
	if n := (len(r.probes) + 63) / 64; n > len(buf) {
		found = make([]uint64, n)
	}
	if !r.findProbes(s, found) {
		return s
	}

	// Every occurrence, overlapping ones included, as [start, end); a
	// pattern's overlapping occurrences are merged into one.
	type match struct {
		start, end int
		pattern    int // index in r.patterns
		secret     int // index in r.labels
	}
	var matches []match
	for i, p := range r.patterns {
		if found[p.probe/64]&(1<<(p.probe%64)) == 0 {
			continue // a pattern holds its probe
		}
		v := p.text
		for off := 0; off <= len(s)-len(v); {
			j := strings.Index(s[off:], v)
			if j < 0 {
				break
			}
			start := off + j
			if n := len(matches); n > 0 && matches[n-1].pattern == i && matches[n-1].end > start {
				matches[n-1].end = start + len(v) // overlaps itself: "aaaa" in "aaaaaa"
			} else {
				matches = append(matches, match{start, start + len(v), i, p.secret})
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
			b.WriteString(r.labels[i])
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

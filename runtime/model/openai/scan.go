package openai

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// A small JSON scanner: reads the fields it is asked for, skips the rest.

// parser is a small JSON scanner that reads the fields the provider needs
// from an event and skips the rest without decoding it. It never panics on
// malformed input: it sets err, and every further read fails fast.
type parser struct {
	b   []byte
	i   int
	err error
	buf []byte // scratch for unescaped strings
}

func (p *parser) reset(b []byte) {
	p.b, p.i, p.err = b, 0, nil
}

func (p *parser) fail(msg string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s at offset %d", msg, p.i)
	}
	p.i = len(p.b)
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// null consumes a null.
func (p *parser) null() bool {
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// enter consumes the open of an object ('{') or array ('['). It reports
// false for a null, and for any other value, which it skips.
func (p *parser) enter(open byte) bool {
	switch p.peek() {
	case open:
		p.i++
		return true
	case 'n':
		if p.null() {
			return false
		}
	}
	p.skip()
	return false
}

// more advances to the next element of an object or array that closes
// with close; n counts the elements seen.
func (p *parser) more(close byte, n *int) bool {
	c := p.peek()
	if c == close {
		p.i++
		return false
	}
	if c == 0 {
		p.fail("unexpected end")
		return false
	}
	if *n > 0 {
		if c != ',' {
			p.fail("expected ',' or '" + string(close) + "'")
			return false
		}
		p.i++
		p.ws()
	}
	if p.i >= len(p.b) {
		p.fail("unexpected end")
		return false
	}
	*n++
	return true
}

// key reads an object's key and its colon. The result is valid until the
// next string is read.
func (p *parser) key() []byte {
	raw, esc := p.rawString()
	if esc {
		raw = p.unescape(raw)
	}
	if p.peek() != ':' {
		p.fail("expected ':'")
		return nil
	}
	p.i++
	return raw
}

// rawString reads a string and returns its bytes between the quotes, and
// whether they hold escapes.
func (p *parser) rawString() ([]byte, bool) {
	if p.peek() != '"' {
		p.fail("expected a string")
		return nil, false
	}
	start := p.i + 1
	rest := p.b[start:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		p.fail("unterminated string")
		return nil, false
	}
	bs := bytes.IndexByte(rest[:q], '\\')
	if bs < 0 {
		p.i = start + q + 1
		return rest[:q], false
	}
	for j := bs; j < len(rest); {
		switch rest[j] {
		case '\\':
			j += 2
		case '"':
			p.i = start + j + 1
			return rest[:j], true
		default:
			j++
		}
	}
	p.fail("unterminated string")
	return nil, false
}

// str reads a string, or a null as "". Any other value is skipped as "".
func (p *parser) str() string {
	switch p.peek() {
	case '"':
		raw, esc := p.rawString()
		if esc {
			raw = p.unescape(raw)
		}
		return string(raw)
	case 'n':
		if p.null() {
			return ""
		}
	}
	p.skip()
	return ""
}

// text reads a string, or the JSON text of a number or an object (some
// servers send arguments as an object, codes as numbers); null is "".
func (p *parser) text() string {
	switch p.peek() {
	case '"':
		return p.str()
	case 'n':
		if p.null() {
			return ""
		}
	}
	start := p.i
	p.skip()
	if p.err != nil {
		return ""
	}
	return string(p.b[start:p.i])
}

// unescape decodes the escapes of a string's bytes into the scratch buffer.
// Bytes that are not escapes are copied as they are, valid UTF-8 or not.
func (p *parser) unescape(raw []byte) []byte {
	buf := p.buf[:0]
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			buf = append(buf, raw[i:]...)
			break
		}
		buf = append(buf, raw[i:i+j]...)
		i += j
		if i+1 >= len(raw) {
			p.fail("bad escape")
			break
		}
		c := raw[i+1]
		i += 2
		switch c {
		case '"', '\\', '/':
			buf = append(buf, c)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(raw[i:])
			if !ok {
				p.fail("bad \\u escape")
				p.buf = buf
				return buf
			}
			i += 4
			if utf16IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, ok2 = hex4(raw[i+2:])
				}
				if ok2 && r2 >= 0xDC00 && r2 < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					i += 6
				} else {
					r = utf8.RuneError // a lone half: JSON cannot say more
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.fail("bad escape")
			p.buf = buf
			return buf
		}
	}
	p.buf = buf
	return buf
}

func utf16IsSurrogate(r rune) bool { return r >= 0xD800 && r < 0xE000 }

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// int reads a number as an integer (null is 0).
func (p *parser) int() int64 {
	c := p.peek()
	if c == 'n' && p.null() {
		return 0
	}
	start := p.i
	var n int64
	simple := true
	i := p.i
	if i < len(p.b) && p.b[i] == '-' {
		i++
		simple = false
	}
	for ; i < len(p.b); i++ {
		c := p.b[i]
		if c >= '0' && c <= '9' {
			n = n*10 + int64(c-'0')
			continue
		}
		if c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			simple = false
			continue
		}
		break
	}
	p.i = i
	if i == start {
		p.skip()
		return 0
	}
	if simple && i-start < 19 {
		return n
	}
	f, err := strconv.ParseFloat(string(p.b[start:i]), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		p.fail("bad number")
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// skip skips one value.
func (p *parser) skip() {
	switch c := p.peek(); c {
	case '"':
		p.rawString()
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				p.rawString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return
				}
			}
			p.i++
		}
		p.fail("unterminated value")
	case 't', 'f', 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
				p.i += len(lit)
				return
			}
		}
		p.fail("bad literal")
	case 0:
		p.fail("unexpected end")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			for p.i < len(p.b) && isNumberByte(p.b[p.i]) {
				p.i++
			}
			return
		}
		p.fail("unexpected character")
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// end checks that only spaces are left.
func (p *parser) end() {
	if p.peek() != 0 && p.err == nil {
		p.fail("data after the event")
	}
}

package tool

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// flatSchema is a parameters schema simple enough to check without the
// schema library: an object whose properties are constrained by their type,
// integer minimum/maximum and minLength/maxLength alone, with optional
// required and additionalProperties. Most tool schemas have this shape.
//
// The fast check only ever accepts: whenever it is not certain — an escape in
// a key, a fraction where an integer is wanted, a huge number, any violation
// — it reports false and the library decides, so error texts always come from
// one place.
type flatSchema struct {
	props    map[string]propRule
	required map[string]int // property → bit in the seen mask
	closed   bool           // additionalProperties: false
}

// propRule is what a flat schema asks of one property.
type propRule struct {
	kinds          kindMask
	minLen, maxLen int // in characters; -1: none (strings only)
	min, max       int64
	hasMin, hasMax bool // integer bounds (numbers only)
}

type kindMask uint8

const (
	kString  kindMask = 1 << iota
	kNumber           // any number
	kInteger          // a number without fraction or exponent
	kBoolean
	kNull
	kObject
	kArray
	kAny kindMask = 1<<7 - 1
)

var kindNames = map[string]kindMask{
	"string": kString, "number": kNumber | kInteger, "integer": kInteger,
	"boolean": kBoolean, "null": kNull, "object": kObject, "array": kArray,
}

// annotations are keywords that do not constrain a value.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true,
	"$schema": true, "$comment": true, "$id": true, "deprecated": true,
	"readOnly": true, "writeOnly": true,
}

// newFlatSchema returns the flat form of a schema document, or nil if the
// document uses anything else.
func newFlatSchema(doc any) *flatSchema {
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil
	}
	f := &flatSchema{props: map[string]propRule{}, required: map[string]int{}}
	for k, v := range root {
		switch {
		case k == "type" || annotations[k]:
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				rule, ok := propRuleOf(ps)
				if !ok {
					return nil
				}
				f.props[name] = rule
			}
		case k == "required":
			req, ok := v.([]any)
			if !ok || len(req) > 64 {
				return nil
			}
			for _, r := range req {
				name, ok := r.(string)
				if !ok {
					return nil
				}
				if _, dup := f.required[name]; !dup {
					f.required[name] = len(f.required)
				}
			}
		case k == "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.closed = !b
		default:
			return nil
		}
	}
	return f
}

// propRuleOf reads a property schema made of "type", integer bounds,
// length bounds and annotations only.
func propRuleOf(ps any) (propRule, bool) {
	rule := propRule{kinds: kAny, minLen: -1, maxLen: -1}
	switch s := ps.(type) {
	case bool:
		return rule, s // false accepts nothing: leave it to the library
	case map[string]any:
		for k, v := range s {
			var ok bool
			switch {
			case annotations[k]:
				ok = true
			case k == "type":
				rule.kinds, ok = typeKinds(v)
			case k == "minLength":
				rule.minLen, ok = count(v)
			case k == "maxLength":
				rule.maxLen, ok = count(v)
			case k == "minimum":
				rule.min, ok = integer(v)
				rule.hasMin = ok
			case k == "maximum":
				rule.max, ok = integer(v)
				rule.hasMax = ok
			}
			if !ok {
				return propRule{}, false
			}
		}
		return rule, true
	}
	return propRule{}, false
}

// integer reads a schema number that is an integer within int64.
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// count reads a schema number that is a non-negative integer.
func count(v any) (int, bool) {
	i, ok := integer(v)
	if !ok || i < 0 || i > math.MaxInt32 {
		return 0, false
	}
	return int(i), true
}

func typeKinds(v any) (kindMask, bool) {
	switch t := v.(type) {
	case string:
		m, ok := kindNames[t]
		return m, ok
	case []any:
		var m kindMask
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return 0, false
			}
			k, ok := kindNames[s]
			if !ok {
				return 0, false
			}
			m |= k
		}
		return m, m != 0
	}
	return 0, false
}

// accepts reports whether args certainly match f. It allocates nothing and
// reads args once: its scan is as strict as [json.Valid] (RFC 8259), so
// what it accepts the library decodes.
func (f *flatSchema) accepts(args []byte) bool {
	s := scanner{b: args}
	s.ws()
	if !s.eat('{') {
		return false
	}
	var seen uint64
	s.ws()
	for !s.eat('}') {
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		start := s.i
		kind, ok := s.value(0)
		if !ok {
			return false
		}
		// m[string(b)] looks up without allocating.
		if rule, known := f.props[string(key)]; known {
			if kind&rule.kinds == 0 || !rule.bounds(kind, args[start:s.i]) {
				return false
			}
		} else if f.closed {
			return false
		}
		if bit, req := f.required[string(key)]; req {
			seen |= 1 << uint(bit)
		}
		if !s.more('}') {
			return false
		}
	}
	s.ws()
	return s.i == len(s.b) && seen == 1<<uint(len(f.required))-1
}

// maxFastDepth is how deep the fast check follows nested values; deeper
// ones are left to the library (whose decoder has limits of its own).
const maxFastDepth = 32

// scanner reads JSON strictly: anything [json.Valid] refuses, it refuses.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// more reads what follows a member or element: a comma, with the
// whitespace around it, before another (true), or the closing byte, left
// for the loop to eat (true); anything else is malformed (false).
func (s *scanner) more(closing byte) bool {
	s.ws()
	if s.eat(',') {
		s.ws()
		return s.i < len(s.b) && s.b[s.i] != closing // no trailing comma
	}
	return s.i < len(s.b) && s.b[s.i] == closing
}

// key reads an object key without escapes; a key with escapes is left to
// the library.
func (s *scanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '\\' || c < 0x20:
			return nil, false
		case c == '"':
			k := s.b[start:s.i]
			s.i++
			return k, true
		}
		s.i++
	}
	return nil, false
}

// value reads one value and returns its kind; numbers anywhere inside it
// must be within the bounds the library is protected by.
func (s *scanner) value(depth int) (kindMask, bool) {
	if s.i >= len(s.b) {
		return 0, false
	}
	switch s.b[s.i] {
	case '"':
		return kString, s.str()
	case 't':
		return kBoolean, s.literal("true")
	case 'f':
		return kBoolean, s.literal("false")
	case 'n':
		return kNull, s.literal("null")
	case '{':
		return kObject, depth < maxFastDepth && s.object(depth+1)
	case '[':
		return kArray, depth < maxFastDepth && s.array(depth+1)
	}
	return s.number()
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// str reads a string: no control character, and only JSON's escapes.
func (s *scanner) str() bool {
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i <= 4 {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
		s.i++
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// object reads a nested object, its opening brace next.
func (s *scanner) object(depth int) bool {
	s.i++
	s.ws()
	for !s.eat('}') {
		if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		if _, ok := s.value(depth); !ok || !s.more('}') {
			return false
		}
	}
	return true
}

// array reads a nested array, its opening bracket next.
func (s *scanner) array(depth int) bool {
	s.i++
	s.ws()
	for !s.eat(']') {
		if _, ok := s.value(depth); !ok || !s.more(']') {
			return false
		}
	}
	return true
}

// number reads a number of JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
// An integer is one without fraction or exponent (1.0 may be integral:
// only the library knows).
func (s *scanner) number() (kindMask, bool) {
	start := s.i
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.digits() == 0:
		return 0, false
	}
	kind := kInteger | kNumber
	if s.eat('.') {
		kind = kNumber
		if s.digits() == 0 {
			return 0, false
		}
	}
	if s.eat('e') || s.eat('E') {
		kind = kNumber
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return 0, false
		}
	}
	return kind, numberInBounds(s.b[start:s.i])
}

// digits reads a run of decimal digits and returns its length.
func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// numberInBounds is numberTooBig's negation for bytes, without allocating.
func numberInBounds(n []byte) bool {
	if len(n) > maxNumberLen {
		return false
	}
	for i, c := range n {
		if c != 'e' && c != 'E' {
			continue
		}
		exp := n[i+1:]
		if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		v := 0
		for _, d := range exp {
			if v = v*10 + int(d-'0'); v > maxNumberExponent {
				return false
			}
		}
		return true
	}
	return true
}

// bounds reports whether value (its JSON text, of kind k) certainly meets
// the rule's length and integer bounds; false leaves it to the library.
func (r propRule) bounds(k kindMask, value []byte) bool {
	switch {
	case k == kString && (r.minLen >= 0 || r.maxLen >= 0):
		body := value[1 : len(value)-1]
		if bytes.IndexByte(body, '\\') >= 0 {
			return false // escapes: count after decoding, in the library
		}
		n := utf8.RuneCount(body)
		return (r.minLen < 0 || n >= r.minLen) && (r.maxLen < 0 || n <= r.maxLen)
	case k&kNumber != 0 && (r.hasMin || r.hasMax):
		if k&kInteger == 0 {
			return false // a fraction or exponent: compared exactly by the library
		}
		n, ok := parseInt(value)
		return ok && (!r.hasMin || n >= r.min) && (!r.hasMax || n <= r.max)
	}
	return true
}

// parseInt parses an integer token without allocating; ok is false if it
// does not fit in an int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false // 18 digits always fit
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

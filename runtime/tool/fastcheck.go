package tool

import "encoding/json"

// flatSchema is a parameters schema simple enough to check without the
// schema library: an object whose properties are constrained by their type
// alone, with optional required and additionalProperties. Most tool schemas
// have this shape.
//
// The fast check only ever accepts: whenever it is not certain — an escape in
// a key, a fraction where an integer is wanted, a huge number, any violation
// — it reports false and the library decides, so error texts always come from
// one place.
type flatSchema struct {
	props    map[string]kindMask
	required map[string]int // property → bit in the seen mask
	closed   bool           // additionalProperties: false
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
	f := &flatSchema{props: map[string]kindMask{}, required: map[string]int{}}
	for k, v := range root {
		switch {
		case k == "type" || annotations[k]:
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				m, ok := propKinds(ps)
				if !ok {
					return nil
				}
				f.props[name] = m
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

// propKinds reads a property schema made of "type" and annotations only.
func propKinds(ps any) (kindMask, bool) {
	switch s := ps.(type) {
	case bool:
		return kAny, s // false accepts nothing: leave it to the library
	case map[string]any:
		m := kAny
		for k, v := range s {
			switch {
			case annotations[k]:
			case k == "type":
				var ok bool
				if m, ok = typeKinds(v); !ok {
					return 0, false
				}
			default:
				return 0, false
			}
		}
		return m, true
	}
	return 0, false
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

// accepts reports whether args certainly match f. It allocates nothing.
func (f *flatSchema) accepts(args []byte) bool {
	if !json.Valid(args) {
		return false
	}
	s := scanner{b: args}
	s.ws()
	if !s.eat('{') {
		return false
	}
	var seen uint64
	for {
		s.ws()
		if s.eat('}') {
			break
		}
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		s.eat(':')
		s.ws()
		kind, ok := s.value()
		if !ok {
			return false
		}
		// m[string(b)] looks up without allocating.
		if want, known := f.props[string(key)]; known {
			if kind&want == 0 {
				return false
			}
		} else if f.closed {
			return false
		}
		if bit, req := f.required[string(key)]; req {
			seen |= 1 << uint(bit)
		}
		s.ws()
		s.eat(',')
	}
	return seen == 1<<uint(len(f.required))-1
}

// scanner walks JSON already known to be valid.
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

// key reads an object key without escapes; a key with escapes is left to
// the library.
func (s *scanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			return nil, false
		case '"':
			k := s.b[start:s.i]
			s.i++
			return k, true
		}
		s.i++
	}
	return nil, false
}

// value skips one value and returns its kind; numbers anywhere inside it
// must be within the bounds the library is protected by.
func (s *scanner) value() (kindMask, bool) {
	if s.i >= len(s.b) {
		return 0, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		s.skipString()
		return kString, true
	case c == 't':
		s.i += 4
		return kBoolean, true
	case c == 'f':
		s.i += 5
		return kBoolean, true
	case c == 'n':
		s.i += 4
		return kNull, true
	case c == '{' || c == '[':
		kind := kObject
		if c == '[' {
			kind = kArray
		}
		return kind, s.skipNested()
	default:
		return s.number()
	}
}

func (s *scanner) skipString() {
	s.i++ // opening quote
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return
		}
		s.i++
	}
}

func (s *scanner) skipNested() bool {
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.skipString()
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				s.i++
				return true
			}
		case c == '-' || c >= '0' && c <= '9':
			if _, ok := s.number(); !ok {
				return false
			}
			continue
		}
		s.i++
	}
	return false
}

func (s *scanner) number() (kindMask, bool) {
	start := s.i
	kind := kInteger | kNumber
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9' || c == '-' || c == '+':
		case c == '.' || c == 'e' || c == 'E':
			kind = kNumber // maybe integral (1.0): only the library knows
		default:
			return kind, numberInBounds(s.b[start:s.i])
		}
		s.i++
	}
	return kind, numberInBounds(s.b[start:s.i])
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

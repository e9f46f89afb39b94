package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// flatSchema is a parameters schema simple enough to check without the
// JSON Schema validator. Most tool schemas have this shape, the runtime's
// own tools' among them. A schema is flat when it is a JSON object whose
// keywords are only:
//
//   - "type": "object" (or no "type": arguments are always an object);
//   - "properties": each property's schema true, or an object of
//     "type" (a type name or a list of distinct ones), "minLength" and
//     "maxLength" (integers from 0 to 2³¹-1), "minimum" and "maximum"
//     (integers within int64), and annotations;
//   - "required": at most 64 distinct names;
//   - "additionalProperties": true or false;
//   - annotations: "description", "title" and "$comment" (strings),
//     "default" (any value), "examples" (an array), "deprecated",
//     "readOnly" and "writeOnly" (booleans), and at the top only
//     "$schema" naming draft 6, 7, 2019-09 or 2020-12 of JSON Schema.
//
// Every flat schema compiles in the validator and means the same there, so
// a program checks flat schemas alike whether it links the validator or
// not: check gives the validator's verdict and words.
//
// When the validator is linked, the flat form is a fast path that only
// ever accepts: whenever accepts is not certain — an escape in a key, a
// fraction where an integer is wanted, a huge number, any violation — it
// reports false and the validator decides, so error texts come from one
// place. Without the validator, check decides those cases.
type flatSchema struct {
	props    map[string]propRule
	required map[string]int // property → bit in the seen mask
	reqOrder []string       // required, in the schema's order
	closed   bool           // additionalProperties: false
}

// propRule is what a flat schema asks of one property.
type propRule struct {
	kinds          kindMask
	types          []string // the "type" names, in the validator's order; nil: any
	minLen, maxLen int      // in characters; -1: none (strings only)
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

// typeOrder is the order the validator lists a schema's types in.
var typeOrder = []string{"null", "boolean", "number", "integer", "string", "array", "object"}

// annotations are keywords that do not constrain a value, each with the
// values the validator takes for it.
var annotations = map[string]func(any) bool{
	"description": isString, "title": isString, "$comment": isString,
	"default":    func(any) bool { return true },
	"examples":   func(v any) bool { _, ok := v.([]any); return ok },
	"deprecated": isBool, "readOnly": isBool, "writeOnly": isBool,
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isBool(v any) bool   { _, ok := v.(bool); return ok }

// drafts are the "$schema" values a flat schema may have: the drafts in
// which its keywords mean what they mean in the latest.
var drafts = map[string]bool{}

func init() {
	for _, scheme := range []string{"http://", "https://"} {
		for _, d := range []string{"schema", "draft/2020-12/schema", "draft/2019-09/schema", "draft-07/schema", "draft-06/schema"} {
			drafts[scheme+"json-schema.org/"+d] = true
			drafts[scheme+"json-schema.org/"+d+"#"] = true
		}
	}
}

// beyondFlat says what keeps a schema from being flat: a keyword (at, the
// JSON pointer of the schema that has it) that flat schemas do not have,
// or whose value they do not take.
type beyondFlat struct {
	keyword string // "": the schema at at is false, or not an object
	at      string
	value   bool
}

// error is the error of a schema that is not flat, in a program without the
// validator.
func (b beyondFlat) error() error {
	at := b.at
	if at == "" {
		at = "the top"
	}
	var what string
	switch {
	case b.keyword == "":
		what = fmt.Sprintf("is neither true nor an object (at %s), which needs", at)
	case b.value:
		what = fmt.Sprintf("uses %q (at %s) with a value that needs", b.keyword, at)
	default:
		what = fmt.Sprintf("uses %q (at %s), which needs", b.keyword, at)
	}
	return fmt.Errorf("parameters schema %s the JSON Schema validator: add import _ %q", what, jsonSchemaImport)
}

// newFlatSchema returns the flat form of a schema document, or what keeps
// it from being flat. Keywords are read in sorted order, so that the
// reason is always the same.
func newFlatSchema(doc any) (*flatSchema, beyondFlat) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, beyondFlat{}
	}
	f := &flatSchema{props: map[string]propRule{}, required: map[string]int{}}
	for _, k := range slices.Sorted(maps.Keys(root)) {
		v := root[k]
		ok := true
		switch {
		case k == "type":
			ok = v == "object"
		case k == "$schema":
			s, _ := v.(string)
			ok = drafts[s]
		case annotations[k] != nil:
			ok = annotations[k](v)
		case k == "properties":
			props, isMap := v.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			for _, name := range slices.Sorted(maps.Keys(props)) {
				at := "/properties/" + escapeToken(name)
				rule, beyond := propRuleOf(props[name], at)
				if beyond != nil {
					return nil, *beyond
				}
				f.props[name] = rule
			}
		case k == "required":
			req, isList := v.([]any)
			if !isList || len(req) > 64 {
				ok = false
				break
			}
			for _, r := range req {
				name, isStr := r.(string)
				if _, dup := f.required[name]; !isStr || dup {
					ok = false // the validator refuses duplicates
					break
				}
				f.required[name] = len(f.required)
				f.reqOrder = append(f.reqOrder, name)
			}
		case k == "additionalProperties":
			b, isBool := v.(bool)
			ok = isBool
			f.closed = !b
		default:
			return nil, beyondFlat{keyword: k}
		}
		if !ok {
			return nil, beyondFlat{keyword: k, value: true}
		}
	}
	return f, beyondFlat{}
}

// propRuleOf reads a property schema made of "type", integer bounds,
// length bounds and annotations only; at is where it is.
func propRuleOf(ps any, at string) (propRule, *beyondFlat) {
	rule := propRule{kinds: kAny, minLen: -1, maxLen: -1}
	s, ok := ps.(map[string]any)
	if !ok {
		if ps == true {
			return rule, nil
		}
		return propRule{}, &beyondFlat{at: at} // false accepts nothing
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		var ok bool
		switch {
		case annotations[k] != nil:
			ok = annotations[k](v)
		case k == "type":
			rule.kinds, rule.types, ok = typeKinds(v)
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
		default:
			return propRule{}, &beyondFlat{keyword: k, at: at}
		}
		if !ok {
			return propRule{}, &beyondFlat{keyword: k, at: at, value: true}
		}
	}
	return rule, nil
}

// escapeToken escapes a JSON pointer token (RFC 6901).
func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
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

// typeKinds reads "type": a name or a list of distinct names.
func typeKinds(v any) (kindMask, []string, bool) {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok || slices.Contains(names, s) {
				return 0, nil, false
			}
			names = append(names, s)
		}
	}
	var m kindMask
	for _, s := range names {
		k, ok := kindNames[s]
		if !ok {
			return 0, nil, false
		}
		m |= k
	}
	if m == 0 {
		return 0, nil, false
	}
	var ordered []string
	for _, s := range typeOrder {
		if slices.Contains(names, s) {
			ordered = append(ordered, s)
		}
	}
	return m, ordered, true
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

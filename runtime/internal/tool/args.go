package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// JSONSchema compiles a parameters schema document (decoded with numbers
// as json.Number) that is not the empty schema; package runtime/jsonschema
// sets it. Its error is the whole text, "parameters schema does not
// compile: ...". Nil: the program did not link the validator, and
// CheckArguments checks flat schemas itself (see flatSchema) and refuses
// any other.
var JSONSchema func(doc any) (Validator, error)

// jsonSchemaImport is the import that links the JSON Schema validator.
const jsonSchemaImport = "github.com/ganglion-dev/ganglion/runtime/jsonschema"

// A Validator checks arguments against one compiled parameters schema.
type Validator interface {
	// Validate checks v, decoded arguments (numbers as json.Number), and
	// returns the error for the model, "arguments do not match the
	// schema: ...", or nil if they match.
	Validate(v any) error
}

// CheckArguments checks that args, the arguments a model wrote for a call of
// t, are a JSON object that matches t's parameters schema. An empty schema
// accepts any object.
//
// # Errors
//
// The error text is meant for the model, which reads it and retries:
//
//	arguments are not valid JSON: unexpected end of JSON input
//	arguments must be a JSON object, got array
//	arguments do not match the schema: /offset: got string, want integer
//
// When there are several violations, each has its own line, sorted by the
// JSON pointer of the offending value ("(root)" for the object itself):
//
//	arguments do not match the schema:
//	- (root): missing property 'path'
//	- /offset: got string, want integer
//
// A number longer than 100 characters or with an exponent beyond ±400 is
// refused before the schema sees it ("/n: number 1e999999 is out of range"):
// the schema library compares numbers as exact rationals, which for such a
// number costs milliseconds and hundreds of kilobytes.
//
// A schema that does not compile gives an error that names the tool:
//
//	tool "x": parameters schema does not compile: ...
//
// # Without the validator
//
// A program that does not import package runtime/jsonschema checks flat
// schemas (see flatSchema) itself, with the same results and the same
// error texts as the validator. Any other schema fails as a schema that
// does not compile, naming the keyword, where it is, and the import:
//
//	tool "x": parameters schema uses "enum" (at /properties/unit), which needs the JSON Schema validator: add import _ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
//
// # Concurrency
//
// CheckArguments is safe for concurrent use. Each distinct schema text is
// compiled once and kept in a process-wide cache.
func CheckArguments(t pipeline.Tool, args json.RawMessage) error {
	if len(t.Parameters) == 0 {
		return checkObject(args)
	}
	return schemas.get(t.Parameters).check(t.Name, args)
}

// check checks args for a call of the tool named name.
func (cs *compiledSchema) check(name string, args json.RawMessage) error {
	if cs.err != nil {
		return fmt.Errorf("tool %q: %w", name, cs.err)
	}
	if cs.lib == nil && cs.flat == nil {
		return checkObject(args)
	}
	if cs.flat != nil && cs.flat.accepts(args) {
		return nil
	}
	v, err := decodeObject(args)
	if err != nil {
		return err
	}
	if _, _, ok := hugeNumber(v, nil, false); ok {
		ptr, n, _ := hugeNumber(v, nil, true) // again, in a stable order

		if len(n) > 40 {
			n = n[:37] + "..."
		}
		return fmt.Errorf("arguments do not match the schema: %s: number %s is out of range", displayPointer(pointer(ptr)), n)
	}
	if err := cs.validate(v); err != nil {
		return err
	}
	return nil
}

// checkObject is the fast path for "any object": no decoding, no allocation.
func checkObject(args json.RawMessage) error {
	if !json.Valid(args) {
		return syntaxError(args)
	}
	if c := firstByte(args); c != '{' {
		return fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(c))
	}
	return nil
}

// decodeObject decodes args the way the schema library wants them (numbers
// as json.Number) and checks that they are an object.
func decodeObject(args json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxError(args)
	}
	if rest := bytes.TrimLeft(args[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, syntaxError(args)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(firstByte(args)))
	}
	return obj, nil
}

// Numbers beyond these bounds are refused before validation: the schema
// library checks numbers as exact rationals, and 1e999999 costs it about
// 20ms and 400KB, per number. No tool needs numbers beyond float64's range.
const (
	maxNumberLen      = 100
	maxNumberExponent = 400
)

// hugeNumber finds a number in v that is too long or has too large an
// exponent, and returns where it is (path holds the tokens so far). With
// sorted set it visits object members in key order, so that it always finds
// the same one.
func hugeNumber(v any, path []string, sorted bool) ([]string, string, bool) {
	switch v := v.(type) {
	case json.Number:
		if numberTooBig(string(v)) {
			return path, string(v), true
		}
	case map[string]any:
		if sorted {
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if p, n, ok := hugeNumber(v[k], append(path, k), true); ok {
					return p, n, true
				}
			}
			break
		}
		for k, e := range v {
			if p, n, ok := hugeNumber(e, append(path, k), false); ok {
				return p, n, true
			}
		}
	case []any:
		for i, e := range v {
			if p, n, ok := hugeNumber(e, append(path, strconv.Itoa(i)), sorted); ok {
				return p, n, true
			}
		}
	}
	return nil, "", false
}

func numberTooBig(n string) bool {
	if len(n) > maxNumberLen {
		return true
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || exp > maxNumberExponent || exp < -maxNumberExponent
}

// syntaxError explains why args are not valid JSON, in encoding/json's words.
func syntaxError(args json.RawMessage) error {
	var v any
	err := json.Unmarshal(args, &v)
	if err == nil { // unreachable: callers found args invalid
		err = errors.New("invalid JSON")
	}
	return fmt.Errorf("arguments are not valid JSON: %v", err)
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// maxCachedSchemas bounds the schema cache. Real programs have far fewer
// distinct tool schemas; the bound only matters when schemas come from an
// untrusted, changing source, and then the cache starts over.
const maxCachedSchemas = 4096

// schemas caches compiled schemas by their text.
var schemas = &schemaCache{m: make(map[string]*compiledSchema)}

type schemaCache struct {
	mu sync.RWMutex
	m  map[string]*compiledSchema
}

// compiledSchema is a compiled schema, or why it does not compile. With
// neither lib, flat nor err it accepts any object.
type compiledSchema struct {
	lib  Validator   // nil when the program does not link the validator
	flat *flatSchema // non-nil when the schema is flat
	err  error
}

func (c *schemaCache) get(text []byte) *compiledSchema {
	c.mu.RLock()
	cs, ok := c.m[string(text)] // no allocation for the lookup
	c.mu.RUnlock()
	if ok {
		return cs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.m[string(text)]; ok {
		return cs
	}
	if len(c.m) >= maxCachedSchemas {
		clear(c.m)
	}
	cs = compileSchema(text)
	c.m[string(text)] = cs
	return cs
}

func compileSchema(text []byte) *compiledSchema {
	return compileSchemaWith(text, JSONSchema)
}

// compileSchemaWith compiles text with lib, the JSON Schema validator, or
// without one when lib is nil: then only flat schemas are checked.
func compileSchemaWith(text []byte, lib func(doc any) (Validator, error)) *compiledSchema {
	doc, err := unmarshalSchema(text)
	if err != nil {
		return &compiledSchema{err: fmt.Errorf("parameters schema is not valid JSON: %v", err)}
	}
	if isAnyObject(doc) {
		return &compiledSchema{}
	}
	flat, beyond := newFlatSchema(doc)
	if lib == nil {
		if flat == nil {
			return &compiledSchema{err: beyond.error()}
		}
		return &compiledSchema{flat: flat}
	}
	v, err := lib(doc)
	if err != nil {
		return &compiledSchema{err: err}
	}
	return &compiledSchema{lib: v, flat: flat}
}

// unmarshalSchema decodes a schema document as the JSON Schema validator
// does: numbers as json.Number, nothing after the value.
func unmarshalSchema(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	return doc, nil
}

// isAnyObject reports whether a schema document accepts every object
// without further checks, so the fast path applies.
func isAnyObject(doc any) bool {
	switch d := doc.(type) {
	case bool:
		return d
	case map[string]any:
		if len(d) == 0 {
			return true
		}
		if len(d) == 1 && d["type"] == "object" {
			return true
		}
	}
	return false
}

// validate checks v, decoded arguments, with the validator when the
// program links it, and with the flat check otherwise.
func (cs *compiledSchema) validate(v map[string]any) error {
	if cs.lib != nil {
		return cs.lib.Validate(v)
	}
	return mismatch(cs.flat.check(v))
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapeToken(tok))
	}
	return sb.String()
}

package tool

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ganglion-dev/ganglion/pipeline"
)

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
// # Concurrency
//
// CheckArguments is safe for concurrent use. Each distinct schema text is
// compiled once and kept in a process-wide cache.
func CheckArguments(t pipeline.Tool, args json.RawMessage) error {
	if len(t.Parameters) == 0 {
		return checkObject(args)
	}
	cs := schemas.get(t.Parameters)
	if cs.err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, cs.err)
	}
	if cs.schema == nil {
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

// compiledSchema is a compiled schema, or why it does not compile. A nil
// schema with a nil error accepts any object.
type compiledSchema struct {
	schema *jsonschema.Schema
	flat   *flatSchema // non-nil when the fast check applies
	err    error
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

// schemaURL is the location schemas are compiled at; it shows in some
// compile errors.
const schemaURL = "mem:///parameters.json"

func compileSchema(text []byte) (cs *compiledSchema) {
	defer func() {
		if r := recover(); r != nil {
			cs = &compiledSchema{err: fmt.Errorf("parameters schema does not compile: internal error: %v", r)}
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return &compiledSchema{err: fmt.Errorf("parameters schema is not valid JSON: %v", err)}
	}
	if isAnyObject(doc) {
		return &compiledSchema{}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return &compiledSchema{err: fmt.Errorf("parameters schema does not compile: %v", err)}
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		var ve *jsonschema.ValidationError
		if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
			return &compiledSchema{err: fmt.Errorf("parameters schema does not compile: %s", strings.Join(violations(ve), "; "))}
		}
		return &compiledSchema{err: fmt.Errorf("parameters schema does not compile: %v", err)}
	}
	return &compiledSchema{schema: sch, flat: newFlatSchema(doc)}
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

// refuseLoader keeps tool schemas self-contained: a $ref to a file or a URL
// would read the disk or the network on the model's behalf.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema refers to %s; tool schemas must be self-contained", url)
}

func (cs *compiledSchema) validate(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arguments could not be checked: internal error: %v", r)
		}
	}()
	verr := cs.schema.Validate(v)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return fmt.Errorf("arguments do not match the schema: %v", verr)
	}
	lines := violations(ve)
	switch len(lines) {
	case 0:
		return errors.New("arguments do not match the schema")
	case 1:
		return fmt.Errorf("arguments do not match the schema: %s", lines[0])
	default:
		return fmt.Errorf("arguments do not match the schema:\n- %s", strings.Join(lines, "\n- "))
	}
}

// violation is one line of a schema error.
type violation struct {
	ptr  string
	text string
}

// violations flattens the library's error tree into one line per violation,
// "pointer: message", sorted and without duplicates. A failed anyOf or oneOf
// stays one line that lists what each alternative lacks.
func violations(ve *jsonschema.ValidationError) []string {
	var vs []violation
	collect(ve, &vs)
	slices.SortFunc(vs, func(a, b violation) int {
		return cmp.Or(cmp.Compare(a.ptr, b.ptr), cmp.Compare(a.text, b.text))
	})
	vs = slices.Compact(vs)
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = displayPointer(v.ptr) + ": " + v.text
	}
	return lines
}

func collect(ve *jsonschema.ValidationError, out *[]violation) {
	switch k := ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(ve.Causes) > 0 {
			*out = append(*out, violation{pointer(ve.InstanceLocation), alternatives(ve)})
			return
		}
	case *kind.AdditionalProperties:
		slices.Sort(k.Properties) // the library lists them in map order
	}
	if len(ve.Causes) == 0 {
		*out = append(*out, violation{pointer(ve.InstanceLocation), ve.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}

// alternatives renders a failed anyOf or oneOf as
// "'anyOf' failed: <what the first lacks>; or <what the second lacks>".
func alternatives(ve *jsonschema.ValidationError) string {
	ptr := pointer(ve.InstanceLocation)
	var sb strings.Builder
	sb.WriteString(ve.ErrorKind.LocalizedString(printer))
	for i, c := range ve.Causes {
		if i == 0 {
			sb.WriteString(": ")
		} else {
			sb.WriteString("; or ")
		}
		var vs []violation
		collect(c, &vs)
		slices.SortFunc(vs, func(a, b violation) int {
			return cmp.Or(cmp.Compare(a.ptr, b.ptr), cmp.Compare(a.text, b.text))
		})
		vs = slices.Compact(vs)
		for j, v := range vs {
			if j > 0 {
				sb.WriteString(", ")
			}
			if v.ptr != ptr {
				sb.WriteString(displayPointer(v.ptr))
				sb.WriteString(": ")
			}
			sb.WriteString(v.text)
		}
	}
	return sb.String()
}

// pointer renders an instance location as a JSON pointer (RFC 6901).
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		sb.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return sb.String()
}

// printer renders the library's messages in English, as its Error methods do.
var printer = message.NewPrinter(language.English)

// displayPointer shows the root, whose pointer is empty, as "(root)".
func displayPointer(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}

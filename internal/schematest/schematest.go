// Package schematest checks the JSON Schemas of schema/ (ganglion.yaml,
// approval rules, scripted model scripts) for the tests of the packages that
// read those files: that a schema describes exactly the Go types a file
// decodes into ([Match]), and what it says of a YAML file ([ValidateYAML]).
// Only tests import it.
package schematest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Root returns the module's root directory, found from the working
// directory up (a test runs in its package's directory).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "schema")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("schematest: no module root with a schema directory above the working directory")
		}
		dir = parent
	}
}

// Schema is a schema file of schema/: its JSON and its compiled form.
type Schema struct {
	// Doc is the schema as JSON values: objects are map[string]any.
	Doc map[string]any
	*jsonschema.Schema
}

// Load reads and compiles schema/name (as "ganglion.schema.json"). It
// resolves no reference outside the file.
func Load(name string) (*Schema, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "schema", name))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("schematest: %s: %w", name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("schematest: %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file:///schema/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schematest: %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schematest: %s: %w", name, err)
	}
	return &Schema{Doc: m, Schema: s}, nil
}

// ValidateYAML validates a YAML file's content as an editor's YAML language
// server would: anchors, aliases and merge keys resolved, every mapping an
// object.
func (s *Schema) ValidateYAML(data []byte) error {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not YAML: %w", err)
	}
	text, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("not JSON data: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// At returns the schema at a local reference: "#" for the whole schema,
// "#/$defs/Model/properties/name" for a part; nil if there is none.
func (s *Schema) At(ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	var node any = s.Doc
	for _, part := range strings.Split(strings.TrimPrefix(rest, "/"), "/") {
		if part == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[part]
	}
	m, _ := node.(map[string]any)
	return m
}

// Enum returns the enum at ref, as strings.
func (s *Schema) Enum(ref string) []string {
	var out []string
	for _, v := range asList(s.resolve(s.At(ref))["enum"]) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// Types says what Match cannot read off the Go types.
type Types struct {
	// Nodes are the fields a type keeps as an ast.Node, to decode later,
	// by "Type.key" ("scriptDoc.agents"), with the type the node decodes
	// as (map[string]agentDoc); any for a value of any shape.
	Nodes map[string]reflect.Type
	// ShortForms are the struct types a file may also write as a string.
	ShortForms []reflect.Type
}

var astNode = reflect.TypeFor[ast.Node]()

// Match returns how the schema at ref (see [Schema.At]) and Go type t
// disagree, one problem a line; none if the schema describes t: a struct
// is an object whose properties are exactly the struct's YAML keys, and
// which allows no other; a string a string; an integer an integer; a
// slice an array of the element; a map an object whose other properties
// are the element; and so on down, through "$ref"s.
func (s *Schema) Match(ref string, t reflect.Type, types Types) []string {
	m := matcher{s: s, types: types, seen: map[string]bool{}}
	m.match(ref, s.At(ref), t)
	return m.problems
}

type matcher struct {
	s        *Schema
	types    Types
	seen     map[string]bool // ref + type, matched already
	problems []string
}

func (m *matcher) errorf(where, format string, args ...any) {
	m.problems = append(m.problems, where+": "+fmt.Sprintf(format, args...))
}

// resolve follows "$ref"s to the schema they name.
func (s *Schema) resolve(n map[string]any) map[string]any {
	for range 16 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		n = s.At(ref)
	}
	return n
}

// types returns the JSON types n allows: its "type", as a list.
func types(n map[string]any) []string {
	switch t := n["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	return nil
}

func (m *matcher) match(where string, n map[string]any, t reflect.Type) {
	if n == nil {
		m.errorf(where, "no schema for %s", t)
		return
	}
	if ref, ok := n["$ref"].(string); ok {
		where = ref
		key := ref + " " + t.String()
		if m.seen[key] {
			return
		}
		m.seen[key] = true
	}
	n = m.s.resolve(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == astNode {
		m.errorf(where, "the Go type keeps an ast.Node: say in Types.Nodes what it holds")
		return
	}
	if t.Kind() == reflect.Interface {
		if len(types(n)) > 0 {
			m.errorf(where, "the Go type takes any value, the schema only %v", types(n))
		}
		return
	}
	if alts, ok := alternatives(n); ok {
		short := slices.Contains(m.types.ShortForms, t)
		matched := false
		for i, a := range alts {
			if short && slices.Equal(types(m.s.resolve(a)), []string{"string"}) {
				continue
			}
			matched = true
			m.match(fmt.Sprintf("%s/anyOf/%d", where, i), a, t)
		}
		if !matched {
			m.errorf(where, "no alternative is %s", t)
		}
		return
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean",
		reflect.Int: "integer", reflect.Int8: "integer", reflect.Int16: "integer", reflect.Int32: "integer", reflect.Int64: "integer",
		reflect.Uint: "integer", reflect.Uint8: "integer", reflect.Uint16: "integer", reflect.Uint32: "integer", reflect.Uint64: "integer",
		reflect.Float32: "number", reflect.Float64: "number",
		reflect.Slice: "array", reflect.Array: "array", reflect.Map: "object", reflect.Struct: "object",
	}[t.Kind()]
	got := types(n)
	switch {
	case want == "":
		m.errorf(where, "the Go type %s has no JSON type", t)
		return
	case t.Kind() == reflect.String && slices.Contains(got, "string"):
		// A text field may also take a scalar YAML types otherwise
		// (when: true); the loader reads it as text.
	case !slices.Equal(got, []string{want}):
		m.errorf(where, "type %v, want %q for %s", got, want, t)
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		items, _ := n["items"].(map[string]any)
		m.match(where+"/items", items, t.Elem())
	case reflect.Map:
		items, ok := n["additionalProperties"].(map[string]any)
		if !ok && t.Elem().Kind() == reflect.Interface && n["additionalProperties"] == nil {
			return // any keys, any values
		}
		m.match(where+"/additionalProperties", items, t.Elem())
	case reflect.Struct:
		m.matchStruct(where, n, t)
	}
}

// alternatives returns the schemas of an "anyOf" or "oneOf" that says
// which types a value may have, rather than which keys an object needs.
func alternatives(n map[string]any) ([]map[string]any, bool) {
	if _, typed := n["type"]; typed {
		return nil, false
	}
	list, ok := n["anyOf"].([]any)
	if !ok {
		list, ok = n["oneOf"].([]any)
	}
	if !ok {
		return nil, false
	}
	var out []map[string]any
	for _, a := range list {
		if am, ok := a.(map[string]any); ok {
			out = append(out, am)
		}
	}
	return out, true
}

func (m *matcher) matchStruct(where string, n map[string]any, t reflect.Type) {
	if n["additionalProperties"] != false {
		m.errorf(where, "additionalProperties must be false: %s has no other keys", t)
	}
	props, _ := n["properties"].(map[string]any)
	fields := yamlFields(t)
	for _, key := range sortedKeys(fields) {
		ft := fields[key]
		if shape, ok := m.types.Nodes[t.Name()+"."+key]; ok {
			ft = shape
		}
		p, ok := props[key].(map[string]any)
		if !ok {
			m.errorf(where, "no property %q (%s.%s)", key, t.Name(), fieldName(t, key))
			continue
		}
		m.match(where+"/properties/"+key, p, ft)
	}
	for _, key := range sortedKeys(props) {
		if _, ok := fields[key]; !ok {
			m.errorf(where, "property %q is no key of %s", key, t)
		}
	}
	for _, r := range requiredKeys(n) {
		if _, ok := fields[r]; !ok {
			m.errorf(where, "required %q is no key of %s", r, t)
		}
	}
}

// requiredKeys returns the keys n requires, itself or in its "anyOf",
// "oneOf", "not", "if" and "then".
func requiredKeys(n map[string]any) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, r := range asList(v["required"]) {
				out = append(out, fmt.Sprint(r))
			}
			for _, k := range []string{"anyOf", "oneOf"} {
				for _, a := range asList(v[k]) {
					walk(a)
				}
			}
			for _, k := range []string{"not", "if", "then"} {
				walk(v[k])
			}
		}
	}
	walk(n)
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// yamlFields maps the YAML keys of struct t to their field types, as the
// YAML library names them: the yaml tag, else the json tag, else the
// lowercased field name.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
			continue
		case name == "":
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// YAMLKeys returns the YAML keys of struct t, sorted.
func YAMLKeys(t reflect.Type) []string { return sortedKeys(yamlFields(t)) }

// fieldName returns the Go name of the field of t with YAML key key.
func fieldName(t reflect.Type, key string) string {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == key || tag == "" && strings.ToLower(f.Name) == key {
			return f.Name
		}
	}
	return key
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package config

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// checker checks the shape of a YAML tree against a Go type before the YAML
// library decodes it, and reports every mismatch with its position.
//
// The library alone would do for unknown fields, but it stops at the first
// problem, picks among several unknown fields at random, and converts
// silently where a config should not: `name: 1.10` becomes "1.1", and
// `max_steps: "25"` or `max_steps: 2.5` become integers. The checker makes
// typing strict (a string field wants a string, an integer field an
// integer) and collects all problems in document order; the library's
// strict decode then runs as a backstop.
type checker struct {
	src  *source
	errs ErrorList
	// anchors are the anchors seen so far, to report an alias to an anchor
	// that is not defined before it; nil skips that check.
	anchors map[string]bool
}

var (
	astNodeType  = reflect.TypeFor[ast.Node]()
	agentType    = reflect.TypeFor[Agent]()
	agentMCPType = reflect.TypeFor[AgentMCP]()
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()

	// unmarshalerTypes are the interfaces with which a type decodes itself;
	// the checker leaves such a type's shape to the type.
	unmarshalerTypes = []reflect.Type{
		reflect.TypeFor[yaml.BytesUnmarshaler](),
		reflect.TypeFor[yaml.BytesUnmarshalerContext](),
		reflect.TypeFor[yaml.InterfaceUnmarshaler](),
		reflect.TypeFor[yaml.InterfaceUnmarshalerContext](),
		reflect.TypeFor[yaml.NodeUnmarshaler](),
		reflect.TypeFor[yaml.NodeUnmarshalerContext](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	}
)

// shortForms are the struct types a file may also write as a string, the
// value of one field, with what the string is: an agent's mcp_servers
// entry calc stands for {server: calc} (see decodeAgentMCP).
var shortForms = map[reflect.Type]string{agentMCPType: "an MCP server's name", reflect.TypeFor[HTTPGrant](): "an origin"}

// where says which node a message is about: prefix names the agent (or
// extension) it belongs to, rel the node's path relative to that.
type where struct {
	path   string // full YAML path, "$.agents[0].tools[1]"
	prefix string // `agent "a": `
	rel    string // "tools[1]"
}

func (w where) key(k string) where {
	rel := k
	if w.rel != "" {
		rel = w.rel + "." + k
	}
	return where{path: w.path + "." + k, prefix: w.prefix, rel: rel}
}

func (w where) index(i int) where {
	s := "[" + strconv.Itoa(i) + "]"
	return where{path: w.path + s, prefix: w.prefix, rel: w.rel + s}
}

// msg prefixes text with the agent and the relative path.
func (w where) msg(format string, args ...any) string {
	text := fmt.Sprintf(format, args...)
	if w.rel != "" {
		text = w.rel + ": " + text
	}
	return w.prefix + text
}

func (c *checker) errorf(n ast.Node, w where, format string, args ...any) {
	c.errs = append(c.errs, c.src.errorAtNode(n, w.path, w.msg(format, args...)))
}

// check checks node n against type t.
func (c *checker) check(n ast.Node, t reflect.Type, w where) {
	if n == nil {
		return
	}
	switch m := n.(type) {
	case *ast.AnchorNode:
		if c.anchors != nil && m.Name != nil {
			c.anchors[m.Name.GetToken().Value] = true
		}
		c.check(m.Value, t, w)
		return
	case *ast.AliasNode:
		// The alias's target was checked where it is defined; the library
		// reports a type that does not fit here.
		if c.anchors != nil && m.Value != nil {
			name := m.Value.GetToken().Value
			if !c.anchors[name] {
				c.errorf(n, w, "alias *%s refers to no anchor defined before it", name)
			}
		}
		return
	case *ast.NullNode:
		return // null leaves the zero value
	case *ast.CommentGroupNode:
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == astNodeType || t.Kind() == reflect.Interface {
		return
	}
	if what, ok := shortForms[t]; ok {
		switch n.(type) {
		case *ast.StringNode, *ast.LiteralNode:
			return
		case ast.MapNode, *ast.TagNode:
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
			c.errorf(n, w, "expected %s or a mapping (%s), found %s (quote it to use it as text)", what, strings.Join(sortedKeys(structFields(t)), ", "), describe(n))
			return
		default:
			c.errorf(n, w, "expected %s or a mapping (%s), found %s", what, strings.Join(sortedKeys(structFields(t)), ", "), describe(n))
			return
		}
	}
	if decodesItself(t) {
		c.decodeSelf(n, t, w)
		return
	}
	if _, ok := n.(*ast.TagNode); ok {
		// An explicit tag asks for a conversion. The library gets only a
		// few right, so those are the ones a config may use.
		name := tokenText(n)
		switch {
		case name == "!!null",
			name == "!!str" && t.Kind() == reflect.String,
			name == "!!bool" && t.Kind() == reflect.Bool,
			name == "!!float" && (t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64):
		default:
			c.errorf(n, w, "the tag %s is not supported here; write the value without it", name)
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		switch n.(type) {
		case *ast.StringNode, *ast.LiteralNode:
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
			c.errorf(n, w, "expected a string, found %s (quote it to use it as text)", describe(n))
		default:
			c.errorf(n, w, "expected a string, found %s", describe(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, ok := n.(*ast.IntegerNode); !ok {
			c.errorf(n, w, "expected an integer, found %s", describe(n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if _, ok := n.(*ast.IntegerNode); !ok {
			c.errorf(n, w, "expected a non-negative integer, found %s", describe(n))
		}
	case reflect.Float32, reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		default:
			c.errorf(n, w, "expected a number, found %s", describe(n))
		}
	case reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			c.errorf(n, w, "expected true or false, found %s", describe(n))
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte: the library's own rules (!!binary)
		}
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			c.errorf(n, w, "expected a list, found %s", describe(n))
			return
		}
		for i, v := range seq.Values {
			c.check(v, t.Elem(), w.index(i))
		}
	case reflect.Map:
		mn, ok := n.(ast.MapNode)
		if !ok {
			c.errorf(n, w, "expected a mapping, found %s", describe(n))
			return
		}
		for it := mn.MapRange(); it.Next(); {
			k := it.Key()
			if k == nil || k.IsMergeKey() {
				continue
			}
			c.check(it.Value(), t.Elem(), w.key(keyName(k)))
		}
	case reflect.Struct:
		c.checkStruct(n, t, w)
	}
}

// decodeSelf decodes n into a new value of t, a type that decodes itself,
// to report its error at n: the type's own error (from UnmarshalText, say)
// carries no position. A tree with an alias is left to the full decode,
// which knows the anchors.
func (c *checker) decodeSelf(n ast.Node, t reflect.Type, w where) {
	if hasAlias(n) {
		return
	}
	if err := decode(n, reflect.New(t).Interface()); err != nil {
		c.errs = append(c.errs, c.src.fromYAML(err, n, w.path, w.msg("")))
	}
}

// checkStruct checks a mapping against struct type t.
func (c *checker) checkStruct(n ast.Node, t reflect.Type, w where) {
	fields := structFields(t)
	mn, ok := n.(ast.MapNode)
	if !ok {
		if t == fileType {
			c.errorf(n, w, "expected a mapping (keys: %s), found %s",
				strings.Join(sortedKeys(fields), ", "), describe(n))
			return
		}
		c.errorf(n, w, "expected a mapping, found %s", describe(n))
		return
	}
	if t == agentType && w.rel != "" {
		// Messages about an agent's fields name the agent.
		w = where{path: w.path, prefix: w.prefix + w.rel + ": "} // "agents[0]: "
		if name, ok := stringField(mn, "name"); ok && name != "" {
			w.prefix = fmt.Sprintf("agent %q: ", name)
		}
	}
	for it := mn.MapRange(); it.Next(); {
		k := it.Key()
		if k == nil {
			continue
		}
		if k.IsMergeKey() {
			// <<: {…} or <<: *a must bring fields of t. The library cannot
			// merge a list of mappings into a struct.
			if _, ok := it.Value().(*ast.SequenceNode); ok {
				c.errorf(it.Value(), w.key("<<"), "merge one mapping at a time, not a list")
			} else {
				c.check(it.Value(), t, w)
			}
			continue
		}
		name := keyName(k)
		ft, ok := fields[name]
		if !ok {
			c.errs = append(c.errs, c.src.errorAtNode(k, w.key(name).path,
				w.msg("unknown field %q (known: %s)", name, strings.Join(sortedKeys(fields), ", "))))
			continue
		}
		c.check(it.Value(), ft, w.key(name))
	}
}

// structFields maps the YAML keys of struct type t to their field types,
// naming fields the way the YAML library does: the yaml tag, else the json
// tag, else the lowercased field name; inline fields are flattened.
func structFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, dup := fields[k]; !dup {
						fields[k] = v
					}
				}
				continue
			}
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// decodesItself reports whether the YAML library hands values of t to t's
// own decoding rather than to the rules the checker knows.
func decodesItself(t reflect.Type) bool {
	if t == timeType || t == durationType {
		return true
	}
	pt := reflect.PointerTo(t)
	for _, u := range unmarshalerTypes {
		if t.Implements(u) || pt.Implements(u) {
			return true
		}
	}
	return false
}

// keyName is the text of a mapping key, as the YAML library matches it
// against field names.
func keyName(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	return k.String()
}

// stringField returns the string value of key in mapping mn.
func stringField(mn ast.MapNode, key string) (string, bool) {
	for it := mn.MapRange(); it.Next(); {
		if k := it.Key(); k != nil && !k.IsMergeKey() && keyName(k) == key {
			if s, ok := it.Value().(*ast.StringNode); ok {
				return s.Value, true
			}
			return "", false
		}
	}
	return "", false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describe names what node n is, for "expected X, found Y" messages.
func describe(n ast.Node) string {
	switch m := n.(type) {
	case *ast.StringNode:
		return "string " + quoteShort(m.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.IntegerNode:
		return "integer " + tokenText(n)
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + tokenText(n)
	case *ast.BoolNode:
		return "boolean " + tokenText(n)
	case *ast.NullNode:
		return "null"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.TagNode:
		return "a value tagged " + tokenText(n)
	case *ast.AnchorNode:
		if m.Value != nil {
			return describe(m.Value)
		}
	case *ast.AliasNode:
		return "an alias"
	}
	return "a " + n.Type().YAMLName()
}

func tokenText(n ast.Node) string {
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.String()
}

// quoteShort quotes s, cut to 40 characters.
func quoteShort(s string) string {
	const maxLen = 40
	if utf8.RuneCountInString(s) > maxLen {
		r := []rune(s)
		return strconv.Quote(string(r[:maxLen])) + "…"
	}
	return strconv.Quote(s)
}

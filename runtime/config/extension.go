package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Decode decodes the extension's Config into v, a non-nil pointer, as
// strictly as [Load] decodes the file: an unknown field or a value of the
// wrong type is an error. Types that decode themselves (an UnmarshalYAML or
// UnmarshalText method, time.Duration, time.Time) get the YAML library's
// rules. A nil or null Config decodes nothing and returns nil.
//
// # Errors
//
// Problems in the config are an [ErrorList] positioned in the original
// config file, with messages naming the agent and the extension:
//
//	ganglion.yaml:12:18: agent "assistant": extension "audit": config.limit: expected an integer, found string "lots"
//
// Decode is safe for concurrent use.
func (e Extension) Decode(v any) error {
	return e.decode(e.Config, "config", v)
}

// DecodeKey decodes the value under key of the extension's Config, a
// mapping, into v as strictly as [Extension.Decode] does, with errors
// positioned and named config.key. It reports false, decoding nothing, when
// the mapping has no such key.
func (e Extension) DecodeKey(key string, v any) (bool, error) {
	m, ok := e.Config.(*ast.MappingNode)
	if !ok {
		return false, nil
	}
	for _, kv := range m.Values {
		k := kv.Key.String()
		if sn, ok := kv.Key.(*ast.StringNode); ok {
			k = sn.Value // without the quotes of "key"
		}
		if k == key {
			return true, e.decode(kv.Value, "config."+key, v)
		}
	}
	return false, nil
}

// decode decodes node, found at rel ("config" or "config.key") under the
// extension's entry, into v.
func (e Extension) decode(node ast.Node, rel string, v any) error {
	if node == nil || node.Type() == ast.NullType {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode extension %q %s: need a non-nil pointer, got %T", e.Name, rel, v)
	}
	prefix := e.prefix()
	path := e.yamlPath(rel)

	// Anchors may be defined outside the config: no alias check here.
	c := checker{src: e.src}
	c.check(node, rv.Type().Elem(), where{path: path, prefix: prefix, rel: rel})
	if err := c.errs.err(); err != nil {
		return err
	}
	// The library resolves an alias only to an anchor it has seen, so let
	// it see the whole file.
	var opts []yaml.DecodeOption
	if e.src != nil && hasAlias(node) {
		opts = append(opts, yaml.ReferenceReaders(bytes.NewReader(e.src.data)))
	}
	if err := decode(node, v, opts...); err != nil {
		return ErrorList{e.src.fromYAML(err, node, path, prefix+rel+": ")}
	}
	return nil
}

// prefix names the extension, and its agent, in errors.
func (e Extension) prefix() string {
	prefix := fmt.Sprintf("extension %q: ", e.Name)
	if e.agent != "" {
		prefix = fmt.Sprintf("agent %q: ", e.agent) + prefix
	}
	return prefix
}

// yamlPath is the YAML path of rel ("config", "config.key") under the
// extension's entry.
func (e Extension) yamlPath(rel string) string {
	if e.path != "" {
		return e.path + "." + rel
	}
	return "$." + rel
}

// ErrorAt returns the problem msg with the value at path of the
// extension's Config ("$" for the section itself, "$.rules[1].name" for a
// value in it), as an [ErrorList] positioned at that value in the config
// file (or at the nearest enclosing value the file shows) and named as
// Decode's errors are:
//
//	ganglion.yaml:14:11: agent "a": extension "guard": config.block[1]: not a valid pattern
//
// It is for a problem the extension finds itself, such as a WebAssembly
// guest's refusal of its settings. A path that does not start with "$"
// stands for the section.
func (e Extension) ErrorAt(path, msg string) error {
	rel, ok := strings.CutPrefix(path, "$")
	if !ok || rel != "" && rel[0] != '.' && rel[0] != '[' {
		rel = ""
	}
	full := e.yamlPath("config" + rel)
	var n ast.Node
	if e.src != nil {
		n = lookup(e.src.ast, full)
	}
	return ErrorList{e.src.errorAtNode(n, full, e.prefix()+"config"+rel+": "+msg)}
}

// hasAlias reports whether the tree under n holds an alias.
func hasAlias(n ast.Node) bool {
	found := false
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if n.Type() == ast.AliasType {
			found = true
		}
		return !found
	}), n)
	return found
}

// visitFunc adapts a func to [ast.Visitor]; it descends while f returns true.
type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if n == nil || !f(n) {
		return nil
	}
	return f
}

// Dir returns the directory of the config file, against which an
// extension resolves the relative paths of its settings ("" when the
// config did not come from a file).
func (e Extension) Dir() string { return e.dir }

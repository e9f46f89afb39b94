package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Decode decodes Config into v, a non-nil pointer, as strictly as [Load]:
// an unknown field or a wrong type is an [ErrorList] positioned in the
// file, naming the agent and extension. Types that decode themselves follow
// the YAML library's rules. A nil Config decodes nothing. Decode is safe
// for concurrent use.
func (e Extension) Decode(v any) error {
	return e.decode(e.Config, "config", v)
}

// DecodeKey is [Extension.Decode] of Config's value under key, errors
// named config.key; false if absent.
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

// ErrorAt returns msg as an [ErrorList] positioned, as Decode's, at path
// in Config ("$.rules[1].name"; "$" or no "$" prefix: the section), for a
// problem the extension finds.
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

// Dir returns the config file's directory, for relative paths in Config.
func (e Extension) Dir() string { return e.dir }

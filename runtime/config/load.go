package config

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
)

// Load reads the config file at path, decodes it strictly, makes its
// relative paths absolute and applies the defaults; it does not Validate.
// A problem in the file, or a file over 1 MiB or nested 100 deep, is an
// [ErrorList]; a read error is wrapped.
func Load(path string) (*File, error) {
	data, err := yamlsrc.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return parse(path, dir, data)
}

// Parse is [Load] of data as the file name, resolving relative paths
// against name's directory as written; errors name name.
func Parse(name string, data []byte) (*File, error) {
	return parse(name, filepath.Dir(name), data)
}

var fileType = reflect.TypeFor[File]()

func parse(name, dir string, data []byte) (*File, error) {
	if err := yamlsrc.Check(data); err != nil {
		return nil, ErrorList{limitError(name, data, err)}
	}
	src := newSource(name, data)
	doc, err := parseYAML(data)
	if err != nil {
		return nil, ErrorList{src.fromYAML(err, nil, "", "")}
	}
	src.ast = doc
	mergeKeysFirst(doc)

	var bodies []ast.Node
	for _, d := range doc.Docs {
		if d != nil && d.Body != nil {
			bodies = append(bodies, d.Body)
		}
	}
	switch {
	case len(bodies) == 0:
		return nil, ErrorList{src.errorAt(1, 1, "$", `empty config: define at least one agent under "agents"`)}
	case len(bodies) > 1:
		return nil, ErrorList{src.errorAtNode(bodies[1], "",
			"a config file holds one YAML document; this is a second one")}
	}
	body := bodies[0]

	c := checker{src: src, anchors: map[string]bool{}}
	c.check(body, fileType, where{path: "$"})
	if err := c.errs.err(); err != nil {
		return nil, err
	}
	var f File
	if err := decode(body, &f); err != nil {
		return nil, ErrorList{src.fromYAML(err, body, "", "")}
	}
	if len(f.Agents) == 0 {
		return nil, ErrorList{src.errorAtNode(lookup(doc, "$.agents"), "$.agents",
			`no agents: define at least one agent under "agents"`)}
	}
	f.Path = name
	f.src = src
	f.resolve(dir)
	return &f, nil
}

// limitError converts an error of [yamlsrc.Check] into an Error: at the
// position where nesting went too deep, or for the whole file.
func limitError(name string, data []byte, err error) *Error {
	var le *yamlsrc.LimitError
	if errors.As(err, &le) && le.Line > 0 {
		e := newSource(name, data).errorAt(le.Line, le.Column, "", le.Msg)
		e.err = err
		return e
	}
	return &Error{File: name, Msg: err.Error(), err: err}
}

// parseYAML parses data into a tree. The YAML library is not expected to
// panic, but a config parser must not take its caller down on bad input, so
// a panic becomes an error.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("cannot parse YAML: %v", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// mergeKeysFirst moves the merge keys (<<) of every mapping in doc before
// its other keys. In YAML a mapping's own keys override merged ones; the
// library, told to allow the duplicates, lets the later key win, so the
// merged ones must come first.
func mergeKeysFirst(doc *ast.File) {
	for _, d := range doc.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		ast.Walk(visitFunc(func(n ast.Node) bool {
			if m, ok := n.(*ast.MappingNode); ok {
				slices.SortStableFunc(m.Values, func(a, b *ast.MappingValueNode) int {
					return cmp.Compare(mergeRank(a), mergeRank(b))
				})
			}
			return true
		}), d.Body)
	}
}

func mergeRank(v *ast.MappingValueNode) int {
	if v != nil && v.Key != nil && v.Key.IsMergeKey() {
		return 0
	}
	return 1
}

// decode decodes node strictly into v (a pointer), turning a panic of the
// YAML library into an error like parseYAML.
func decode(node ast.Node, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode YAML: %v", r)
		}
	}()
	// Duplicate keys are parse errors already; what remains are keys that
	// override merged (<<) ones, see mergeKeysFirst.
	opts = append([]yaml.DecodeOption{yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey(), yaml.CustomUnmarshaler(decodeAgentMCP), yaml.CustomUnmarshaler(decodeHTTPGrant)}, opts...)
	return yaml.NodeToValue(node, v, opts...)
}

// resolve applies the defaults and resolves relative paths against dir.
func (f *File) resolve(dir string) {
	if f.Workspace == "" {
		f.Workspace = defaultWorkspace
	}
	f.Workspace = join(dir, f.Workspace)
	if f.Data == "" {
		f.Data = defaultData
	}
	f.Data = join(dir, f.Data)
	if f.Outputs == "" {
		f.Outputs = defaultOutputs
	}
	f.Outputs = join(dir, f.Outputs)
	if c := f.Cluster; c != nil && c.Credentials != "" {
		c.Credentials = join(dir, c.Credentials)
	}
	// An alias (model: *m) may make two agents share one *Model; resolve
	// each model once.
	resolved := map[*Model]bool{}
	resolveModel := func(m *Model) {
		if m == nil || resolved[m] {
			return
		}
		resolved[m] = true
		if m.Script != "" {
			m.Script = join(dir, m.Script)
		}
	}
	resolveModel(f.Model)
	for i := range f.Agents {
		a := &f.Agents[i]
		if a.Model == nil {
			a.Model = f.Model
		}
		resolveModel(a.Model)
		if a.MaxSteps == 0 {
			a.MaxSteps = DefaultMaxSteps
		}
		for j := range a.Extensions {
			e := &a.Extensions[j]
			if e.Name == "" && e.Wasm != "" {
				e.Name = strings.TrimSuffix(filepath.Base(e.Wasm), ".wasm")
			}
			if e.Wasm != "" {
				e.Wasm = join(dir, e.Wasm)
			}
			if e.OnError == "" {
				e.OnError = onErrorFailClosed
			}
			e.src = f.src
			e.dir = dir
			e.path = "$.agents[" + strconv.Itoa(i) + "].extensions[" + strconv.Itoa(j) + "]"
			e.agent = a.Name
		}
	}
}

// join resolves p against dir unless p is absolute.
func join(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// lookup returns the node at YAML path p in doc, or the node of the nearest
// parent path that exists; nil if not even the document has a body.
func lookup(doc *ast.File, p string) ast.Node {
	for {
		if n := find(doc, p); n != nil {
			return n
		}
		parent, ok := parentPath(p)
		if !ok {
			return nil
		}
		p = parent
	}
}

// find returns the node at YAML path p in doc, or nil.
func find(doc *ast.File, p string) ast.Node {
	if doc == nil {
		return nil
	}
	yp, err := yaml.PathString(p)
	if err != nil {
		return nil
	}
	n, err := yp.FilterFile(doc)
	if err != nil {
		return nil
	}
	return n
}

// parentPath strips the last element of a YAML path: "$.a[0].b" → "$.a[0]"
// → "$.a" → "$"; false for "$".
func parentPath(p string) (string, bool) {
	if p == "$" || p == "" {
		return "", false
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "$", true
	}
	return p[:i], true
}

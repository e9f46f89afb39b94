package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestNoUnusedExport fails on an exported name that has no user: each
// top-level function, type, variable or constant (methods aside) of a
// checked package must be
//
//   - named (pkg.Name) by a non-test .go file of another package of the
//     module: a program, a built-in, another layer;
//   - shown by an Example of its own package: a function ExampleName,
//     ExampleName_suffix or ExampleName_Method, or an Example whose body
//     names it; or
//   - reached from such a name: a type that appears in what go doc shows of
//     a used name (a parameter or result of a used function, the type of a
//     used variable or constant, an exported field, an embedded type or a
//     method of a used type). A user meets it without writing it, and
//     unexporting it would leave go doc showing a name nobody can look up.
//
// Uses in test files of other packages do not count: a name only tests
// outside its package call is API kept for tests, which belongs in a test
// harness or an export_test.go. A test harness (a package whose name ends
// in "test", as net/http/httptest) is the exception: tests are its users.
// An Example counts only with an "// Output:" comment, which makes go test
// run it: what it shows works.
//
// A name with no user is unexported, or, if users are meant to call it,
// gets such an Example.
//
// The checked packages are those an importer of the module can name (not
// internal/..., sdk, cmd/..., examples/..., package main), the packages
// the surface a newcomer reads is made of. An internal package's exports
// are named only inside the module, where an unused one costs a reader
// one line, not a page of go doc; and sdk is named by guests, which live
// outside the module. Every package's non-test files count as users.
func TestNoUnusedExport(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := parseModule(root)
	if err != nil {
		t.Fatal(err)
	}
	unused := mod.unusedExports()
	checked := 0
	for _, dir := range slices.Sorted(maps.Keys(mod.pkgs)) {
		if !newcomerPackage(dir) || mod.pkgs[dir].path == "" {
			continue
		}
		checked++
		for _, n := range unused[dir] {
			t.Errorf("%s: exported, but no other package names it and no Example of %s shows it: unexport it, or add an Example", n, dir)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages; the walk found too few", checked)
	}
}

// firstContact holds the ceilings of exported top-level names (functions,
// types, variables, constants; methods aside) of the packages a newcomer
// reads first: runtime, to run agents, and extensions, to write one. Their
// names are the index at the top of their go doc, the first page a
// newcomer reads; a feature that needs more names than fit goes into a
// package of its own, which only its users read.
var firstContact = []struct {
	dir string
	max int
}{
	{"runtime", 70},
	{"extensions", 50},
}

// TestFirstContactNames holds the first-contact packages under their
// ceilings of names.
func TestFirstContactNames(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := parseModule(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range firstContact {
		p := mod.pkgs[c.dir]
		if p == nil {
			t.Errorf("%s: no such package", c.dir)
			continue
		}
		if n := len(p.decls); n > c.max {
			t.Errorf("%s exports %d top-level names, over its ceiling of %d: move what a newcomer does not need into a package of its own, or unexport it:\n  %s",
				c.dir, n, c.max, strings.Join(slices.Sorted(maps.Keys(p.decls)), " "))
		} else {
			t.Logf("%s exports %d top-level names (ceiling %d)", c.dir, n, c.max)
		}
	}
}

// newcomerPackage reports whether a package directory (relative to the
// module root, with slashes) is one an importer of the module can name:
// not internal/... at any depth, sdk, cmd/... or examples/....
func newcomerPackage(dir string) bool {
	top, _, _ := strings.Cut(dir, "/")
	switch top {
	case "sdk", "cmd", "examples":
		return false
	}
	return !slices.Contains(strings.Split(dir, "/"), "internal")
}

// srcModule is the parsed source of the module's packages.
type srcModule struct {
	fset *token.FileSet
	path string             // the module path
	pkgs map[string]*srcPkg // by directory relative to the root
}

// srcPkg is one package directory: its non-test files, its test files (of
// the package and of its _test package) and its exported top-level names.
type srcPkg struct {
	dir, path string // path is "" for a program (package main)
	files     []*ast.File
	tests     []*ast.File
	decls     map[string]*exportDecl
	methods   map[string][]*ast.FuncDecl // exported methods, by receiver type
}

// exportDecl is an exported top-level name and what go doc shows of it.
type exportDecl struct {
	kind  string // func, type, var or const
	pos   token.Pos
	shown []ast.Node // the declaration's parts a reader sees
}

// parseModule parses every package of the module below root, skipping
// testdata and directories starting with "." or "_", and main packages.
func parseModule(root string) (*srcModule, error) {
	modFile, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := &srcModule{fset: token.NewFileSet(), pkgs: map[string]*srcPkg{}}
	for line := range strings.Lines(string(modFile)) {
		if p, ok := strings.CutPrefix(line, "module "); ok {
			m.path = strings.TrimSpace(p)
		}
	}
	if m.path == "" {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		base := d.Name()
		if d.IsDir() {
			if rel != "." && (base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(base, ".go") {
			return nil
		}
		f, err := parser.ParseFile(m.fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		p := m.pkgs[dir]
		if p == nil {
			p = &srcPkg{dir: dir, path: m.path + "/" + dir, decls: map[string]*exportDecl{}, methods: map[string][]*ast.FuncDecl{}}
			if dir == "." {
				p.path = m.path
			}
			m.pkgs[dir] = p
		}
		if strings.HasSuffix(base, "_test.go") {
			p.tests = append(p.tests, f)
		} else {
			p.files = append(p.files, f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for dir, p := range m.pkgs {
		if len(p.files) == 0 {
			delete(m.pkgs, dir) // tests only
			continue
		}
		if p.files[0].Name.Name == "main" {
			p.path = "" // a program: it names others' exports, nobody names its own
			continue
		}
		for _, f := range p.files {
			p.addDecls(f)
		}
	}
	return m, nil
}

// harness reports whether p is a test harness, as net/http/httptest is:
// a package named for being called from tests (its name ends in "test").
func (p *srcPkg) harness() bool {
	return strings.HasSuffix(p.files[0].Name.Name, "test")
}

// addDecls records the exported top-level names of f and the exported
// methods of its types.
func (p *srcPkg) addDecls(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			switch {
			case !d.Name.IsExported():
			case d.Recv == nil:
				p.decls[d.Name.Name] = &exportDecl{"func", d.Name.Pos(), []ast.Node{d.Type}}
			default:
				recv := recvName(d.Recv.List[0].Type)
				p.methods[recv] = append(p.methods[recv], d)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						shown := []ast.Node{s.Type}
						if s.TypeParams != nil {
							shown = append(shown, s.TypeParams)
						}
						p.decls[s.Name.Name] = &exportDecl{"type", s.Name.Pos(), shown}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() {
							continue
						}
						var shown []ast.Node
						if s.Type != nil {
							shown = append(shown, s.Type)
						}
						p.decls[n.Name] = &exportDecl{d.Tok.String(), n.Pos(), shown}
					}
				}
			}
		}
	}
}

// unusedExports returns, per package directory, its exported top-level
// names that have no user by TestNoUnusedExport's rule, as
// "file:line: kind name", sorted.
func (m *srcModule) unusedExports() map[string][]string {
	used := map[string]map[string]bool{} // by package directory
	byPath := map[string]*srcPkg{}
	for dir, p := range m.pkgs {
		used[dir] = map[string]bool{}
		if p.path != "" {
			byPath[p.path] = p
		}
	}
	// Named by a non-test file of another package, or by a test file when
	// the package named is a test harness.
	for _, p := range m.pkgs {
		for _, f := range slices.Concat(p.files, p.tests) {
			test := strings.HasSuffix(m.fset.File(f.Pos()).Name(), "_test.go")
			for path, names := range m.selected(f) {
				if q := byPath[path]; q != nil && q != p && (!test || q.harness()) {
					for n := range names {
						used[q.dir][n] = true
					}
				}
			}
		}
	}
	// Shown by an Example of its own package.
	for _, p := range m.pkgs {
		for _, f := range p.tests {
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !isExample(fn.Name.Name) || !hasOutput(f, fn) {
					continue
				}
				subject, _, _ := strings.Cut(strings.TrimPrefix(fn.Name.Name, "Example"), "_")
				used[p.dir][subject] = true
				if strings.HasSuffix(f.Name.Name, "_test") {
					for n := range m.selected(f, fn)[p.path] {
						used[p.dir][n] = true
					}
				} else {
					for n := range bareNames(fn.Body) {
						used[p.dir][n] = true
					}
				}
			}
		}
	}
	// Reached from a used name.
	for _, p := range m.pkgs {
		u := used[p.dir]
		queue := slices.Collect(maps.Keys(u))
		for len(queue) > 0 {
			name := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			d := p.decls[name]
			if d == nil {
				continue
			}
			shown := slices.Clone(d.shown)
			if d.kind == "type" {
				for _, meth := range p.methods[name] {
					shown = append(shown, meth.Type)
				}
			}
			for _, n := range shown {
				for r := range bareNames(n) {
					if !u[r] && p.decls[r] != nil {
						u[r] = true
						queue = append(queue, r)
					}
				}
			}
		}
	}
	out := map[string][]string{}
	for dir, p := range m.pkgs {
		for name, d := range p.decls {
			if used[dir][name] {
				continue
			}
			pos := m.fset.Position(d.pos)
			file := filepath.Base(pos.Filename)
			out[dir] = append(out[dir], fmt.Sprintf("%s/%s:%d: %s %s", dir, file, pos.Line, d.kind, name))
		}
		slices.SortFunc(out[dir], func(a, b string) int {
			return strings.Compare(a[strings.LastIndex(a, " ")+1:], b[strings.LastIndex(b, " ")+1:])
		})
	}
	return out
}

// selected returns, per import path, the names that f (or only the given
// nodes of f) selects from its imports: pkg.Name, with pkg the import's
// name in f and not a local variable that shadows it.
func (m *srcModule) selected(f *ast.File, within ...ast.Node) map[string]map[string]bool {
	local := map[string]string{} // import name in f -> path
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		switch {
		case imp.Name != nil:
			local[imp.Name.Name] = path
		default:
			local[m.importName(path)] = path
		}
	}
	out := map[string]map[string]bool{}
	if len(within) == 0 {
		within = []ast.Node{f}
	}
	for _, n := range within {
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Obj != nil {
				return true
			}
			if path, ok := local[id.Name]; ok {
				if out[path] == nil {
					out[path] = map[string]bool{}
				}
				out[path][sel.Sel.Name] = true
			}
			return true
		})
	}
	return out
}

// importName is the name a file uses for an import without a name: the
// package's own name for a package of the module, the last element of the
// path (without a major version suffix) for any other.
func (m *srcModule) importName(path string) string {
	if rel, ok := strings.CutPrefix(path, m.path+"/"); ok {
		if p := m.pkgs[rel]; p != nil {
			return p.files[0].Name.Name
		}
	}
	base := path[strings.LastIndex(path, "/")+1:]
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		rest := strings.TrimSuffix(path, "/"+base)
		base = rest[strings.LastIndex(rest, "/")+1:]
	}
	return base
}

// bareNames returns the exported identifiers n refers to without a
// package: not a selector's selected name, a field's or parameter's
// name, or an unexported field (which go doc hides).
func bareNames(n ast.Node) map[string]bool {
	out := map[string]bool{}
	var walk func(ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(n.X, walk)
			return false
		case *ast.StructType:
			shownFields(n.Fields, walk)
			return false
		case *ast.InterfaceType:
			shownFields(n.Methods, walk)
			return false
		case *ast.Field:
			ast.Inspect(n.Type, walk)
			return false
		case *ast.KeyValueExpr:
			if _, ok := n.Key.(*ast.Ident); !ok {
				ast.Inspect(n.Key, walk)
			}
			ast.Inspect(n.Value, walk)
			return false
		case *ast.Ident:
			if n.IsExported() {
				out[n.Name] = true
			}
		}
		return true
	}
	ast.Inspect(n, walk)
	return out
}

// shownFields walks the types of the fields (or methods) of a struct (or
// interface) that go doc shows: the embedded and the exported ones.
func shownFields(fields *ast.FieldList, walk func(ast.Node) bool) {
	for _, f := range fields.List {
		if f.Names == nil || slices.ContainsFunc(f.Names, (*ast.Ident).IsExported) {
			ast.Inspect(f.Type, walk)
		}
	}
}

// hasOutput reports whether the example fn of f has an "// Output:" (or
// "// Unordered output:") comment, so that go test runs it.
func hasOutput(f *ast.File, fn *ast.FuncDecl) bool {
	for _, g := range f.Comments {
		if g.Pos() < fn.Body.Lbrace || g.End() > fn.Body.Rbrace {
			continue
		}
		for _, c := range g.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if strings.HasPrefix(text, "Output:") || strings.HasPrefix(strings.ToLower(text), "unordered output:") {
				return true
			}
		}
	}
	return false
}

// isExample reports whether name is an example function's: Example, or
// Example followed by an exported name.
func isExample(name string) bool {
	rest, ok := strings.CutPrefix(name, "Example")
	if !ok {
		return false
	}
	if rest == "" || rest[0] == '_' {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsUpper(r)
}

// moduleRoot returns the directory of the module's go.mod, above the
// test's working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// recvName is the name of a method's receiver type, without pointer or type
// parameters.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// TestUnusedExportsRule checks the rule of TestNoUnusedExport on a small
// module written for it.
func TestUnusedExportsRule(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"a/a.go": `package a

func Used() R       { return R{} } // named by b
func Unused()       {}
func OnlyTests()    {} // named by b's tests only
func Named()        {} // ExampleNamed
func NoOutput()     {} // ExampleNoOutput, which does not run
func unexported() F { return F{} }

const Shown = 1 // named in an Example's body

type T struct{} // ExampleT_Method

func (T) Method() {}

type R struct {
	Field F // reached: an exported field of a result of Used
	hidden H
}

type F struct{}
type H struct{} // only in an unexported field
`,
		"a/example_test.go": `package a_test

import (
	"fmt"

	"example.com/m/a"
)

func ExampleNamed() {
	a.Named()
	// Output:
}

func ExampleT_Method() {
	// Output:
}

func Example() {
	fmt.Println(a.Shown)
	// Output: 1
}

func ExampleNoOutput() {
	a.NoOutput()
}
`,
		"b/b.go": `package b

import x "example.com/m/a"

var _ = x.Used

// x.Unused is the field of a parameter that shadows the import.
func f(x struct{ Unused int }) int { return x.Unused }
`,
		"b/b_test.go": `package b

import (
	"example.com/m/a"
	"example.com/m/h/htest"
)

var _, _ = a.OnlyTests, htest.Helper
`,
		"h/htest/htest.go": "package htest\n\nfunc Helper() {}\n",
		"cmd/main.go":      "package main\n\nimport \"example.com/m/a\"\n\nfunc main() { a.Used() }\n\nfunc Exported() {}\n",
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod, err := parseModule(root)
	if err != nil {
		t.Fatal(err)
	}
	got := mod.unusedExports()
	want := map[string][]string{
		"a": {"a/a.go:22: type H", "a/a.go:7: func NoOutput", "a/a.go:5: func OnlyTests", "a/a.go:4: func Unused"},
	}
	for dir, names := range got {
		if len(names) == 0 {
			delete(got, dir)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("unused exports:\n got %v\nwant %v", got, want)
	}
}

package yamlsrc_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
)

// nest returns n copies of open, then close n times: n nested collections.
func nest(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// blockMaps returns n block mappings, each nested in the one before.
func blockMaps(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

// checkCases are YAML texts Check must accept (want "") or refuse (want
// "line:col: message", or the message alone for a size).
var checkCases = []struct {
	name, src, want string
}{
	{name: "empty", src: ""},
	{name: "config", src: "agents:\n  - name: a\n    tools: [read_file, {x: [1, 2]}]\n    extensions:\n      - name: audit\n        config: {limit: 3}\n"},
	{name: "flow at the limit", src: "a: " + nest("[", "]", 99)},
	{name: "flow mappings at the limit", src: nest("{a: ", "}", 100)},
	{name: "dashes at the limit", src: strings.Repeat("- ", 100) + "x\n"},
	{name: "block mappings at the limit", src: blockMaps(100)},
	{name: "block and flow at the limit", src: blockMaps(50) + strings.Repeat(" ", 50) + "- " + nest("[", "]", 49)},
	{name: "sequence at its mapping's column", src: "a:\n- b:\n  - c\n- d\ne: " + nest("[", "]", 99)},
	{name: "brackets in a plain scalar", src: "text: a " + strings.Repeat("[", 500) + "\nb: c\n"},
	{name: "brackets in quoted scalars", src: "a: \"" + strings.Repeat("[", 500) + "\\\"\"\nb: '" + strings.Repeat("{", 500) + "'''\n"},
	{name: "brackets in a multi-line quoted scalar", src: "a: \"x\n" + strings.Repeat("[", 500) + "\n  \"\nb: [1]\n"},
	{name: "brackets in quotes in a flow", src: "a: [\"]]\", 'it''s', \"" + strings.Repeat("[", 500) + "\"]\n"},
	{name: "brackets in a block scalar", src: "a:\n  text: |\n    " + strings.Repeat("[", 500) + "\n\n     " + strings.Repeat("{", 500) + "\n  b: 1\n"},
	{name: "brackets in a folded scalar with indicators", src: "- >-2 # folded\n  " + strings.Repeat("[", 500) + "\n- x\n"},
	{name: "brackets in comments", src: "# " + strings.Repeat("[", 500) + "\na: [1, 2] # " + strings.Repeat("{", 500) + "\nb: [ # " + strings.Repeat("[", 500) + "\n  3]\n"},
	{name: "hash in a plain scalar", src: "a: b#" + strings.Repeat("[", 500) + "\n"},
	{name: "documents", src: strings.Repeat("---\n"+blockMaps(99), 3) + "...\n"},
	{name: "quote in a plain scalar", src: "a: don't " + strings.Repeat("[", 500) + "\nb: [don't, " + nest("[", "]", 97) + "]\n"},
	{name: "anchors and tags", src: "a: &x !!seq " + nest("[", "]", 99) + "\nb: *x\n"},
	{name: "flow key", src: "[a, b]: " + nest("[", "]", 98) + "\n"},
	{name: "byte order mark", src: "\ufeffa: [1]\n"},
	{name: "crlf", src: "a:\r\n  - [1]\r\n"},

	{name: "flow", src: "a: " + nest("[", "]", 100), want: "1:103: nested deeper than the limit of 100 levels"},
	{name: "open flow", src: "a: " + strings.Repeat("[", 200_000), want: "1:103: nested deeper than the limit of 100 levels"},
	{name: "flow mappings", src: nest("{a: ", "}", 101), want: "1:401: nested deeper than the limit of 100 levels"},
	{name: "dashes", src: strings.Repeat("- ", 101) + "x\n", want: "1:201: nested deeper than the limit of 100 levels"},
	{name: "block mappings", src: blockMaps(101), want: "101:101: nested deeper than the limit of 100 levels"},
	{name: "block and flow", src: blockMaps(50) + strings.Repeat(" ", 50) + "- " + nest("[", "]", 50), want: "51:102: nested deeper than the limit of 100 levels"},
	{name: "flow over lines", src: "a:\n" + strings.Repeat(" [\n", 101), want: "101:2: nested deeper than the limit of 100 levels"},
	{name: "column in characters", src: "é: ünï: " + strings.Repeat("[", 101), want: "1:108: nested deeper than the limit of 100 levels"},
	{name: "after a block scalar", src: "a: |\n  x\nb: " + strings.Repeat("[", 101), want: "3:103: nested deeper than the limit of 100 levels"},
	{name: "less indented than a block scalar", src: "a: |\n    x\n  " + strings.Repeat("[", 101), want: "3:102: nested deeper than the limit of 100 levels"},
	{name: "after a document marker in a block scalar", src: "--- |\n  x\n---\n" + strings.Repeat("[", 101), want: "4:101: nested deeper than the limit of 100 levels"},
	{name: "after a document marker in a quoted scalar", src: "a: \"x\n---\n" + strings.Repeat("[", 101), want: "3:101: nested deeper than the limit of 100 levels"},
	{name: "lone carriage returns", src: "a: x\r" + strings.Repeat("[", 101), want: "2:100: nested deeper than the limit of 100 levels"},
	{name: "after a flow value", src: "a: [] " + strings.Repeat("[", 101), want: "1:106: nested deeper than the limit of 100 levels"},
	{name: "after a quoted key", src: `"a": ` + strings.Repeat("[", 101), want: "1:105: nested deeper than the limit of 100 levels"},
	{name: "after tags", src: "a: !t &x " + strings.Repeat("[", 101), want: "1:109: nested deeper than the limit of 100 levels"},
	{name: "explicit keys", src: strings.Repeat("? ", 101) + "x\n", want: "1:201: nested deeper than the limit of 100 levels"},
	{name: "too large", src: strings.Repeat("#", yamlsrc.MaxSize+1), want: "file is over the limit of 1048576 bytes (1 MiB)"},
}

func TestCheck(t *testing.T) {
	for _, tt := range checkCases {
		t.Run(tt.name, func(t *testing.T) {
			err := yamlsrc.Check([]byte(tt.src))
			got := ""
			if err != nil {
				var le *yamlsrc.LimitError
				if !errors.As(err, &le) {
					t.Fatalf("got %T %v, want a *LimitError", err, err)
				}
				got = le.Msg
				if le.Line > 0 {
					got = fmt.Sprintf("%d:%d: %s", le.Line, le.Column, le.Msg)
				}
				if le.Error() != le.Msg {
					t.Errorf("Error() = %q, want Msg %q", le.Error(), le.Msg)
				}
			}
			if got != tt.want {
				t.Fatalf("Check = %q, want %q", got, tt.want)
			}
			if err == nil && len(tt.src) < 1<<16 {
				checkParsedDepth(t, []byte(tt.src))
			}
		})
	}
}

// TestCheckShippedFiles checks that every YAML file of the repository is
// within the limits.
func TestCheckShippedFiles(t *testing.T) {
	for _, f := range shippedFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yamlsrc.Check(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// shippedFiles returns the YAML files of the repository.
func shippedFiles(t testing.TB) []string {
	var files []string
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && d.Name() != "." && d.Name() != ".." {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no YAML file found")
	}
	return files
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		size int
		want int // bytes read
	}{
		{"small", 10, 10},
		{"at the limit", yamlsrc.MaxSize, yamlsrc.MaxSize},
		{"larger", 3 * yamlsrc.MaxSize, yamlsrc.MaxSize + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".yaml")
			if err := os.WriteFile(path, []byte(strings.Repeat("#", tt.size)), 0o644); err != nil {
				t.Fatal(err)
			}
			data, err := yamlsrc.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != tt.want {
				t.Errorf("read %d bytes, want %d", len(data), tt.want)
			}
		})
	}
	if _, err := yamlsrc.ReadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

// FuzzCheck checks that Check never panics, and that what it accepts the
// YAML library does not parse into collections nested much deeper than
// MaxDepth: twice, since a single pair in a flow sequence ("[a: b]") is a
// mapping the check does not count.
//
// Seeds: the cases of TestCheck and the repository's YAML files.
// Run with: go test -run '^$' -fuzz FuzzCheck ./internal/yamlsrc
func FuzzCheck(f *testing.F) {
	for _, tt := range checkCases {
		if len(tt.src) < 1<<16 {
			f.Add([]byte(tt.src))
		}
	}
	for _, name := range shippedFiles(f) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			t.Skip("larger than the parser parses quickly")
		}
		if yamlsrc.Check(data) == nil {
			checkParsedDepth(t, data)
		}
	})
}

// checkParsedDepth parses data, which Check accepted, and fails if its
// collections nest deeper than 2×MaxDepth+1.
func checkParsedDepth(t *testing.T, data []byte) {
	t.Helper()
	file, err := func() (f *ast.File, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return parser.ParseBytes(data, 0)
	}()
	if err != nil {
		return // not YAML: only its cost mattered
	}
	for _, d := range file.Docs {
		if got := depth(d); got > 2*yamlsrc.MaxDepth+1 {
			t.Fatalf("Check accepted a document nested %d deep:\n%q", got, data)
		}
	}
}

// depth returns how deeply sequences and mapping entries nest in n.
func depth(n ast.Node) int {
	switch n := n.(type) {
	case nil:
		return 0
	case *ast.DocumentNode:
		return depth(n.Body)
	case *ast.MappingNode:
		d := 0
		for _, v := range n.Values {
			d = max(d, depth(v))
		}
		return d
	case *ast.MappingValueNode:
		return 1 + max(depth(n.Key), depth(n.Value))
	case *ast.MappingKeyNode:
		return depth(n.Value)
	case *ast.SequenceNode:
		d := 0
		for _, v := range n.Values {
			d = max(d, depth(v))
		}
		return 1 + d
	case *ast.AnchorNode:
		return depth(n.Value)
	case *ast.TagNode:
		return depth(n.Value)
	}
	return 0
}

package yamlsrc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
)

// scalarAt is a scalar of a parsed file: its value, where it starts and
// the indentation of what holds it, as ScalarPositions takes them.
type scalarAt struct {
	value  string
	start  yamlsrc.Pos
	indent int
}

// mappingScalars returns the string values of every mapping in data, in
// file order.
func mappingScalars(data []byte) ([]scalarAt, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, err
	}
	var out []scalarAt
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		for _, n := range ast.Filter(ast.MappingValueType, doc.Body) {
			mv := n.(*ast.MappingValueNode)
			indent := mv.Key.GetToken().Position.Column - 1
			// The column after the colon: the parser's own column of a
			// plain scalar is off by the blanks that follow it.
			colon := mv.Start.Position
			after := yamlsrc.Pos{Line: colon.Line, Column: colon.Column + 1}
			switch v := mv.Value.(type) {
			case *ast.StringNode:
				out = append(out, scalarAt{v.Value, after, indent})
			case *ast.LiteralNode:
				out = append(out, scalarAt{v.Value.Value, after, indent})
			}
		}
	}
	return out, nil
}

// checkPositions checks what ScalarPositions promises of pos: each
// character of value is at the same character of the file, at the
// backslash or quote of an escape, or at a line's end for a character a
// line break wrote; positions never go back; the end is in the file.
func checkPositions(lines []string, value string, pos []yamlsrc.Pos) error {
	runes := []rune(value)
	if len(pos) != len(runes)+1 {
		return fmt.Errorf("%d positions for %d characters", len(pos), len(runes))
	}
	for k, p := range pos {
		if p.Line < 1 || p.Line > len(lines) {
			return fmt.Errorf("character %d at %d:%d: no such line", k, p.Line, p.Column)
		}
		line := []rune(lines[p.Line-1])
		if p.Column < 1 || p.Column > len(line)+1 {
			return fmt.Errorf("character %d at %d:%d: no such column", k, p.Line, p.Column)
		}
		if k > 0 && (p.Line < pos[k-1].Line || p.Line == pos[k-1].Line && p.Column < pos[k-1].Column) {
			return fmt.Errorf("character %d at %d:%d is before character %d at %d:%d", k, p.Line, p.Column, k-1, pos[k-1].Line, pos[k-1].Column)
		}
		if k == len(runes) {
			break
		}
		r := runes[k]
		if p.Column == len(line)+1 {
			if r != ' ' && r != '\n' {
				return fmt.Errorf("character %d %q at the end of line %d", k, r, p.Line)
			}
			continue
		}
		if c := line[p.Column-1]; c != r && c != '\\' {
			return fmt.Errorf("character %d %q at %d:%d, which holds %q", k, r, p.Line, p.Column, c)
		}
	}
	return nil
}

// render lists positions as "line:column" words.
func render(pos []yamlsrc.Pos) string {
	words := make([]string, len(pos))
	for i, p := range pos {
		words[i] = fmt.Sprintf("%d:%d", p.Line, p.Column)
	}
	return strings.Join(words, " ")
}

// TestScalarPositions places every character of a value, in every scalar
// style, and the end of the value after its last character.
func TestScalarPositions(t *testing.T) {
	tests := []struct {
		name, src string
		value     string // as the YAML parser reads it
		want      string // where each character is, then the end
	}{
		{"plain", "k: a b\n", "a b", "1:4 1:5 1:6 1:7"},
		{"plain after a multibyte key", "é: ab\n", "ab", "1:4 1:5 1:6"},
		{"plain before a comment", "k: ab  # c\n", "ab", "1:4 1:5 1:6"},
		{"plain before blanks", "k: a b  \n", "a b", "1:4 1:5 1:6 1:7"},
		{"plain after a comment", "k:  # c\n\n  # d\n  ab \n", "ab", "4:3 4:4 4:5"},
		{"plain over lines", "k: a\n  b  \n\n   c\n", "a b\nc", "1:4 1:5 2:3 3:1 4:4 4:5"},
		{"plain with tabs", "k: a\t\n \tb\n", "a b", "1:4 1:6 2:3 2:4"},
		{"single-quoted", "k: 'a''b'\n", "a'b", "1:5 1:6 1:8 1:9"},
		{"single-quoted over lines", "k: 'a \n\n  b'\n", "a\nb", "1:5 2:1 3:3 3:4"},
		{"double-quoted", "k: \"a\\tb\"\n", "a\tb", "1:5 1:6 1:8 1:9"},
		{"double-quoted escapes", "k: \"\\x41\\u00e9\\U0001F600\\\\\"\n", "Aé😀\\", "1:5 1:9 1:15 1:25 1:27"},
		{"double-quoted over lines", "k: \"a\n  b\"\n", "a b", "1:5 1:6 2:3 2:4"},
		{"double-quoted escaped line break", "k: \"a \\\n   b\"\n", "a b", "1:5 1:6 2:4 2:5"},
		{"literal", "k: |\n  ab\n  c\n", "ab\nc\n", "2:3 2:4 2:5 3:3 3:4 3:4"},
		{"literal strip", "k: |-\n  ab\n", "ab", "2:3 2:4 2:5"},
		{"literal keep", "k: |+\n  a\n\n", "a\n\n", "2:3 2:4 3:1 3:1"},
		{"literal more indented", "k: |\n  a\n    b\n", "a\n  b\n", "2:3 2:4 3:3 3:4 3:5 3:6 3:6"},
		{"literal explicit indentation", "k: |1\n  a\n b\n", " a\nb\n", "2:2 2:3 2:4 3:2 3:3 3:3"},
		{"literal indicators in either order", "k: |-1\n  a\n", " a", "2:2 2:3 2:4"},
		{"literal nested", "r:\n  - n: x\n    k: |2-\n        a\n", "  a", "4:7 4:8 4:9 4:10"},
		{"folded", "k: >\n  a\n  b\n", "a b\n", "2:3 2:4 3:3 3:4 3:4"},
		{"folded empty line", "k: >-\n  a\n\n  b\n", "a\nb", "2:3 3:1 4:3 4:4"},
		{"folded more indented", "k: >\n  a\n   b\n  c\n", "a\n b\nc\n", "2:3 2:4 3:3 3:4 3:5 4:3 4:4 4:4"},
		{"folded keep", "k: >+\n  a\n\n", "a\n\n", "2:3 2:4 3:1 3:1"},
		{"folded leading empty line", "k: >\n\n  a\n", "\na\n", "2:1 3:3 3:4 3:4"},
		{"block with a comment", "k: | # c\n  a\n", "a\n", "2:3 2:4 2:4"},
		{"block on the next line", "k:\n  |\n   a\n", "a\n", "3:4 3:5 3:5"},
		{"empty plain", "k: ''\n", "", "1:5"},
		{"crlf", "k: |\r\n  a\r\n  b\r\n", "a\nb\n", "2:3 2:4 3:3 3:4 3:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := mappingScalars([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			s := sc[len(sc)-1]
			if s.value != tt.value {
				t.Fatalf("the YAML parser reads %q, want %q", s.value, tt.value)
			}
			lines := yamlsrc.Lines([]byte(tt.src))
			pos, ok := yamlsrc.ScalarPositions(lines, s.start, s.indent, s.value)
			if !ok {
				t.Fatalf("ScalarPositions(%v, %d, %q) cannot place the value", s.start, s.indent, s.value)
			}
			if got := render(pos); got != tt.want {
				t.Errorf("positions = %s\nwant        %s", got, tt.want)
			}
			if err := checkPositions(lines, s.value, pos); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestScalarPositionsRefuses: a value the text at start does not decode
// to cannot be placed.
func TestScalarPositionsRefuses(t *testing.T) {
	lines := yamlsrc.Lines([]byte("k: \"ab\"\nl: |\n  x\nm: \"\\q\"\n"))
	tests := []struct {
		name  string
		start yamlsrc.Pos
		value string
	}{
		{"another value", yamlsrc.Pos{Line: 1, Column: 4}, "ac"},
		{"a longer value", yamlsrc.Pos{Line: 1, Column: 4}, "abc"},
		{"past the block", yamlsrc.Pos{Line: 2, Column: 4}, "x\ny"},
		{"no such escape", yamlsrc.Pos{Line: 4, Column: 4}, "q"},
		{"no such line", yamlsrc.Pos{Line: 9, Column: 1}, "x"},
		{"no such column", yamlsrc.Pos{Line: 1, Column: 40}, "x"},
		{"line zero", yamlsrc.Pos{Line: 0, Column: 1}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if pos, ok := yamlsrc.ScalarPositions(lines, tt.start, 0, tt.value); ok {
				t.Errorf("placed %q at %s", tt.value, render(pos))
			}
		})
	}
}

// FuzzScalarPositions: whatever the file, ScalarPositions does not panic,
// and every mapping value it places is placed as promised.
func FuzzScalarPositions(f *testing.F) {
	seeds := []string{
		"k: a b\n", "k: 'a''b'\n", "k: \"a\\tb\\\n  c\"\n", "k: |\n  a\n   b\n\n", "k: >-\n  a\n\n  b\n   c\n",
		"- n: x\n  k: |2+\n     a\n\n", "k: a\n  b\n\n  c # d\n", "k: \"\\u00e9\\x41\"\n", "k: {a: b c, d: 'e\n  f'}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if yamlsrc.Check(data) != nil {
			return
		}
		sc, err := mappingScalars(data)
		if err != nil {
			return
		}
		lines := yamlsrc.Lines(data)
		for _, s := range sc {
			pos, ok := yamlsrc.ScalarPositions(lines, s.start, s.indent, s.value)
			if !ok {
				continue
			}
			if err := checkPositions(lines, s.value, pos); err != nil {
				t.Fatalf("%q at %v: %v", s.value, s.start, err)
			}
		}
	})
}

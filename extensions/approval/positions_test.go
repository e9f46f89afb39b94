package approval

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
)

// whenRule is a rules file with one rule whose when is the scalar text
// when (ending with its line break), indented as a rule's when is.
func whenRule(when string) string {
	return "default: ask\nrules:\n  - name: r\n    when: " + when + "    decision: deny\n"
}

// TestWhenPositions: an expression error points at the character expr
// names, whatever YAML scalar style holds the expression: plain, quoted,
// literal or folded, over one line or several, with chomping and
// indentation indicators.
func TestWhenPositions(t *testing.T) {
	tests := []struct{ name, when, want string }{
		{
			name: "plain",
			when: "tool.name == \"x\" && args.y === 1\n",
			want: `rules.yaml:4:40: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: tool.name == "x" && args.y === 1
                                              ^
   5 |     decision: deny`,
		},
		{
			name: "plain with a multibyte character",
			when: "tool.name == \"é\" && args.y === 1\n",
			want: `rules.yaml:4:40: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: tool.name == "é" && args.y === 1
                                              ^
   5 |     decision: deny`,
		},
		{
			name: "plain over lines",
			when: "tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:5:16: rule "r": unexpected token Operator("=")
   2 | rules:
   3 |   - name: r
   4 |     when: tool.name == "x" &&
>  5 |       args.y === 1
                      ^
   6 |     decision: deny`,
		},
		{
			name: "plain before blanks",
			when: "tool.name == \"x\" && args.y === 1   \n",
			want: `rules.yaml:4:40: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: tool.name == "x" && args.y === 1
                                              ^
   5 |     decision: deny`,
		},
		{
			name: "single-quoted",
			when: "'tool.name == ''x'' && args.y === 1'\n",
			want: `rules.yaml:4:43: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: 'tool.name == ''x'' && args.y === 1'
                                                 ^
   5 |     decision: deny`,
		},
		{
			name: "single-quoted over lines",
			when: "'tool.name == \"x\" &&\n\n      args.y === 1'\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: 'tool.name == "x" &&
   5 |
>  6 |       args.y === 1'
                      ^
   7 |     decision: deny`,
		},
		{
			name: "double-quoted with escapes",
			when: "\"tool.name == \\\"x\\ty\\\" && args.y === 1\"\n",
			want: `rules.yaml:4:46: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: "tool.name == \"x\ty\" && args.y === 1"
                                                    ^
   5 |     decision: deny`,
		},
		{
			name: "double-quoted with a unicode escape",
			when: "\"tool.name == \\\"\\u00e9\\\" && args.y === 1\"\n",
			want: `rules.yaml:4:48: rule "r": unexpected token Operator("=")
   1 | default: ask
   2 | rules:
   3 |   - name: r
>  4 |     when: "tool.name == \"\u00e9\" && args.y === 1"
                                                      ^
   5 |     decision: deny`,
		},
		{
			name: "double-quoted over lines",
			when: "\"tool.name == \\\"x\\\" &&\n      args.y === 1\"\n",
			want: `rules.yaml:5:16: rule "r": unexpected token Operator("=")
   2 | rules:
   3 |   - name: r
   4 |     when: "tool.name == \"x\" &&
>  5 |       args.y === 1"
                      ^
   6 |     decision: deny`,
		},
		{
			name: "double-quoted escaped line break",
			when: "\"tool.name == \\\"x\\\" && \\\n      args.y === 1\"\n",
			want: `rules.yaml:5:16: rule "r": unexpected token Operator("=")
   2 | rules:
   3 |   - name: r
   4 |     when: "tool.name == \"x\" && \
>  5 |       args.y === 1"
                      ^
   6 |     decision: deny`,
		},
		{
			name: "literal",
			when: "|\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: |
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "literal strip",
			when: "|-\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: |-
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "literal keep",
			when: "|+\n      tool.name == \"x\" &&\n      args.y === 1\n\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: |+
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |
   8 |     decision: deny`,
		},
		{
			name: "literal explicit indentation",
			when: "|1\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: |1
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "literal at the end",
			when: "|\n      tool.name == \"x\" &&\n      args.y ==\n",
			want: `rules.yaml:6:16: rule "r": unexpected token EOF
   3 |   - name: r
   4 |     when: |
   5 |       tool.name == "x" &&
>  6 |       args.y ==
                      ^
   7 |     decision: deny`,
		},
		{
			name: "literal more indented",
			when: "|\n      tool.name == \"x\" &&\n        args.y === 1\n",
			want: `rules.yaml:6:18: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: |
   5 |       tool.name == "x" &&
>  6 |         args.y === 1
                        ^
   7 |     decision: deny`,
		},
		{
			name: "literal unknown name",
			when: "|\n      tool.name == \"x\" &&\n      tool.nmae == \"y\"\n",
			want: `rules.yaml:6:12: rule "r": type approval.ToolInfo has no field nmae
   3 |   - name: r
   4 |     when: |
   5 |       tool.name == "x" &&
>  6 |       tool.nmae == "y"
                  ^
   7 |     decision: deny`,
		},
		{
			name: "folded",
			when: ">\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: >
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "folded strip",
			when: ">-\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: >-
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "folded keep",
			when: ">+\n      tool.name == \"x\" &&\n      args.y === 1\n\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: >+
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |
   8 |     decision: deny`,
		},
		{
			name: "folded explicit indentation",
			when: ">2\n      tool.name == \"x\" &&\n      args.y === 1\n",
			want: `rules.yaml:6:16: rule "r": unexpected token Operator("=")
   3 |   - name: r
   4 |     when: >2
   5 |       tool.name == "x" &&
>  6 |       args.y === 1
                      ^
   7 |     decision: deny`,
		},
		{
			name: "folded with an empty line",
			when: ">\n      tool.name == \"x\" &&\n\n      args.y === 1\n",
			want: `rules.yaml:7:16: rule "r": unexpected token Operator("=")
   4 |     when: >
   5 |       tool.name == "x" &&
   6 |
>  7 |       args.y === 1
                      ^
   8 |     decision: deny`,
		},
		{
			name: "folded more indented",
			when: ">\n      tool.name == \"x\" &&\n        args.z &&\n      args.y === 1\n",
			want: `rules.yaml:7:16: rule "r": unexpected token Operator("=")
   4 |     when: >
   5 |       tool.name == "x" &&
   6 |         args.z &&
>  7 |       args.y === 1
                      ^
   8 |     decision: deny`,
		},
		{
			name: "folded at the end",
			when: ">\n      tool.name == \"x\" &&\n      args.y ==\n",
			want: `rules.yaml:6:16: rule "r": unexpected token EOF
   3 |   - name: r
   4 |     when: >
   5 |       tool.name == "x" &&
>  6 |       args.y ==
                      ^
   7 |     decision: deny`,
		},
		{
			name: "folded unknown name",
			when: ">\n      tool.name == \"x\" &&\n      tool.nmae == \"y\"\n",
			want: `rules.yaml:6:12: rule "r": type approval.ToolInfo has no field nmae
   3 |   - name: r
   4 |     when: >
   5 |       tool.name == "x" &&
>  6 |       tool.nmae == "y"
                  ^
   7 |     decision: deny`,
		},
		{
			name: "block on the next line",
			when: "\n      >\n        tool.name == \"x\" &&\n        args.y === 1\n",
			want: `rules.yaml:7:18: rule "r": unexpected token Operator("=")
   4 |     when:
   5 |       >
   6 |         tool.name == "x" &&
>  7 |         args.y === 1
                        ^
   8 |     decision: deny`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("rules.yaml", []byte(whenRule(tt.when)))
			if err == nil {
				t.Fatal("parse accepted it")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error =\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// scalarWriter writes an expression as a YAML scalar that starts after
// "when: " on line 4 of [whenRule]'s file, and records where it puts each
// of the expression's characters: a written character where it is, an
// escaped one at its backslash or quote, one that a line break stands for
// at the end of that line. It is the oracle the fuzz target checks the
// positions of errors against.
type scalarWriter struct {
	b     strings.Builder
	line  int
	col   int
	at    []yamlsrc.Pos // where each character of the expression is
	after yamlsrc.Pos   // right after the last one
}

func newScalarWriter() *scalarWriter {
	return &scalarWriter{line: 4, col: len("    when: ") + 1}
}

func (w *scalarWriter) pos() yamlsrc.Pos { return yamlsrc.Pos{Line: w.line, Column: w.col} }

// raw writes s, which stands for no character of the expression.
func (w *scalarWriter) raw(s string) {
	for _, r := range s {
		w.b.WriteRune(r)
		if r == '\n' {
			w.line, w.col = w.line+1, 1
		} else {
			w.col++
		}
	}
}

// char writes s, which stands for the expression's next character.
func (w *scalarWriter) char(s string) {
	w.at = append(w.at, w.pos())
	w.raw(s)
	w.after = w.pos()
}

// lineBreak ends the line with a break that stands for the expression's
// next character.
func (w *scalarWriter) lineBreak() {
	w.at = append(w.at, w.pos())
	w.after = w.pos()
	w.raw("\n")
}

// result returns the scalar text (with its final line break) and where
// each character and the end of the expression are; empty is the end of
// an empty expression.
func (w *scalarWriter) result(empty yamlsrc.Pos) (string, []yamlsrc.Pos) {
	end := w.after
	if len(w.at) == 0 {
		end = empty
	}
	text := w.b.String()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text, append(w.at, end)
}

// An encoder writes an expression in one scalar style, or reports that
// the style cannot hold it.
type encoder func(e []rune) (text string, at []yamlsrc.Pos, ok bool)

const contIndent = "      " // the indentation of a when's later lines

// printable reports whether r may stand as itself in a YAML scalar other
// than a double-quoted one: a blank, or a graphic character of Unicode but
// the byte order mark.
func printable(r rune) bool {
	return r == ' ' || r == '\t' || r != '\ufeff' && unicode.IsPrint(r)
}

func blank(r rune) bool { return r == ' ' || r == '\t' }

// foldable reports whether the space at e[i] may be written as a line
// break in a flow scalar: a single space between two characters that are
// not blanks, and not before a character that would start a comment or a
// collection on the next line.
func foldable(e []rune, i int) bool {
	return e[i] == ' ' && i > 0 && i+1 < len(e) && !blank(e[i-1]) && !blank(e[i+1]) && e[i-1] != '\n' && e[i+1] != '\n' &&
		!strings.ContainsRune("#-?:,[]{}&*!|>'\"%@`", e[i+1])
}

// plainEncoder writes e unquoted, breaking the line at every foldable
// space if fold is set.
func plainEncoder(fold bool) encoder {
	return func(e []rune) (string, []yamlsrc.Pos, bool) {
		s := string(e)
		if len(e) == 0 || blank(e[0]) || blank(e[len(e)-1]) || strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", e[0]) ||
			strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.Contains(s, "\t") || strings.HasSuffix(s, ":") {
			return "", nil, false
		}
		w := newScalarWriter()
		for i, r := range e {
			switch {
			case !printable(r) || r == '\n':
				return "", nil, false
			case fold && foldable(e, i):
				w.lineBreak()
				w.raw(contIndent)
			default:
				w.char(string(r))
			}
		}
		text, at := w.result(yamlsrc.Pos{})
		return text, at, true
	}
}

// singleQuotedEncoder writes e in single quotes: a quote doubled, a
// newline as an empty line, and every foldable space as a line break if
// fold is set.
func singleQuotedEncoder(fold bool) encoder {
	return func(e []rune) (string, []yamlsrc.Pos, bool) {
		if (fold || slices.Contains(e, '\n')) && slices.Contains(e, '\'') {
			// Over several lines, the YAML library misreads the blanks and
			// breaks after an escaped quote ('') on a later line.
			return "", nil, false
		}
		w := newScalarWriter()
		w.raw("'")
		empty := w.pos()
		for i, r := range e {
			switch {
			case r == '\n':
				if i == 0 || i == len(e)-1 || blank(e[i-1]) || blank(e[i+1]) {
					return "", nil, false // the blanks around a break are not kept
				}
				if e[i-1] != '\n' {
					w.raw("\n")
				}
				w.lineBreak()
				if e[i+1] != '\n' {
					w.raw(contIndent)
				}
			case !printable(r):
				return "", nil, false
			case r == '\'':
				w.char("''")
			case fold && foldable(e, i):
				w.lineBreak()
				w.raw(contIndent)
			default:
				w.char(string(r))
			}
		}
		w.raw("'")
		text, at := w.result(empty)
		return text, at, true
	}
}

// doubleQuotedEncoder writes e in double quotes, escaping what must be;
// with fold, a foldable space as a line break; with breaks, an escaped
// line break before every eighth character that is not a blank.
func doubleQuotedEncoder(fold, breaks bool) encoder {
	return func(e []rune) (string, []yamlsrc.Pos, bool) {
		w := newScalarWriter()
		w.raw(`"`)
		empty := w.pos()
		for i, r := range e {
			if breaks && i > 0 && i%8 == 0 && !blank(r) {
				w.raw("\\\n" + contIndent)
			}
			switch {
			case r == '"' || r == '\\':
				w.char(`\` + string(r))
			case r == '\t':
				w.char(`\t`)
			case r == '\n':
				w.char(`\n`)
			case r == ' ' && fold && foldable(e, i):
				w.lineBreak()
				w.raw(contIndent)
			case r == ' ':
				w.char(" ")
			case !printable(r) && r <= 0xffff:
				w.char(fmt.Sprintf(`\u%04X`, r))
			case !printable(r):
				w.char(fmt.Sprintf(`\U%08X`, r))
			default:
				w.char(string(r))
			}
		}
		w.raw(`"`)
		text, at := w.result(empty)
		return text, at, true
	}
}

// stripsSpaces reports whether the YAML library would read e otherwise in
// a block scalar: with strip chomping (no final line break), it drops the
// spaces that end the last line.
func stripsSpaces(e []rune) bool { return len(e) > 0 && e[len(e)-1] == ' ' }

// chomping returns the chomping indicator that keeps e's final line
// breaks: - for none, "" (clip) for one, + for more, or + for one too if
// keep is set.
func chomping(e []rune, keep bool) string {
	n := 0
	for n < len(e) && e[len(e)-1-n] == '\n' {
		n++
	}
	switch {
	case n == 0:
		return "-"
	case n == 1 && !keep:
		return ""
	}
	return "+"
}

// literalEncoder writes e as a literal block scalar, with an explicit
// indentation indicator if explicit is set (which lets e's first line
// start with a space).
func literalEncoder(explicit, keep bool) encoder {
	return func(e []rune) (string, []yamlsrc.Pos, bool) {
		if stripsSpaces(e) || len(e) > 0 && strings.Trim(string(e), "\n") == "" {
			return "", nil, false // only empty lines, whose breaks chomping drops
		}
		lines := strings.Split(string(e), "\n")
		for _, l := range lines {
			if l != "" && strings.Trim(l, " \t") == "" || strings.HasPrefix(l, "\t") {
				// A line of blanks: the YAML library reads it as an empty
				// line, where YAML keeps the blanks past the indentation.
				// A line that starts with a tab: it drops blanks after it.
				return "", nil, false
			}
			for _, r := range l {
				if !printable(r) {
					return "", nil, false
				}
			}
		}
		if !explicit {
			for _, l := range lines {
				if l == "" {
					continue
				}
				if l[0] == ' ' {
					return "", nil, false
				}
				break
			}
		}
		w := newScalarWriter()
		empty := w.pos()
		header := "|"
		if explicit {
			header += "2"
		}
		w.raw(header + chomping(e, keep) + "\n")
		if chomping(e, keep) != "-" {
			lines = lines[:len(lines)-1] // the last break ends the last line
		}
		for i, l := range lines {
			if l != "" {
				w.raw(contIndent)
			}
			for _, r := range l {
				w.char(string(r))
			}
			if i < len(lines)-1 || chomping(e, keep) != "-" {
				w.lineBreak()
			}
		}
		text, at := w.result(empty)
		return text, at, true
	}
}

// foldedEncoder writes e as a folded block scalar: a newline between two
// lines as an empty line, a foldable space as a line break if fold is set.
// Lines that start with a blank, whose breaks folding keeps, are left out.
func foldedEncoder(explicit, fold, keep bool) encoder {
	return func(e []rune) (string, []yamlsrc.Pos, bool) {
		for _, l := range strings.Split(string(e), "\n") {
			if l != "" && blank([]rune(l)[0]) {
				return "", nil, false
			}
			for _, r := range l {
				if !printable(r) {
					return "", nil, false
				}
			}
		}
		if stripsSpaces(e) {
			return "", nil, false
		}
		trailing := 0
		for trailing < len(e) && e[len(e)-1-trailing] == '\n' {
			trailing++
		}
		body := e[:len(e)-trailing]
		if len(body) == 0 && trailing > 0 {
			return "", nil, false // only empty lines
		}
		w := newScalarWriter()
		empty := w.pos()
		header := ">"
		if explicit {
			header += "2"
		}
		w.raw(header + chomping(e, keep) + "\n")
		lineStart := true // nothing written on the current line yet
		for i, r := range body {
			switch {
			case r == '\n':
				if !lineStart {
					w.raw("\n") // the break after a line of text, dropped before an empty line
				}
				w.lineBreak() // an empty line: a newline
				lineStart = true
			case fold && foldable(body, i):
				w.lineBreak()
				w.raw(contIndent)
			default:
				if lineStart {
					w.raw(contIndent)
					lineStart = false
				}
				w.char(string(r))
			}
		}
		if trailing > 0 {
			w.lineBreak() // the last line's break
			for range trailing - 1 {
				w.lineBreak() // empty lines the keep indicator keeps
			}
		}
		text, at := w.result(empty)
		return text, at, true
	}
}

// whenValue returns the expression the YAML library reads as the when of
// the rules file src.
func whenValue(src string) (string, error) {
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		return "", err
	}
	for _, n := range ast.Filter(ast.MappingValueType, f.Docs[0].Body) {
		if mv := n.(*ast.MappingValueNode); mv.Key.GetToken().Value == "when" {
			if mv.Value.Type() == ast.NullType {
				return "", errors.New("when: null is a missing when")
			}
			w, err := whenOf(mv.Value)
			return w.expr, err
		}
	}
	return "", errors.New("no when")
}

var errorAt = regexp.MustCompile(`^rules\.yaml:(\d+):(\d+): `)

// FuzzWhenPositions writes an expression in every scalar style a rule's
// when can take and, when expr refuses the expression, checks that the
// error points at the character of the file that holds the character expr
// names (or, for an error at the end, right after the expression).
func FuzzWhenPositions(f *testing.F) {
	for _, s := range []string{
		`tool.name == "x" && args.y === 1`,
		"tool.name == 'x' &&\nargs.y ==\n",
		"tool.name == \"é\\t\" &&\n\n  tool.nmae == \"y\"\n\n",
		"\nargs.path startsWith \"/etc\" and\targs.x in [1, 2, ,]",
		"any(paths, {glob(\"**/.env*\", #)}) && step > 1 +",
		`"\u00e9" == 'it''s' or`,
		"none(shell.commands, {.name == \"rm\"}) && \"\x01\" == ''",
		"true", "", ")",
	} {
		f.Add(s)
	}
	styles := []struct {
		name string
		enc  encoder
	}{
		{"plain", plainEncoder(false)},
		{"plain over lines", plainEncoder(true)},
		{"single-quoted", singleQuotedEncoder(false)},
		{"single-quoted over lines", singleQuotedEncoder(true)},
		{"double-quoted", doubleQuotedEncoder(false, false)},
		{"double-quoted over lines", doubleQuotedEncoder(true, false)},
		{"double-quoted with escaped line breaks", doubleQuotedEncoder(false, true)},
		{"literal", literalEncoder(false, false)},
		{"literal keep", literalEncoder(false, true)},
		{"literal explicit indentation", literalEncoder(true, false)},
		{"folded", foldedEncoder(false, false, false)},
		{"folded over lines", foldedEncoder(false, true, false)},
		{"folded keep", foldedEncoder(false, false, true)},
		{"folded explicit indentation", foldedEncoder(true, true, false)},
	}
	f.Fuzz(func(t *testing.T, expression string) {
		if !utf8.ValidString(expression) || utf8.RuneCountInString(expression) > 300 {
			return
		}
		e := []rune(expression)
		_, compileErr := (&Rules{}).compile(expression)
		for _, st := range styles {
			text, at, ok := st.enc(e)
			if !ok {
				continue
			}
			src := whenRule(text)
			got, err := whenValue(src)
			if err != nil {
				continue // a when the YAML library types otherwise (true, 1, ~)
			}
			if got != expression {
				t.Fatalf("%s: the YAML library reads\n%s\nas %q, not %q", st.name, src, got, expression)
			}
			_, err = parse("rules.yaml", []byte(src))
			if compileErr == nil {
				if err != nil {
					t.Fatalf("%s: %q compiles, but the file is refused: %v", st.name, expression, err)
				}
				continue
			}
			if err == nil {
				t.Fatalf("%s: %q does not compile (%v), but the file is accepted", st.name, expression, compileErr)
			}
			want := at[0]
			var fe *file.Error
			if errors.As(compileErr, &fe) {
				want = at[min(max(fe.From, 0), len(e))]
			}
			m := errorAt.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("%s: no position in %v", st.name, err)
			}
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			if line != want.Line || col != want.Column {
				t.Fatalf("%s: %q: error at %d:%d, want %d:%d (expr: %v)\n%s\n%v", st.name, expression, line, col, want.Line, want.Column, compileErr, src, err)
			}
		}
	})
}

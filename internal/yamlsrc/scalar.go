package yamlsrc

import (
	"strconv"
	"unicode/utf8"
)

// Pos is a place in a file: a line and a column, both from 1, the column
// counted in characters, as [Snippet] takes them.
type Pos struct{ Line, Column int }

// ScalarPositions returns where in the file each character of a YAML
// scalar's value comes from, so that an error a program reports at an
// offset inside the value (an expression's syntax error, say) can be shown
// at its place in the file. lines is the file as [Lines] splits it. start
// is where the scalar begins (its opening quote, its block indicator | or
// >, or its first character if it is plain), or a place before that with
// only blanks, line breaks and comments in between: the column after its
// key's colon will do. value is the scalar's value as the YAML parser
// decoded it. indent is the indentation of the node
// that holds the scalar (the column of its key, or of the "-" of its
// sequence entry, less one): a block scalar's content is indented more
// than that, and an explicit indentation indicator (|2) counts from it.
//
// The result holds one position per character (rune) of value and one
// more, for the end of the value: right after its last character. A
// character written by an escape sequence ("\t", "”") is at the escape's
// first character; one written by a line break (a folded space, a kept
// newline) is at the end of the line it breaks, one column past its last
// character.
//
// Every scalar style is read: plain, single- and double-quoted, literal
// and folded, each over several lines, with chomping and indentation
// indicators. ok is false if the text at start does not decode to value
// (the value came from elsewhere, or the parser read it another way): the
// caller then has no better place than start.
//
// ScalarPositions reads only the lines the scalar spans, in time
// proportional to them.
func ScalarPositions(lines []string, start Pos, indent int, value string) (pos []Pos, ok bool) {
	if start.Line < 1 || start.Line > len(lines) || start.Column < 1 || start.Column > utf8.RuneCountInString(lines[start.Line-1])+1 {
		return nil, false
	}
	s := &scan{lines: lines, want: []rune(value), out: make([]Pos, 0, len(value)+1)}
	start, ok = s.skip(start)
	if !ok {
		return nil, false
	}
	first := s.runes(start.Line)
	switch first[start.Column-1] {
	case '"', '\'':
		s.flow(start, first[start.Column-1])
	case '|', '>':
		s.block(start, indent)
	default:
		s.flow(start, 0)
	}
	if s.failed || len(s.out) != len(s.want) {
		return nil, false
	}
	return append(s.out, s.end), true
}

// scan decodes a scalar's text and checks it against the value the parser
// decoded, one character at a time.
type scan struct {
	lines  []string
	want   []rune
	out    []Pos // where each character of want came from
	end    Pos   // right after the last character emitted
	failed bool  // the text decodes to something else than want

	cached int // the line number whose characters are in line
	line   []rune
}

// runes returns the characters of line n (from 1), nil past the end.
func (s *scan) runes(n int) []rune {
	if n < 1 || n > len(s.lines) {
		return nil
	}
	if s.cached != n {
		s.cached, s.line = n, []rune(s.lines[n-1])
	}
	return s.line
}

// skip returns the first character at or after p that is not a blank, a
// line break or in a comment; false if there is none.
func (s *scan) skip(p Pos) (Pos, bool) {
	for ; p.Line <= len(s.lines); p = (Pos{p.Line + 1, 1}) {
		line := s.runes(p.Line)
		for i := p.Column - 1; i < len(line); i++ {
			if line[i] == '#' {
				break
			}
			if !isWhite(line[i]) {
				return Pos{p.Line, i + 1}, true
			}
		}
	}
	return Pos{}, false
}

// done reports whether the whole value has been placed, or cannot be.
func (s *scan) done() bool { return s.failed || len(s.out) == len(s.want) }

// emit records that the next character of the value, r, comes from at and
// that the text after it starts at next. It fails the scan if the value
// holds another character there.
func (s *scan) emit(r rune, at, next Pos) {
	if s.done() {
		return
	}
	if s.want[len(s.out)] != r {
		s.failed = true
		return
	}
	s.out = append(s.out, at)
	s.end = next
}

// lineBreak emits r for the line break that ends line n.
func (s *scan) lineBreak(r rune, n int) {
	at := Pos{n, len(s.runes(n)) + 1}
	s.emit(r, at, at)
}

func isWhite(r rune) bool { return r == ' ' || r == '\t' }

// blankLine reports whether line n holds only blanks (spaces and tabs).
func (s *scan) blankLine(n int) bool {
	for _, r := range s.runes(n) {
		if !isWhite(r) {
			return false
		}
	}
	return true
}

// flow reads a plain scalar (quote 0) or a quoted one from start. A line
// break folds: into a space, or, followed by empty lines, into a newline
// for each of them; the blanks around it are dropped.
func (s *scan) flow(start Pos, quote rune) {
	n, i := start.Line, start.Column-1
	if quote != 0 {
		i++
	}
	s.end = Pos{n, i + 1}
	for !s.done() {
		line := s.runes(n)
		if i >= len(line) {
			if !s.fold(&n) {
				s.failed = true
				return
			}
			line, i = s.runes(n), 0
			for i < len(line) && isWhite(line[i]) {
				i++
			}
			continue
		}
		at := Pos{n, i + 1}
		switch r := line[i]; {
		case quote != 0 && r == quote:
			if quote == '\'' && i+1 < len(line) && line[i+1] == '\'' {
				s.emit('\'', at, Pos{n, i + 3})
				i += 2
				continue
			}
			s.failed = true // the scalar ends before the value does
			return
		case quote == '"' && r == '\\':
			if i+1 == len(line) {
				// An escaped line break: no character, and the next
				// line's leading blanks go too.
				if n++; n > len(s.lines) {
					s.failed = true
					return
				}
				for ; n < len(s.lines) && s.blankLine(n); n++ {
					s.lineBreak('\n', n)
				}
				line, i = s.runes(n), 0
				for i < len(line) && isWhite(line[i]) {
					i++
				}
				continue
			}
			c, size := unescape(line[i+1:])
			if size == 0 {
				s.failed = true
				return
			}
			s.emit(c, at, Pos{n, i + 2 + size})
			i += 1 + size
		case isWhite(r):
			j := i
			for j < len(line) && isWhite(line[j]) {
				j++
			}
			if j == len(line) {
				i = j // blanks before a line break are dropped
				continue
			}
			for ; i < j; i++ {
				s.emit(line[i], Pos{n, i + 1}, Pos{n, i + 2})
			}
		default:
			s.emit(r, at, Pos{n, i + 2})
			i++
		}
	}
}

// fold emits what the line break at the end of line *n and the empty
// lines after it fold into, and moves *n to the next line that is not
// empty. It reports false at the end of the file.
func (s *scan) fold(n *int) bool {
	brk := *n
	k := brk + 1
	for ; k <= len(s.lines) && s.blankLine(k); k++ {
	}
	if k > len(s.lines) {
		return false
	}
	if k == brk+1 {
		s.lineBreak(' ', brk)
	}
	for e := brk + 1; e < k; e++ {
		s.lineBreak('\n', e)
	}
	*n = k
	return true
}

// unescape decodes the escape sequence after a backslash in a
// double-quoted scalar: the character it stands for and how many
// characters it takes after the backslash (0 if it is not one).
func unescape(r []rune) (rune, int) {
	if len(r) == 0 {
		return 0, 0
	}
	switch r[0] {
	case '0':
		return 0, 1
	case 'a':
		return '\a', 1
	case 'b':
		return '\b', 1
	case 't', '\t':
		return '\t', 1
	case 'n':
		return '\n', 1
	case 'v':
		return '\v', 1
	case 'f':
		return '\f', 1
	case 'r':
		return '\r', 1
	case 'e':
		return 0x1b, 1
	case ' ', '"', '/', '\\':
		return r[0], 1
	case 'N':
		return 0x85, 1
	case '_':
		return 0xa0, 1
	case 'L':
		return 0x2028, 1
	case 'P':
		return 0x2029, 1
	}
	digits := 0
	switch r[0] {
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	}
	if digits == 0 || len(r) < 1+digits {
		return 0, 0
	}
	c, err := strconv.ParseUint(string(r[1:1+digits]), 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(c), 1 + digits
}

// block reads a literal (|) or folded (>) block scalar whose indicator is
// at start. Its content is the lines after the header indented at least
// as much as its first line that is not empty (or indent plus an explicit
// indentation indicator). A literal scalar keeps every line break; a
// folded one folds the break between two lines of text into a space (or
// drops it before empty lines), and keeps those around a more-indented
// line.
func (s *scan) block(start Pos, indent int) {
	header := s.runes(start.Line)[start.Column-1:]
	folded := header[0] == '>'
	explicit := 0
	for _, r := range header[1:min(3, len(header))] {
		if r >= '1' && r <= '9' {
			explicit = int(r - '0')
		} else if r != '+' && r != '-' {
			break
		}
	}
	s.end = start
	n := start.Line + 1
	width := indent + explicit // the content's indentation
	if explicit == 0 {
		width = 0
		for k := n; k <= len(s.lines); k++ {
			if line := s.runes(k); !allSpaces(line) {
				width = leadingSpaces(line)
				break
			}
		}
		if width <= indent {
			width = 0 // no content: the next line belongs to the parent
		}
	}
	const (
		none = iota
		text
		spaced // a line that starts with a blank after the indentation
	)
	prev, prevLine := none, 0
	var empty []int // the empty lines since the last line of content
	for ; n <= len(s.lines) && !s.done(); n++ {
		line := s.runes(n)
		sp := leadingSpaces(line)
		if sp == len(line) && sp <= width {
			if !folded {
				s.lineBreak('\n', n)
			}
			empty = append(empty, n)
			continue
		}
		if sp < width || width == 0 {
			break // the scalar has ended
		}
		if folded {
			kind := text
			if isWhite(line[width]) {
				kind = spaced
			}
			switch {
			case prev == text && kind == text && len(empty) == 0:
				s.lineBreak(' ', prevLine)
			case prev != none && (prev == spaced || kind == spaced):
				s.lineBreak('\n', prevLine)
			}
			for _, e := range empty {
				s.lineBreak('\n', e)
			}
			prev, prevLine, empty = kind, n, empty[:0]
		}
		for i := width; i < len(line); i++ {
			s.emit(line[i], Pos{n, i + 1}, Pos{n, i + 2})
		}
		if !folded {
			s.lineBreak('\n', n)
		}
	}
	if folded && prev != none {
		// The last line's break, and the empty lines after it that the
		// keep indicator (+) keeps.
		s.lineBreak('\n', prevLine)
		for _, e := range empty {
			s.lineBreak('\n', e)
		}
	}
}

func leadingSpaces(line []rune) int {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	return i
}

func allSpaces(line []rune) bool { return leadingSpaces(line) == len(line) }

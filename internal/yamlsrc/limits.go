package yamlsrc

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// The limits of a YAML file that Ganglion reads (a config, a scripted
// model's script, an approval rules file), checked by [Check] before the
// file is parsed.
//
// The YAML library holds 60 to 400 times a file's size in memory while it
// parses it (the more tokens per byte, the more), and its memory and time
// grow with the square of the nesting depth: 80 KB of nested brackets took
// 2.5 GB. maxSize keeps a hostile file under about half a gigabyte and a few
// seconds of parsing; the largest file the project ships is 4 KB. maxDepth
// is ten times the depth of a real config or script.
const (
	// maxSize is the largest YAML file Ganglion reads, in bytes: 1 MiB.
	maxSize = 1 << 20
	// maxDepth is how deeply collections (mappings and sequences, block
	// or flow) may nest in a YAML file: 100 levels.
	maxDepth = 100
)

// LimitError is a YAML file over one of the limits [Check] enforces. Readers
// render it in their own positioned form: Msg says which limit, and Line and
// Column say where the nesting went too deep.
type LimitError struct {
	// Line and Column (both from 1, Column in characters) locate the
	// collection that opens one level more than the 100 allowed; both are 0 for
	// a file over [maxSize].
	Line, Column int
	// Msg says what is over which limit, without the file or position.
	Msg string
}

// Error returns Msg.
func (e *LimitError) Error() string { return e.Msg }

// ReadFile reads the file at path, but no more than [maxSize]+1 bytes:
// enough for [Check] to tell that a larger file is too large, without
// reading a file of any size into memory first.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSize+1))
}

// Check returns a *[LimitError] if data is larger than [maxSize] bytes or
// nests collections deeper than maxDepth levels, and nil otherwise. It
// reads data once, in time proportional to its size, without allocating,
// and is meant to run before data is parsed.
//
// Check does not parse YAML: it follows block indentation, "- " and "? "
// entries, "key:" indicators, flow brackets, quoted and block scalars, and
// comments, closely enough that what it accepts the parser does not nest
// much deeper, and that an ordinary file is never refused. A plain scalar
// continued on a line that starts with a bracket counts as a flow
// collection; it takes a hundred such lines to be refused.
func Check(data []byte) error {
	if len(data) > maxSize {
		return &LimitError{Msg: fmt.Sprintf("file is over the limit of %d bytes (1 MiB)", maxSize)}
	}
	s := depthScanner{max: maxDepth}
	return s.scan(data)
}

// depthScanner measures how deeply collections nest in a YAML text; see
// [Check]. Depth is the number of open block collections plus the number of
// open flow collections.
type depthScanner struct {
	max   int
	block []blockLevel // open block collections, innermost last
	flow  int          // open flow collections
	quote byte         // '"' or '\'' inside a quoted scalar, else 0

	inScalar bool // inside a block scalar (| or >)
	scalarIn int  // lines indented more than this may belong to the block scalar
	scalarAt int  // the indentation of its first line, or -1 before it

	line int    // number of the current line, from 1
	text []byte // the current line, without its line break
}

// blockLevel is an open block collection: the column of its entries, and
// whether it is a sequence ("- " entries).
type blockLevel struct {
	col int
	seq bool
}

// scan checks every line of data.
func (s *depthScanner) scan(data []byte) error {
	if len(data) >= 3 && string(data[:3]) == "\ufeff" {
		data = data[3:]
	}
	for len(data) > 0 || s.line == 0 {
		// A line ends at "\n", "\r\n" or a lone "\r", as the parser has it.
		end, next := len(data), len(data)
		for i, c := range data {
			if c == '\n' || c == '\r' {
				end, next = i, i+1
				if c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
					next++
				}
				break
			}
		}
		s.line++
		s.text = data[:end]
		data = data[next:]
		if err := s.scanLine(); err != nil {
			return err
		}
	}
	return nil
}

// scanLine checks s.text, the next line.
func (s *depthScanner) scanLine() error {
	l := s.text
	if len(l) >= 3 && (string(l[:3]) == "---" || string(l[:3]) == "...") && (len(l) == 3 || isBlank(l[3])) {
		// A document starts or ends. It closes every block collection, and
		// any block or quoted scalar; flow collections stay counted, as a
		// marker inside one is an error anyway.
		s.block, s.inScalar, s.quote = s.block[:0], false, 0
		if l[0] == '.' {
			return nil
		}
		return s.resume(3, 3)
	}
	ind := indent(l)
	if s.inScalar {
		// The first line of a block scalar sets its indentation, which
		// must be more than its parent's; a line indented less ends it.
		if ind == len(l) {
			return nil // blank
		}
		if s.scalarAt < 0 && ind > s.scalarIn {
			s.scalarAt = ind
		}
		if s.scalarAt >= 0 && ind >= s.scalarAt {
			return nil
		}
		s.inScalar = false
	}
	if s.quote != 0 || s.flow > 0 {
		// A quoted scalar or a flow collection goes on from the line
		// before, whatever the indentation.
		return s.resume(0, -1)
	}
	if ind == len(l) || l[ind] == '#' {
		return nil // blank or comment
	}
	for len(s.block) > 0 && s.top().col > ind {
		s.block = s.block[:len(s.block)-1]
	}
	if top := s.top(); top.col == ind && top.seq && !isEntry(l, ind, '-') && len(s.block) > 1 && s.block[len(s.block)-2].col == ind {
		// A sequence at its mapping's column ends at the mapping's next key.
		s.block = s.block[:len(s.block)-1]
	}
	return s.node(ind)
}

// resume checks the line from byte pos: first the rest of a quoted scalar
// or flow collection that goes on from the line before, if any, then what
// follows, as a value at column col.
func (s *depthScanner) resume(pos, col int) error {
	if s.quote != 0 || s.flow > 0 {
		var err error
		if pos, err = s.inFlow(pos); err != nil || pos == len(s.text) {
			return err
		}
	}
	return s.inline(pos, col, false)
}

// top returns the innermost open block collection, or a level at column -1
// when none is open.
func (s *depthScanner) top() blockLevel {
	if len(s.block) == 0 {
		return blockLevel{col: -1}
	}
	return s.block[len(s.block)-1]
}

// push opens a block collection at column col.
func (s *depthScanner) push(col int, seq bool) error {
	s.block = append(s.block, blockLevel{col: col, seq: seq})
	return s.checkDepth(col)
}

// checkDepth fails if the collection just opened at byte pos of the line is
// one too many.
func (s *depthScanner) checkDepth(pos int) error {
	if len(s.block)+s.flow <= s.max {
		return nil
	}
	return &LimitError{
		Line:   s.line,
		Column: utf8.RuneCount(s.text[:pos]) + 1,
		Msg:    fmt.Sprintf("nested deeper than the limit of %d levels", s.max),
	}
}

// node checks a block node that starts at byte pos of the line, after its
// indentation: its "- " and "? " entry indicators, each of which may open a
// collection, then the rest.
func (s *depthScanner) node(pos int) error {
	l := s.text
	for pos < len(l) {
		c := l[pos]
		if c != '-' && c != '?' && c != ':' || !isEntry(l, pos, c) {
			break
		}
		top := s.top()
		switch {
		case c == ':': // the value of an explicit "? " key
		case top.col < pos, c == '-' && top.col == pos && !top.seq:
			if err := s.push(pos, c == '-'); err != nil {
				return err
			}
		}
		pos = skipBlanks(l, pos+1)
	}
	return s.inline(pos, pos, true)
}

// inline checks the rest of the line from byte pos in block context: a
// node's properties and content, and for a node that may be a mapping key
// (mayBeKey), its ":" indicator and value. A key opens a block mapping at
// column keyCol. Whatever follows a complete node is checked too, though
// valid YAML has nothing there, since the parser reads it as well.
func (s *depthScanner) inline(pos, keyCol int, mayBeKey bool) error {
	l := s.text
	for {
		pos = skipBlanks(l, pos)
		for pos < len(l) && (l[pos] == '&' || l[pos] == '!') { // anchor or tag
			for pos < len(l) && !isBlank(l[pos]) {
				pos++
			}
			pos = skipBlanks(l, pos)
		}
		if pos == len(l) || l[pos] == '#' {
			return nil
		}
		switch c := l[pos]; {
		case c == '[' || c == '{':
			s.flow++
			if err := s.checkDepth(pos); err != nil {
				return err
			}
			var err error
			if pos, err = s.inFlow(pos + 1); err != nil || pos == len(l) {
				return err
			}
		case c == '"' || c == '\'':
			s.quote = c
			var err error
			if pos, err = s.inFlow(pos + 1); err != nil || pos == len(l) {
				return err
			}
		case (c == '|' || c == '>') && isScalarHeader(l[pos+1:]):
			s.inScalar, s.scalarIn, s.scalarAt = true, s.top().col, -1
			return nil
		case c == ':' && isEntry(l, pos, ':'):
			if err := s.key(&mayBeKey, keyCol); err != nil {
				return err
			}
			pos++
		default:
			// A plain scalar, which may hold brackets and quotes; it ends
			// at a ": " that makes it a key, or at a comment.
			for pos < len(l) && !(l[pos] == ':' && isEntry(l, pos, ':')) && !(l[pos] == '#' && isBlank(l[pos-1])) {
				pos++
			}
			if pos == len(l) || l[pos] == '#' {
				return nil
			}
		}
	}
}

// key opens the block mapping of a key at column keyCol, if the node may be
// a key and no mapping is open at that column; either way the rest of the
// line is a value.
func (s *depthScanner) key(mayBeKey *bool, keyCol int) error {
	if !*mayBeKey {
		return nil
	}
	*mayBeKey = false
	if s.top().col < keyCol {
		return s.push(keyCol, false)
	}
	return nil
}

// inFlow checks the line from byte pos inside a quoted scalar or a flow
// collection, and returns where both have ended, or the line's length if
// one goes on to the next line.
func (s *depthScanner) inFlow(pos int) (int, error) {
	l := s.text
	for pos < len(l) {
		c := l[pos]
		switch {
		case s.quote == '"':
			if c == '\\' {
				pos++ // the escaped character
			} else if c == '"' {
				s.quote = 0
			}
		case s.quote == '\'':
			if c == '\'' {
				if pos+1 < len(l) && l[pos+1] == '\'' {
					pos++ // an escaped quote
				} else {
					s.quote = 0
				}
			}
		case s.flow == 0:
			return pos, nil
		case c == '[' || c == '{':
			s.flow++
			if err := s.checkDepth(pos); err != nil {
				return 0, err
			}
		case c == ']' || c == '}':
			s.flow--
			if s.flow == 0 {
				return pos + 1, nil
			}
		case (c == '"' || c == '\'') && (pos == 0 || isBlank(l[pos-1]) || isFlowIndicator(l[pos-1]) || c == '"' && l[pos-1] == ':'):
			s.quote = c
		case c == '#' && (pos == 0 || isBlank(l[pos-1])):
			return len(l), nil // a comment
		}
		pos++
	}
	if s.quote == 0 && s.flow == 0 {
		return pos, nil
	}
	return len(l), nil
}

// indent returns the number of blanks that start l.
func indent(l []byte) int { return skipBlanks(l, 0) }

// skipBlanks returns the index of the first byte of l from pos that is not
// a blank.
func skipBlanks(l []byte, pos int) int {
	for pos < len(l) && isBlank(l[pos]) {
		pos++
	}
	return pos
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isFlowIndicator(c byte) bool { return c == '[' || c == '{' || c == ',' }

// isEntry reports whether the indicator c at byte pos of l ends there: it
// is followed by a blank or the end of the line, as "- ", "? " and ": " are.
func isEntry(l []byte, pos int, c byte) bool {
	return pos < len(l) && l[pos] == c && (pos+1 == len(l) || isBlank(l[pos+1]))
}

// isScalarHeader reports whether rest, what follows a "|" or ">", is the
// rest of a block scalar header: indentation and chomping indicators, then
// blanks and an optional comment.
func isScalarHeader(rest []byte) bool {
	i := 0
	for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '+' || rest[i] == '-') {
		i++
	}
	j := skipBlanks(rest, i)
	return j == len(rest) || rest[j] == '#' && j > i
}

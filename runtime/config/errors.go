package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
)

// Error is one problem in a config file, positioned at the offending node;
// immutable and safe for concurrent use. Unknown parts are empty or 0.
type Error struct {
	// File is the path given to [Load] or [Parse].
	File string
	// Line and Column count from 1; Column in runes.
	Line, Column int
	// Path is the YAML path, like "$.agents[0].tools[1]".
	Path string
	// Msg says what is wrong, without the position.
	Msg string
	// Snippet is the lines around Line, with a caret under Column.
	Snippet string

	err error // the YAML library's error this one was made from, if any
}

// Error renders "file:line:col: msg", without unknown parts, and the Snippet.
func (e *Error) Error() string {
	h := e.header()
	if e.Snippet == "" {
		return h
	}
	return h + "\n" + e.Snippet
}

// header is the first line of Error.
func (e *Error) header() string {
	loc := e.File
	if e.Line > 0 {
		if loc != "" {
			loc += ":"
		}
		loc += strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column)
	}
	if loc == "" {
		return e.Msg
	}
	return loc + ": " + e.Msg
}

// Unwrap returns the YAML library's error this one was converted from, or nil.
func (e *Error) Unwrap() error { return e.err }

// ErrorList is every problem found in one config file, sorted by position:
// what Load, Parse, Validate and Decode return; [errors.As] finds an *[Error].
type ErrorList []*Error

// Error renders every error, blank-line separated.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n\n")
}

// Unwrap returns the errors of the list, for [errors.Is] and [errors.As].
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// sort orders the list by position; errors at the same position (or without
// one) keep the order they were found in.
func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Column < l[j].Column
	})
}

// err returns the list as an error: nil when it is empty.
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	l.sort()
	return l
}

// source is the text of a config file, kept to position and render errors.
// It is never changed after parse, so Files and Extensions share it freely.
type source struct {
	name  string    // path as given
	data  []byte    // the whole file
	lines []string  // data split into lines, without line ends
	ast   *ast.File // the parsed file, nil if it did not parse
}

func newSource(name string, data []byte) *source {
	return &source{name: name, data: data, lines: yamlsrc.Lines(data)}
}

// errorAt returns an Error at line and col (from 1) of s; s may be nil.
func (s *source) errorAt(line, col int, path, msg string) *Error {
	e := &Error{Line: line, Column: col, Path: path, Msg: msg}
	if s != nil {
		e.File = s.name
		e.Snippet = s.snippet(line, col)
	}
	return e
}

// errorAtNode returns an Error at node n. Without a source (a File built in
// code) it has no position; with one, a node without a position (or nil)
// stands for the start of the file.
func (s *source) errorAtNode(n ast.Node, path, msg string) *Error {
	if s == nil {
		return &Error{Path: path, Msg: msg}
	}
	line, col := position(n)
	if line < 1 {
		line, col = 1, 1
	}
	return s.errorAt(line, col, path, msg)
}

// fromYAML converts an error of the YAML library into an Error at path,
// prefixing its message with prefix. An error without a position (such as
// one from a type's own UnmarshalText) is put at fallback, or at line 1.
func (s *source) fromYAML(err error, fallback ast.Node, path, prefix string) *Error {
	line, col := position(fallback)
	if line < 1 {
		line, col = 1, 1
	}
	msg := err.Error()
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			line, col = tk.Position.Line, max(tk.Position.Column, 1)
		}
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			msg = "syntax error: " + msg
		}
	}
	e := s.errorAt(line, col, path, prefix+msg)
	e.err = err
	return e
}

// snippet renders the lines around line with a caret under col; "" if line
// is not in the file.
func (s *source) snippet(line, col int) string { return yamlsrc.Snippet(s.lines, line, col) }

// position returns where node n starts, for errors: a mapping is placed at
// its first key (the YAML library places it at the first ':'), a key-value
// pair at its key.
func position(n ast.Node) (line, col int) {
	for n != nil {
		switch m := n.(type) {
		case *ast.MappingNode:
			if len(m.Values) > 0 {
				n = m.Values[0].Key
				continue
			}
		case *ast.MappingValueNode:
			n = m.Key
			continue
		}
		break
	}
	if n == nil {
		return 0, 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return 0, 0
	}
	return tk.Position.Line, max(tk.Position.Column, 1)
}

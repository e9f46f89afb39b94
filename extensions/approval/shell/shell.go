package shell

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Limits enforced by [Parse]. Input beyond them is refused with an [*Error]
// rather than analysed partially.
const (
	// maxBytes is the largest command, in bytes, that Parse accepts.
	maxBytes = 64 << 10
	// maxCommands is the largest number of entries Parse puts in
	// [Script.Commands].
	maxCommands = 1000
	// maxDepth is the deepest nesting of groups, bodies, substitutions,
	// expansions and parentheses that Parse accepts.
	maxDepth = 100
)

// Command is one command the script may run, found anywhere in it: at the
// top level, in a pipeline or list, inside a command or process
// substitution, a subshell, a group, a function body, or the condition or
// body of a loop or conditional.
//
// Most entries are simple commands. Constructs that are not simple commands
// are listed as well, under a name no program an allow rule names would
// have, so that a rule of the form all(shell.commands, ...) rejects what it
// did not anticipate; see the package documentation for the list.
type Command struct {
	// Name is the command word as the shell sees it once quotes are
	// removed, e.g. "git" for git, "git" or 'g'it. It is "env" when the
	// command has leading assignments, and "" for a statement that only
	// assigns variables or only redirects.
	Name string `expr:"name"`
	// Args are the words after Name, quotes removed. For a command with
	// leading assignments they start with those assignments, followed by
	// the command word, as `env VAR=value cmd ...` would be written.
	Args []string `expr:"args"`
	// Env holds the leading assignments, as "VAR=value".
	Env []string `expr:"env"`
	// Dynamic reports whether some word of the command (name, argument or
	// assignment) is not a plain literal: it holds an expansion, a
	// substitution, a glob, a leading ~, a brace expansion or $'...'
	// quoting. Such a word is given as its source text.
	Dynamic bool `expr:"dynamic"`
}

// Script is the analysis of one command line, as approval rules see it
// under the name shell. The Has* flags describe the whole script, nested
// parts included: `echo $(a | b)` has a pipe. A Script is a plain value;
// once returned, it is safe to read concurrently.
type Script struct {
	// Commands lists every command in source order; an enclosing command
	// comes before the commands nested in its words. It is never empty.
	Commands []Command `expr:"commands"`
	// HasPipe reports a pipeline: | or |&.
	HasPipe bool `expr:"hasPipe"`
	// HasAnd reports an && list.
	HasAnd bool `expr:"hasAnd"`
	// HasOr reports an || list.
	HasOr bool `expr:"hasOr"`
	// HasSequence reports several statements in one list, separated by ;,
	// a newline or &, or any statement run in the background.
	HasSequence bool `expr:"hasSequence"`
	// HasBackground reports a statement ending in & (or a coproc).
	HasBackground bool `expr:"hasBackground"`
	// HasRedirect reports any redirection: <, >, >>, >|, <>, &>, >&, <&,
	// here-documents, here-strings, and the |& pipe.
	HasRedirect bool `expr:"hasRedirect"`
	// HasSubstitution reports a command substitution, $(...) or `...`, or
	// a process substitution, <(...) or >(...), anywhere: in double
	// quotes, here-documents, parameter expansions and arithmetic too.
	// It also reports what makes bash run a command substitution held in
	// the value of a variable: an arithmetic operand other than a number
	// ($((x)), ${a[i]}, ${s:i}, let, [[ x -eq y ]]), an indirect expansion
	// (${!x}) and [[ -v x ]].
	HasSubstitution bool `expr:"hasSubstitution"`
	// HasSubshell reports a ( ... ) subshell or a { ...; } group.
	HasSubshell bool `expr:"hasSubshell"`
	// HasFunction reports a function definition.
	HasFunction bool `expr:"hasFunction"`
	// HasControlFlow reports if, for, while, until, case or select.
	HasControlFlow bool `expr:"hasControlFlow"`
	// HasExpansion reports a parameter expansion ($VAR, ${...}), an
	// arithmetic expansion ($((...)), let, a C-style for), a pathname
	// pattern (*, ?, [...]), a tilde expansion (~, ~user) or a brace
	// expansion ({a,b}, {1..3}).
	HasExpansion bool `expr:"hasExpansion"`
}

// Error is the error returned by [Parse]: a syntax error, input that is
// empty, or input over one of the limits.
type Error struct {
	// Line and Col locate the problem, counting from 1; Col counts bytes.
	// Both are 0 when the problem has no position, as for empty input.
	Line, Col int
	// Msg describes the problem.
	Msg string
}

// Error renders the error as "shell: line:col: msg", or "shell: msg" when
// it has no position.
func (e *Error) Error() string {
	if e.Line == 0 {
		return "shell: " + e.Msg
	}
	return fmt.Sprintf("shell: %d:%d: %s", e.Line, e.Col, e.Msg)
}

// Parse analyses src, a command line as `sh -c` would run it, and returns
// what approval rules see as shell. It parses with the bash grammar, a
// superset of POSIX sh for the purpose; constructs that only bash gives a
// meaning to are reported conservatively.
//
// Parse is safe for concurrent use.
//
// # Errors
//
// Parse returns an [*Error] when src does not parse, is empty or only
// whitespace and comments, holds a NUL byte, is longer than 64 KiB, lists
// more than 1,000 commands or nests deeper than 100 levels.
func Parse(src string) (Script, error) {
	if len(src) > maxBytes {
		return Script{}, &Error{Msg: fmt.Sprintf("command is %d bytes long, more than the %d allowed", len(src), maxBytes)}
	}
	if i := strings.IndexByte(src, 0); i >= 0 {
		return Script{}, errorAt(src, i, "NUL byte in command")
	}
	if i := strings.IndexByte(src, '\r'); i >= 0 {
		// The parser takes a carriage return for a blank; sh does not.
		return Script{}, errorAt(src, i, "carriage return in command")
	}
	if strings.TrimSpace(src) == "" {
		return Script{}, &Error{Msg: "empty command"}
	}
	r := newGuardReader(src)
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(r, "")
	if r.deep {
		return Script{}, errorAt(src, r.off, fmt.Sprintf("nesting deeper than %d levels", maxDepth))
	}
	if err != nil {
		return Script{}, parseError(src, err)
	}
	if len(file.Stmts) == 0 {
		return Script{}, &Error{Msg: "empty command"}
	}
	w := walker{src: src}
	w.stmts(file.Stmts)
	if w.err != nil {
		return Script{}, w.err
	}
	return w.script, nil
}

// parseError converts an error of the syntax package into an [*Error].
func parseError(src string, err error) error {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return errorAt(src, int(pe.Pos.Offset()), pe.Text)
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		msg := strings.TrimPrefix(le.Error(), le.Pos.String()+": ")
		return errorAt(src, int(le.Pos.Offset()), msg)
	}
	return &Error{Msg: err.Error()}
}

// errorAt returns an [*Error] positioned at byte offset off of src.
func errorAt(src string, off int, msg string) *Error {
	off = min(max(off, 0), len(src))
	before := src[:off]
	line := 1 + strings.Count(before, "\n")
	col := off - strings.LastIndexByte(before, '\n')
	return &Error{Line: line, Col: col, Msg: msg}
}

// The syntax parser recurses once or more per level of nesting and has no
// limit of its own: 64 KiB of "(" costs it a 256 MiB stack and most of a
// second. maxDepth is checked on the tree, once parsed, so guardReader
// bounds the parse itself. It hands the parser its input in small chunks
// and, before each, refuses to go on once the parser's call stack is
// deeper than maxParseFrames frames more than where Parse started. The
// parser reads lazily, from as deep as it has recursed, so this bounds its
// stack to within readChunk bytes of input of the limit, whatever the
// input's quoting.
const (
	// maxParseFrames allows for maxDepth levels of the costliest nesting,
	// parentheses in arithmetic, which take about 30 frames a level.
	maxParseFrames = 50 * maxDepth
	readChunk      = 128
)

// errTooDeep is what guardReader returns to stop the parser.
var errTooDeep = errors.New("too deep")

type guardReader struct {
	src  string
	off  int  // bytes handed out
	skip int  // frames to skip before the stack counts as too deep
	deep bool // whether Read stopped the parser
}

func newGuardReader(src string) *guardReader {
	var pcs [512]uintptr
	// Frames above Read, as seen from here: this frame, Parse and its
	// callers. Read adds itself, the parser's frames and Parse's call.
	base := runtime.Callers(0, pcs[:])
	return &guardReader{src: src, skip: base + maxParseFrames}
}

func (r *guardReader) Read(p []byte) (int, error) {
	if r.off >= len(r.src) {
		return 0, io.EOF
	}
	var pc [1]uintptr
	if runtime.Callers(r.skip, pc[:]) > 0 {
		r.deep = true
		return 0, errTooDeep
	}
	n := copy(p[:min(len(p), readChunk)], r.src[r.off:])
	r.off += n
	return n, nil
}

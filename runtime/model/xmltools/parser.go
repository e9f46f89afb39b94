package xmltools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// maxName bounds the names of tools and parameters, as providers bound tool
// names (pipeline.ValidateToolName). It also bounds what the parser holds
// back while it reads a tag.
const maxName = 64

// defaultIDPrefix starts the IDs of the calls a [parser] reports:
// "xml_call_1", "xml_call_2", ...
const defaultIDPrefix = "xml_call_"

// option configures a [parser].
type option func(*parser)

// withIDPrefix makes the parser number its calls prefix+"1", prefix+"2", ...
// instead of [defaultIDPrefix]+"1", ...
func withIDPrefix(prefix string) option { return func(p *parser) { p.idPrefix = prefix } }

// parser turns the text of a model that writes its tool calls as XML into
// the chunks of a native tool-calling model. The package documentation
// describes the grammar, what the parser holds back and how it reports
// malformed calls.
//
// feed it the text as it arrives, split anywhere, then close it. A parser
// is used by one goroutine.
type parser struct {
	tools    map[string]*toolInfo
	names    []string // the tools' names, for the prefix test
	unknown  bool     // report unknown snake_case calls
	idPrefix string
	calls    int

	// buf holds the input not yet turned into chunks. Outside a call it is
	// at most a partial tag (or an incomplete UTF-8 character); in a call
	// buf[0] is the '<' of the call's opening tag.
	buf    []byte
	base   int // the offset of buf[0] in the input
	st     state
	closed bool

	// Memories that keep the parser linear. No unknown tool's call starts
	// before offset plainUntil of the input. bareUntil[tool] is the offset
	// up to which that tool's tag followed by text is prose.
	plainUntil int
	bareUntil  map[string]int
	// fence follows the text's fenced code blocks, where no unknown
	// tool's call is looked for.
	fence fence

	// The call being read.
	name    string
	known   bool
	openLen int    // len("<name>")
	cur     int    // scan position in buf
	id      string // set once the call is reported (ToolCallStart sent)
	params  []param
	seen    map[string]bool // the params' names, when there are many
	pname   string          // the parameter whose value is being read
	vstart  int             // where its value starts in buf
	search  int             // where to resume looking for a closing tag
	problem problem

	out  []model.Chunk
	text []byte // text not yet put in a chunk

	// Hooks: onCall sees the raw text of each reported call (tests check
	// that text plus calls give back the input); onProblem sees why a
	// malformed call is malformed ([diagnose]).
	onCall    func(raw string)
	onProblem func(reason string)
}

type state uint8

const (
	stText  state = iota // outside a call
	stOpen               // after a tool's opening tag: is it a call?
	stBody               // in a call, between parameters
	stValue              // in a parameter's value
	stSkip               // in a malformed call, looking for its closing tag
)

type param struct{ name, value string }

// toolInfo is what the parser knows of a tool: its parameters' JSON types.
type toolInfo struct {
	types map[string][]string
}

// newParser returns a parser for a model offered tools. Only their names
// open calls; their parameters schemas say which values to convert from
// text (see the package documentation).
func newParser(tools []pipeline.Tool, opts ...option) *parser {
	p := &parser{tools: make(map[string]*toolInfo, len(tools)), idPrefix: defaultIDPrefix}
	for _, t := range tools {
		if _, dup := p.tools[t.Name]; dup || t.Name == "" || len(t.Name) > maxName {
			continue
		}
		p.tools[t.Name] = &toolInfo{types: paramTypes(t.Parameters)}
		p.names = append(p.names, t.Name)
	}
	p.unknown = len(p.names) > 0
	for _, o := range opts {
		o(p)
	}
	return p
}

// feed parses the next piece of the model's text and returns the chunks it
// completes. The returned slice is the caller's.
func (p *parser) feed(text string) []model.Chunk {
	if p.closed {
		return nil
	}
	p.buf = append(p.buf, text...)
	p.run(false)
	return p.flush()
}

// close ends the input: what the parser held back becomes text, and a call
// left open becomes a malformed call. It returns the last chunks; feed and
// close do nothing afterwards.
func (p *parser) close() []model.Chunk {
	if p.closed {
		return nil
	}
	p.run(true)
	p.closed = true
	p.buf = nil
	return p.flush()
}

func (p *parser) flush() []model.Chunk {
	p.flushText()
	out := p.out
	p.out = nil
	return out
}

func (p *parser) flushText() {
	if len(p.text) > 0 {
		p.out = append(p.out, model.Chunk{Kind: model.KindText, Text: string(p.text)})
		p.text = p.text[:0]
	}
}

func (p *parser) emit(c model.Chunk) {
	p.flushText()
	p.out = append(p.out, c)
}

// consume drops the first n bytes of buf, which have become chunks.
func (p *parser) consume(n int) {
	p.base += n
	if n == len(p.buf) {
		p.buf = p.buf[:0]
		return
	}
	p.buf = p.buf[n:]
}

// run parses as much of buf as it can. With eof set, nothing more comes:
// every decision is made and buf ends empty.
func (p *parser) run(eof bool) {
	for {
		var more bool
		switch p.st {
		case stText:
			more = p.scanText(eof)
		case stOpen:
			more = p.scanOpen(eof)
		case stBody:
			more = p.scanBody(eof)
		case stValue:
			more = p.scanValue(eof)
		case stSkip:
			more = p.scanSkip(eof)
		}
		if !more {
			return
		}
	}
}

// scanText emits text up to the next tag that may open a call. It reports
// whether to go on.
func (p *parser) scanText(eof bool) bool {
	b := p.buf
	i := bytes.IndexByte(b, '<')
	if i < 0 {
		n := len(b)
		if !eof {
			n = completeUTF8(b)
		}
		p.addText(b[:n])
		p.consume(n)
		return false
	}
	if i > 0 {
		p.addText(b[:i])
		p.consume(i)
		b = p.buf
	}
	j := 1
	for j < len(b) && j <= maxName && isNameByte(b[j]) {
		j++
	}
	name := string(b[1:j])
	switch {
	case j == len(b) && !eof && p.mayOpen(name):
		return false // a partial tag: wait for the rest
	case j < len(b) && b[j] == '>' && p.tools[name] != nil:
		p.startCall(name, true, j+1)
	case j < len(b) && b[j] == '>' && p.unknownHere() && isSnake(name):
		p.startCall(name, false, j+1)
	default:
		// Not a tag that opens a call: "<" and the name are text, and
		// the scan goes on after them.
		p.addText(b[:j])
		p.consume(j)
	}
	return true
}

// mayOpen reports whether "<"+prefix may grow into a tag that opens a call.
func (p *parser) mayOpen(prefix string) bool {
	if len(prefix) > maxName {
		return false
	}
	for _, n := range p.names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return p.unknownHere() && (prefix == "" || isSnakePrefix(prefix))
}

// unknownHere reports whether an unknown tool's call may start at buf[0].
func (p *parser) unknownHere() bool {
	return p.unknown && p.base >= p.plainUntil && p.fence.open == 0
}

// addText adds b to the text to emit.
func (p *parser) addText(b []byte) {
	p.text = append(p.text, b...)
	p.fence.write(b)
}

func (p *parser) startCall(name string, known bool, openLen int) {
	p.st = stOpen
	p.name, p.known, p.openLen, p.cur = name, known, openLen, openLen
	p.id, p.params, p.seen, p.search, p.problem = "", nil, nil, 0, problem{}
}

// scanOpen decides whether the opening tag just read opens a call: it
// does when the first thing after it, blanks aside, is a parameter's tag
// (or the call's closing tag). Anything else makes the tag text.
func (p *parser) scanOpen(eof bool) bool {
	b := p.buf
	i := skipBlanks(b, p.cur)
	p.cur = i
	if i == len(b) {
		if !eof {
			return false
		}
		// "<read_file>" at the very end: the answer was cut off.
		p.fail(problem{kind: probUnclosedCall}, len(b))
		return true
	}
	if b[i] != '<' {
		if !p.known {
			p.revert(i)
			return true
		}
		return p.scanBare(i, eof)
	}
	t := readTag(b[i:])
	switch {
	case t.kind == tagMore:
		if !eof {
			return false
		}
		p.fail(problem{kind: probUnclosedCall}, len(b))
	case t.kind == tagOpen && (p.known || p.tools[t.name] == nil):
		if p.known {
			p.report()
		}
		p.startValue(t.name, i+t.n)
	case t.kind == tagClose && t.name == p.name && p.known:
		p.report()
		p.finish(i + t.n)
	default:
		p.revert(i)
	}
	return true
}

// scanBare decides about an offered tool's tag followed by text, blanks
// aside, from b[i]. When one line of text and blanks lead to the closing
// tag, it is a call without parameter tags ("<read_file>notes.txt
// </read_file>"): a slip the model must hear about, so a malformed call.
// Else it is prose ("Use <read_file> to read a file.").
func (p *parser) scanBare(i int, eof bool) bool {
	b := p.buf
	if until, ok := p.bareUntil[p.name]; ok && p.base+i < until {
		// Later in a line already found to be prose after this tag.
		p.revert(i)
		return true
	}
	end := []byte("</" + p.name + ">")
	from := max(p.search, i)
	lineEnd := len(b)
	nl := bytes.IndexByte(b[from:], '\n')
	if nl >= 0 {
		lineEnd = from + nl
	}
	if bytes.Contains(b[from:lineEnd], end) {
		p.fail(problem{kind: probText, at: i}, i)
		return true
	}
	if nl < 0 {
		if eof {
			p.bareProse(len(b))
			return true
		}
		p.search = max(from, len(b)-len(end)+1)
		return false
	}
	rest := b[skipBlanks(b, lineEnd):]
	switch {
	case bytes.HasPrefix(rest, end):
		p.fail(problem{kind: probText, at: i}, i)
	case len(rest) < len(end) && bytes.HasPrefix(end, rest) && !eof:
		p.search = lineEnd // the line holds no closing tag
		return false
	default:
		p.bareProse(lineEnd)
	}
	return true
}

// bareProse reverts the tag of a call without parameter tags, and
// remembers that, up to buf[until], the same tag followed by text is
// prose too: its line holds no closing tag.
func (p *parser) bareProse(until int) {
	if p.bareUntil == nil {
		p.bareUntil = make(map[string]int)
	}
	p.bareUntil[p.name] = p.base + until
	p.revert(until)
}

// scanBody reads what follows a parameter: another one, or the closing tag.
func (p *parser) scanBody(eof bool) bool {
	b := p.buf
	i := skipBlanks(b, p.cur)
	p.cur = i
	if i == len(b) {
		if !eof {
			return false
		}
		p.fail(problem{kind: probUnclosedCall}, len(b))
		return true
	}
	if b[i] != '<' {
		p.fail(problem{kind: probText, at: i}, i)
		return true
	}
	t := readTag(b[i:])
	switch t.kind {
	case tagMore:
		if !eof {
			return false
		}
		p.fail(problem{kind: probUnclosedCall}, len(b))
	case tagOpen:
		if !p.known && p.tools[t.name] != nil {
			p.revert(i) // an offered tool's tag inside an unknown "call"
			return true
		}
		p.startValue(t.name, i+t.n)
	case tagClose:
		if t.name == p.name {
			p.finish(i + t.n)
		} else {
			p.fail(problem{kind: probClose, at: i, name: t.name}, i)
		}
	default:
		p.fail(problem{kind: probTag, at: i}, i)
	}
	return true
}

func (p *parser) startValue(name string, at int) {
	p.st = stValue
	p.pname, p.vstart, p.search, p.cur = name, at, at, at
}

// scanValue looks for the closing tag of the parameter being read.
func (p *parser) scanValue(eof bool) bool {
	b := p.buf
	end := "</" + p.pname + ">"
	k := bytes.Index(b[p.search:], []byte(end))
	if k < 0 {
		if !eof {
			p.search = max(p.search, len(b)-len(end)+1)
			return false
		}
		p.fail(problem{kind: probUnclosedParam, name: p.pname}, len(b))
		return true
	}
	k += p.search
	v := trimNewlines(string(b[p.vstart:k]))
	p.cur, p.st = k+len(end), stBody
	if p.hasParam(p.pname) {
		p.fail(problem{kind: probDuplicate, name: p.pname}, p.cur)
		return true
	}
	p.params = append(p.params, param{p.pname, v})
	return true
}

// hasParam reports whether the call has a parameter called name; past a
// few parameters it keeps their names in a set.
func (p *parser) hasParam(name string) bool {
	if p.seen == nil && len(p.params) < 16 {
		for _, q := range p.params {
			if q.name == name {
				return true
			}
		}
		return false
	}
	if p.seen == nil {
		p.seen = make(map[string]bool, 2*len(p.params))
		for _, q := range p.params {
			p.seen[q.name] = true
		}
	}
	if p.seen[name] {
		return true
	}
	p.seen[name] = true // it is about to be added
	return false
}

// scanSkip looks for the closing tag of a malformed call.
func (p *parser) scanSkip(eof bool) bool {
	b := p.buf
	end := "</" + p.name + ">"
	k := bytes.Index(b[p.search:], []byte(end))
	if k >= 0 {
		p.finishMalformed(p.search + k + len(end))
		return true
	}
	if !eof {
		p.search = max(p.search, len(b)-len(end)+1)
		return false
	}
	p.finishMalformed(len(b))
	return true
}

// fail handles a call that breaks the grammar at buf[brk]. An unknown
// tool's tag was text after all; an offered tool's call is malformed, and
// ends at its closing tag, or at the end of the input.
func (p *parser) fail(pr problem, brk int) {
	if !p.known {
		p.revert(brk)
		return
	}
	p.report()
	p.problem = pr
	p.st = stSkip
	p.search = p.cur
	if pr.kind == probUnclosedCall || pr.kind == probUnclosedParam {
		p.search = len(p.buf) // only reached at the end of the input
	}
}

// revert makes the opening tag of a would-be call text, and parses again
// what followed it. For an unknown tool's tag, brk is where the grammar
// broke: no unknown tool's call starts before it, so that no byte is
// read again and again by would-be calls in would-be calls
// ("<a_b><a_b><a_b>..."); an offered tool's call there is still found.
func (p *parser) revert(brk int) {
	if !p.known {
		p.plainUntil = p.base + brk
	}
	p.addText(p.buf[:p.openLen])
	p.consume(p.openLen)
	p.st = stText
	p.params = nil
}

// report sends ToolCallStart for the call being read, once.
func (p *parser) report() {
	if p.id != "" {
		return
	}
	p.calls++
	p.id = p.idPrefix + strconv.Itoa(p.calls)
	p.emit(model.Chunk{Kind: model.KindToolCallStart, ToolCallID: p.id, ToolName: p.name})
}

// finish reports a well-formed call that ends at buf[end].
func (p *parser) finish(end int) {
	if !p.known {
		// A parameter that holds an offered tool's call makes the
		// would-be call a wrapper in prose, not a call.
		for _, q := range p.params {
			for _, n := range p.names {
				if strings.Contains(q.value, "<"+n+">") {
					p.revert(end)
					return
				}
			}
		}
	}
	p.report()
	p.emit(model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: p.id, ToolName: p.name, ArgumentsDelta: p.arguments()})
	p.end(end)
}

// finishMalformed reports the malformed call buf[:end]: its arguments are
// its raw text, which is not JSON.
func (p *parser) finishMalformed(end int) {
	raw := string(p.buf[:end])
	if p.onProblem != nil {
		p.onProblem(p.problem.explain(p.name, raw))
	}
	p.emit(model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: p.id, ToolName: p.name, ArgumentsDelta: raw})
	p.end(end)
}

func (p *parser) end(end int) {
	p.emit(model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: p.id, ToolName: p.name})
	if p.onCall != nil {
		p.onCall(string(p.buf[:end]))
	}
	p.consume(end)
	p.st = stText
	p.params = nil
}

// arguments encodes the call's parameters as a JSON object, in the order
// the model wrote them, converting values as the tool's schema says.
func (p *parser) arguments() string {
	var types map[string][]string
	if t := p.tools[p.name]; t != nil {
		types = t.types
	}
	var b []byte
	b = append(b, '{')
	for i, q := range p.params {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, q.name)
		b = append(b, ':')
		if v, ok := convert(types[q.name], q.value); ok {
			b = append(b, v...)
		} else {
			b = appendString(b, q.value)
		}
	}
	return string(append(b, '}'))
}

// fence follows the fenced code blocks of Markdown text: a line that
// starts, after up to 3 spaces, with 3 or more '`' or '~' opens a block,
// and a line that starts with as many of the same closes it.
type fence struct {
	open    byte // the open block's character, 0 outside blocks
	openLen int
	head    uint8 // 0: leading spaces, 1: a run of '`' or '~', 2: rest of the line
	indent  int
	run     byte
	runLen  int
}

func (f *fence) write(b []byte) {
	for _, c := range b {
		switch {
		case c == '\n':
			if f.head == 1 {
				f.endRun()
			}
			f.head, f.indent = 0, 0
		case f.head == 0 && c == ' ' && f.indent < 3:
			f.indent++
		case f.head == 0 && (c == '`' || c == '~'):
			f.head, f.run, f.runLen = 1, c, 1
		case f.head == 0:
			f.head = 2
		case f.head == 1 && c == f.run:
			f.runLen++
		case f.head == 1:
			f.endRun()
			f.head = 2
		}
	}
}

func (f *fence) endRun() {
	switch {
	case f.runLen < 3:
	case f.open == 0:
		f.open, f.openLen = f.run, f.runLen
	case f.run == f.open && f.runLen >= f.openLen:
		f.open = 0
	}
}

// Tags.

type tagKind uint8

const (
	tagBad   tagKind = iota // not a tag of the grammar
	tagMore                 // may become one: more input is needed
	tagOpen                 // <name>
	tagClose                // </name>
)

type tag struct {
	kind tagKind
	name string
	n    int // its length
}

// readTag reads the tag b starts with (b[0] is '<').
func readTag(b []byte) tag {
	i := 1
	kind := tagOpen
	if i < len(b) && b[i] == '/' {
		kind = tagClose
		i++
	}
	start := i
	for i < len(b) && i-start < maxName && isNameByte(b[i]) {
		i++
	}
	switch {
	case i == len(b):
		return tag{kind: tagMore}
	case b[i] != '>' || i == start:
		return tag{kind: tagBad}
	}
	return tag{kind: kind, name: string(b[start:i]), n: i + 1}
}

// isNameByte reports whether c may be in a tool's or a parameter's name:
// a letter, a digit, '_', '-' or '.'.
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// isSnake reports whether name looks like a tool's name rather than an
// HTML or XML element's: lower-case snake_case with at least one '_'
// ("read_file", "attempt_completion"; not "b", "div", "my-widget").
func isSnake(name string) bool {
	if !isSnakePrefix(name) || !strings.Contains(name, "_") || name[len(name)-1] == '_' {
		return false
	}
	return true
}

// isSnakePrefix reports whether name may begin a snake_case name.
func isSnakePrefix(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' || len(name) > maxName {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_' && name[i-1] != '_':
		default:
			return false
		}
	}
	return true
}

func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// completeUTF8 returns how much of b to emit without cutting a UTF-8
// character that the next piece of input completes.
func completeUTF8(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				return k
			}
			break
		}
	}
	return len(b)
}

// trimNewlines drops one leading and one trailing line break ("\n" or
// "\r\n") from a parameter's value, so that a value may sit on lines of its
// own between its tags.
func trimNewlines(v string) string {
	switch {
	case strings.HasPrefix(v, "\r\n"):
		v = v[2:]
	case strings.HasPrefix(v, "\n"):
		v = v[1:]
	}
	switch {
	case strings.HasSuffix(v, "\r\n"):
		v = v[:len(v)-2]
	case strings.HasSuffix(v, "\n"):
		v = v[:len(v)-1]
	}
	return v
}

// Problems.

type problemKind uint8

const (
	probNone          problemKind = iota
	probUnclosedCall              // the input ended inside the call
	probUnclosedParam             // the input ended inside a parameter's value
	probText                      // text between parameters
	probClose                     // a closing tag that closes nothing open
	probTag                       // a '<' that starts no tag of the grammar
	probDuplicate                 // a parameter given twice
)

type problem struct {
	kind problemKind
	at   int    // where in the call's raw text
	name string // the parameter or tag concerned
}

// explain says what is wrong with the call raw of tool name, for the model.
func (pr problem) explain(name, raw string) string {
	switch pr.kind {
	case probUnclosedCall:
		return fmt.Sprintf("the <%s> call was never closed with </%s> (was your answer cut off?)", name, name)
	case probUnclosedParam:
		return fmt.Sprintf("the <%s> parameter was never closed with </%s>, so the rest of your answer was taken as its value", pr.name, pr.name)
	case probText:
		return fmt.Sprintf("the text %s is outside any parameter: between <%s> and </%s>, write only parameters, each as <name>value</name>", snippet(raw, pr.at, "<"), name, name)
	case probClose:
		return fmt.Sprintf("the closing tag </%s> closes nothing: between <%s> and </%s>, write only parameters, each as <name>value</name>", pr.name, name, name)
	case probTag:
		return fmt.Sprintf("%s is not a parameter tag: between <%s> and </%s>, write only parameters, each as <name>value</name> (a name is letters, digits, '_', '-' or '.')", snippet(raw, pr.at, ">"), name, name)
	case probDuplicate:
		return fmt.Sprintf("the <%s> parameter is given twice; give each parameter once", pr.name)
	}
	return "the call is malformed"
}

// snippet quotes the start of raw[at:], up to the first of stop or a line
// break (included when it is '>'), at most 40 bytes, cut at a character
// boundary.
func snippet(raw string, at int, stop string) string {
	s := raw[min(at, len(raw)):]
	if i := strings.IndexAny(s, "\r\n"+stop); i >= 0 {
		if s[i] == '>' {
			i++
		}
		s = s[:i]
	}
	if len(s) > 40 {
		n := 40
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "..."
	}
	return strconv.Quote(s)
}

// Values.

// paramTypes reads the JSON types of the top-level properties of a
// parameters schema: "type" as a string or a list of strings.
func paramTypes(schema json.RawMessage) map[string][]string {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	types := make(map[string][]string, len(s.Properties))
	for name, prop := range s.Properties {
		if ts := schemaTypes(prop.Type); len(ts) > 0 {
			types[name] = ts
		}
	}
	return types
}

func schemaTypes(t json.RawMessage) []string {
	var one string
	if json.Unmarshal(t, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(t, &many) == nil {
		return many
	}
	return nil
}

// convert turns a parameter's text into the JSON value of a type its
// schema allows: integer, number, boolean, null, object or array. It
// reports false when the schema allows a string, names no type, or the
// text is none of the types; the value then stays a string (and the
// runtime's schema check tells the model if a string is wrong).
func convert(types []string, v string) (string, bool) {
	if len(types) == 0 {
		return "", false
	}
	for _, t := range types {
		if t == "string" {
			return "", false
		}
	}
	s := strings.TrimSpace(v)
	for _, t := range types {
		switch t {
		case "integer":
			if isJSONNumber(s) && !strings.ContainsAny(s, ".eE") {
				return s, true
			}
		case "number":
			if isJSONNumber(s) {
				return s, true
			}
		case "boolean":
			if strings.EqualFold(s, "true") {
				return "true", true
			}
			if strings.EqualFold(s, "false") {
				return "false", true
			}
		case "null":
			if s == "null" {
				return "null", true
			}
		case "object", "array":
			open := byte('{')
			if t == "array" {
				open = '['
			}
			if s != "" && s[0] == open && json.Valid([]byte(s)) {
				var c bytes.Buffer
				if json.Compact(&c, []byte(s)) == nil {
					return c.String(), true
				}
			}
		}
	}
	return "", false
}

// isJSONNumber reports whether s is one JSON number.
func isJSONNumber(s string) bool {
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

// appendString appends s as a JSON string, leaving '<', '>' and '&' as
// they are (they are common in code, and the arguments are no HTML).
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// diagnose explains why a call the parser reported is malformed, in words
// for the model. A malformed call's arguments are the raw text the model
// wrote, from its opening tag, so they start with '<' and are not JSON;
// diagnose reports false for any other call.
func diagnose(c pipeline.ToolCall) (string, bool) {
	raw := string(c.Arguments)
	if !strings.HasPrefix(raw, "<"+c.Name+">") {
		return "", false
	}
	var reason string
	p := newParser([]pipeline.Tool{{ToolSpec: pipeline.ToolSpec{Name: c.Name}}})
	p.onProblem = func(r string) {
		if reason == "" {
			reason = r
		}
	}
	p.feed(raw)
	p.close()
	if reason == "" {
		return fmt.Sprintf("the <%s> call is malformed", c.Name), true
	}
	return reason, true
}

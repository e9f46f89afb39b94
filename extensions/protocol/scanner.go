package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// defaultMaxBlockSize is the most bytes a block may hold, its tag lines
// included, unless maxBlockSize says otherwise.
const defaultMaxBlockSize = 64 << 10

// maxProblems is the most problems reported for one block: more would not
// help the model correct it.
const maxProblems = 20

// maxTagLine is the longest line (without its "\n") that can be a tag line.
// It bounds what the scanner holds back of ordinary text.
const maxTagLine = 256

// scanOption configures a [scanner].
type scanOption interface{ apply(*config) }

type config struct{ maxBlock int }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// maxBlockSize sets the most bytes a block may hold, its tag lines included
// (default 64 KiB). A longer block is reported as an [Error]
// and the rest of it is read as ordinary text. It panics if n < 1.
func maxBlockSize(n int) scanOption {
	if n < 1 {
		panic("protocol: maxBlockSize must be at least 1")
	}
	return optionFunc(func(c *config) { c.maxBlock = n })
}

// event is one thing a [scanner] found: pass-through text, a valid block, or
// a problem with a block. Exactly one of the three is set: Block, or Err, or
// else Text (never empty).
type event struct {
	// Text is ordinary text to pass through, newlines included.
	Text string
	// Block is a complete, valid block.
	Block *Block
	// Err is a problem with a block; the block is not passed through.
	Err *Error
}

// Block is a complete, valid block of a registered kind.
type Block struct {
	// Kind is the block's kind, such as "USER_QUESTION".
	Kind string
	// Value is what the kind's Build returned: *[Question] for
	// USER_QUESTION, *[DependencyRequest] for DEPENDENCY_REQUEST,
	// *[PhaseComplete] for PHASE_COMPLETE, *[Fields] for a kind without
	// Build.
	Value any
	// Raw is the block's text from the start of its opening tag line to the
	// end of its closing tag line (its "\n" included, if any).
	Raw string
	// StartLine and EndLine are the lines of the opening and closing tags
	// (1-based).
	StartLine, EndLine int
}

// lineState says what the current line, outside a block, can still be.
type lineState uint8

const (
	stLead  lineState = iota // only blanks so far
	stOpen                   // blanks, "["
	stSlash                  // blanks, "[/"
	stName                   // blanks, "[" or "[/", name bytes
	stAfter                  // blanks, "[NAME]" or "[/NAME]", blanks
	stPlain                  // not a tag line: pass it through
)

// scanner splits streamed model output into text, blocks and errors. Feed it
// the output in chunks cut anywhere, then call close.
//
// Text is passed on as soon as it cannot be part of a tag line: the scanner
// holds back a line that, so far, consists of blanks, "[" and a possible
// kind name (at most 256 bytes), and an incomplete UTF-8 sequence at the end
// of a chunk (at most 3 bytes), so Text events hold whole characters when the
// input is valid UTF-8. A block is buffered until its closing tag, up to the
// maxBlockSize. Work is linear in the input.
//
// # Concurrency
//
// A scanner is used by one goroutine at a time.
type scanner struct {
	reg *Registry
	set *kindSet // snapshot of reg, taken at creation and at each close
	max int

	line int // the line being read, from 1

	// Outside a block (open == nil).
	st        lineState
	tagLen    int    // bytes of the current line so far, while st < stPlain
	held      []byte // bytes from earlier chunks, not yet emitted
	heldText  bool   // held is text; else it is the start of a possible tag line
	abandoned string // kind of the last block dropped for its size
	scratch   []byte

	// Inside a block.
	open     *kind
	blk      []byte // the block so far
	blkLine  int    // offset in blk of the current line
	blkStart int    // line of the opening tag

	// During one feed or close.
	ev       []event
	runStart int // offset in the chunk of the text not yet emitted
	cand     int // offset in the chunk of the current line (0: began earlier)
}

// newScanner returns a scanner for the kinds in reg. It panics if reg is nil.
func newScanner(reg *Registry, opts ...scanOption) *scanner {
	if reg == nil {
		panic("protocol: newScanner with a nil Registry")
	}
	c := config{maxBlock: defaultMaxBlockSize}
	for _, o := range opts {
		o.apply(&c)
	}
	s := &scanner{reg: reg, max: c.maxBlock}
	s.reset()
	return s
}

// Parse scans a whole text and returns its valid blocks and its errors, in
// the order they appear.
func Parse(reg *Registry, text string) ([]Block, []*Error) {
	s := newScanner(reg)
	var blocks []Block
	var errs []*Error
	for _, evs := range [2][]event{s.feed(text), s.close()} {
		for _, e := range evs {
			switch {
			case e.Block != nil:
				blocks = append(blocks, *e.Block)
			case e.Err != nil:
				errs = append(errs, e.Err)
			}
		}
	}
	return blocks, errs
}

// feed scans the next chunk of output and returns the events it completes.
func (s *scanner) feed(chunk string) []event {
	s.ev, s.runStart, s.cand = nil, 0, 0
	for i := 0; i < len(chunk); {
		if s.open != nil {
			i = s.feedBlock(chunk, i)
			s.runStart, s.cand = i, i
			continue
		}
		if s.st == stPlain {
			j := strings.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			s.nextLine(i)
			continue
		}
		c := chunk[i]
		i++
		if c == '\n' {
			s.endLine(chunk, i)
			continue
		}
		s.tagLen++
		if s.st = advance(s.st, c); s.st == stPlain || s.tagLen > maxTagLine {
			s.toPlain()
		}
	}
	if s.open == nil {
		if s.st == stPlain {
			s.flushText(chunk, len(chunk), true)
		} else {
			s.flushText(chunk, s.cand, false)
			s.held = append(s.held, chunk[s.cand:]...)
		}
	}
	ev := s.ev
	s.ev = nil
	return ev
}

// close ends the output: it reports a block left open, passes on held-back
// text, and returns the last events. The scanner is then ready for a new
// output, with line numbers from 1 and the registry's current kinds.
func (s *scanner) close() []event {
	s.ev, s.runStart, s.cand = nil, 0, 0
	switch {
	case s.open != nil:
		if s.blkLine < len(s.blk) {
			s.blockLine() // a last line without "\n": maybe the closing tag
		}
		if s.open != nil {
			s.unclosed(len(s.blk))
		}
	case len(s.held) > 0:
		s.lastLine()
	}
	ev := s.ev
	s.reset()
	return ev
}

func (s *scanner) reset() {
	s.set = s.reg.load()
	s.line, s.st, s.tagLen = 1, stLead, 0
	s.held, s.heldText, s.abandoned = s.held[:0], false, ""
	s.open, s.blk, s.blkLine, s.blkStart = nil, s.blk[:0], 0, 0
	s.ev = nil
}

// advance moves the tag-line automaton over one byte (not "\n").
func advance(st lineState, c byte) lineState {
	switch st {
	case stLead:
		if isBlank(c) {
			return stLead
		}
		if c == '[' {
			return stOpen
		}
	case stOpen:
		if c == '/' {
			return stSlash
		}
		if c >= 'A' && c <= 'Z' {
			return stName
		}
	case stSlash:
		if c >= 'A' && c <= 'Z' {
			return stName
		}
	case stName:
		if isNameByte(c) {
			return stName
		}
		if c == ']' {
			return stAfter
		}
	case stAfter:
		if isBlank(c) {
			return stAfter
		}
	}
	return stPlain
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// tagOf returns the registered kind of a tag line "[NAME]" or "[/NAME]"
// (blanks around it and a final "\n" allowed), and whether it closes.
func tagOf[T ~string | ~[]byte](set *kindSet, line T) (*kind, bool) {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > maxTagLine {
		return nil, false
	}
	i, j := 0, n
	for i < j && isBlank(line[i]) {
		i++
	}
	for j > i && isBlank(line[j-1]) {
		j--
	}
	if j-i < 3 || line[i] != '[' || line[j-1] != ']' {
		return nil, false
	}
	i, j = i+1, j-1
	closing := line[i] == '/'
	if closing {
		i++
	}
	if i == j || line[i] < 'A' || line[i] > 'Z' {
		return nil, false
	}
	for p := i + 1; p < j; p++ {
		if !isNameByte(line[p]) {
			return nil, false
		}
	}
	k := set.byName[string(line[i:j])]
	return k, k != nil && closing
}

// nextLine starts a new line, outside a block, at offset i of the chunk.
func (s *scanner) nextLine(i int) {
	s.line++
	s.st, s.tagLen, s.cand = stLead, 0, i
}

// lineHeld reports whether held is the start of the current line.
func (s *scanner) lineHeld() bool { return !s.heldText && len(s.held) > 0 }

// toPlain decides that the current line is text.
func (s *scanner) toPlain() {
	s.st = stPlain
	if len(s.held) > 0 {
		s.heldText = true
	}
}

// flushText emits the pending text: held text, then chunk[runStart:end].
// With keepRune it holds back an incomplete UTF-8 sequence at the end.
func (s *scanner) flushText(chunk string, end int, keepRune bool) {
	var t string
	switch {
	case s.heldText && end-s.runStart > maxTagLine:
		// Emit the held text on its own (with the end of a character it
		// starts) rather than copy a long run.
		m := s.runStart
		for m < s.runStart+utf8.UTFMax-1 && !utf8.RuneStart(chunk[m]) {
			m++
		}
		s.ev = append(s.ev, event{Text: string(append(s.held, chunk[s.runStart:m]...))})
		s.held, s.heldText = s.held[:0], false
		t = chunk[m:end]
	case s.heldText:
		t = string(append(s.held, chunk[s.runStart:end]...))
		s.held, s.heldText = s.held[:0], false
	default:
		t = chunk[s.runStart:end]
	}
	s.runStart = end
	if keepRune {
		if k := incompleteRune(t); k > 0 {
			s.held, s.heldText = append(s.held[:0], t[len(t)-k:]...), true
			t = t[:len(t)-k]
		}
	}
	if t != "" {
		s.ev = append(s.ev, event{Text: t})
	}
}

// incompleteRune returns the length of an incomplete UTF-8 sequence at the
// end of t that more bytes could complete.
func incompleteRune(t string) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(t); k++ {
		c := t[len(t)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(t[len(t)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// endLine handles the "\n" ending a line that could be a tag line, at offset
// end-1 of the chunk.
func (s *scanner) endLine(chunk string, end int) {
	if s.st == stAfter {
		var k *kind
		var closing bool
		var line string
		if s.lineHeld() {
			s.scratch = append(append(s.scratch[:0], s.held...), chunk[s.cand:end]...)
			k, closing = tagOf(s.set, s.scratch)
			if k != nil {
				line = string(s.scratch)
			}
		} else {
			line = chunk[s.cand:end]
			k, closing = tagOf(s.set, line)
		}
		if k != nil && !(closing && k.name == s.abandoned) {
			s.flushText(chunk, s.cand, false)
			s.held = s.held[:0]
			s.runStart = end
			s.tag(k, closing, line)
			if s.open != nil {
				return
			}
			s.nextLine(end)
			return
		}
		if k != nil {
			s.abandoned = "" // the closing tag of a dropped block is text
		}
	}
	s.toPlain()
	s.nextLine(end)
}

// lastLine handles the held rest of the output at close, outside a block.
func (s *scanner) lastLine() {
	if s.heldText || s.st != stAfter {
		s.emitHeld()
		return
	}
	k, closing := tagOf(s.set, s.held)
	if k == nil || closing && k.name == s.abandoned {
		s.emitHeld()
		return
	}
	line := string(s.held)
	s.held = s.held[:0]
	if closing {
		s.tag(k, true, line)
		return
	}
	s.regionError(k.name, line, s.line, fmt.Sprintf("[%s] opened at line %d is never closed", k.name, s.line))
}

func (s *scanner) emitHeld() {
	s.ev = append(s.ev, event{Text: string(s.held)})
	s.held, s.heldText = s.held[:0], false
}

// tag handles a tag line outside a block: it opens a block, or it is a
// closing tag without an opening one.
func (s *scanner) tag(k *kind, closing bool, line string) {
	if closing {
		s.regionErrors(k.name, line, s.line, []problem{{s.line, fmt.Sprintf("[/%s] has no matching [%s] above it", k.name, k.name)}})
		return
	}
	s.abandoned = ""
	s.open, s.blkStart = k, s.line
	s.blk = append(s.blk[:0], line...)
	s.blkLine = len(s.blk)
	s.line++
}

// feedBlock buffers chunk[i:] into the open block, up to the end of the
// block, and returns the offset where it stopped.
func (s *scanner) feedBlock(chunk string, i int) int {
	for i < len(chunk) && s.open != nil {
		j := strings.IndexByte(chunk[i:], '\n')
		end := len(chunk)
		if j >= 0 {
			end = i + j + 1
		}
		if len(s.blk)+end-i > s.max {
			return s.overflow(chunk, i, end)
		}
		s.blk = append(s.blk, chunk[i:end]...)
		i = end
		if j >= 0 {
			s.blockLine()
		}
	}
	return i
}

// blockLine handles the line of the open block that has just ended.
func (s *scanner) blockLine() {
	line := s.blk[s.blkLine:]
	k, closing := tagOf(s.set, line)
	switch {
	case k == nil:
	case closing && k == s.open:
		s.endBlock()
	case closing:
		raw := string(s.blk)
		s.regionErrors(s.open.name, raw, s.blkStart, []problem{{s.line, fmt.Sprintf("[/%s] does not close [%s] opened at line %d", k.name, s.open.name, s.blkStart)}})
		s.open = nil
	default: // an opening tag: the open block was never closed
		s.unclosed(s.blkLine)
		n := copy(s.blk, line)
		s.blk = s.blk[:n]
		s.open, s.blkStart = k, s.line
	}
	s.blkLine = len(s.blk)
	if s.open == nil {
		s.blk, s.blkLine = s.blk[:0], 0
		s.nextLine(0) // the feed loop sets cand
		return
	}
	s.line++
}

// endBlock parses and builds the open block, whose closing tag line is the
// current line.
func (s *scanner) endBlock() {
	k := s.open
	s.open = nil
	raw := string(s.blk)
	body := raw[strings.IndexByte(raw, '\n')+1 : s.blkLine]
	f, probs := parseFields(k, body, s.blkStart+1, s.blkStart)
	var v any
	if len(probs) == 0 {
		v, probs = build(k, f)
	}
	if len(probs) > 0 {
		s.regionErrors(k.name, raw, s.blkStart, probs)
		return
	}
	s.ev = append(s.ev, event{Block: &Block{Kind: k.name, Value: v, Raw: raw, StartLine: s.blkStart, EndLine: s.line}})
}

// unclosed reports the open block, up to offset end of the buffer, as never
// closed.
func (s *scanner) unclosed(end int) {
	s.regionError(s.open.name, string(s.blk[:end]), s.blkStart,
		fmt.Sprintf("[%s] opened at line %d is never closed", s.open.name, s.blkStart))
	s.open = nil
}

// overflow drops the open block, which would grow past the limit with
// chunk[i:end]. The block's first bytes up to the limit are reported; the
// rest is read as text. The cut never falls inside the opening tag line, nor
// inside a multi-byte character: it moves back to the character's start,
// judged from the bytes up to the cut only, so that where the chunks were cut
// does not matter. It returns where text starts in the chunk.
func (s *scanner) overflow(chunk string, i, end int) int {
	c := max(s.max, bytes.IndexByte(s.blk, '\n')+1)
	at := func(p int) byte {
		if p < len(s.blk) {
			return s.blk[p]
		}
		return chunk[i+p-len(s.blk)]
	}
	if !utf8.RuneStart(at(c)) {
		for k := 1; k < utf8.UTFMax && c-k >= s.blkLine; k++ {
			b := at(c - k)
			if b < utf8.RuneSelf {
				break
			}
			if utf8.RuneStart(b) {
				if seqLen(b) > k {
					c -= k
				}
				break
			}
		}
	}
	if n := c - len(s.blk); n >= 0 {
		s.blk = append(s.blk, chunk[i:i+n]...)
		i += n
	} else { // the cut is in bytes already buffered: they are text
		s.held, s.heldText = append(s.held[:0], s.blk[c:]...), true
		s.blk = s.blk[:c]
	}
	s.regionError(s.open.name, string(s.blk), s.blkStart,
		fmt.Sprintf("[%s] opened at line %d is longer than %d bytes", s.open.name, s.blkStart, s.max))
	s.abandoned = s.open.name
	s.st, s.tagLen = stPlain, 0
	if c == s.blkLine && !s.heldText {
		s.st = stLead
	}
	s.open, s.blk, s.blkLine = nil, s.blk[:0], 0
	return i
}

// seqLen returns the length of the UTF-8 sequence that lead byte b starts.
func seqLen(b byte) int {
	switch {
	case b >= 0xF0:
		return 4
	case b >= 0xE0:
		return 3
	case b >= 0xC0:
		return 2
	}
	return 1
}

// regionErrors reports problems of a region (a block, a stray tag line) that
// starts at line start; each message is prefixed with its line.
func (s *scanner) regionErrors(kind, raw string, start int, probs []problem) {
	end := lastLine(start, raw)
	if len(probs) > maxProblems {
		more := problem{probs[maxProblems].line, fmt.Sprintf("%d more problems in [%s] are not shown", len(probs)-maxProblems, kind)}
		probs = append(probs[:maxProblems:maxProblems], more)
	}
	for _, p := range probs {
		s.ev = append(s.ev, event{Err: &Error{
			Line: p.line, Kind: kind, Msg: fmt.Sprintf("line %d: %s", p.line, p.msg),
			Raw: raw, StartLine: start, EndLine: end,
		}})
	}
}

// regionError reports a problem of a whole region, at its first line, with a
// message that names the line itself.
func (s *scanner) regionError(kind, raw string, start int, msg string) {
	s.ev = append(s.ev, event{Err: &Error{
		Line: start, Kind: kind, Msg: msg, Raw: raw, StartLine: start, EndLine: lastLine(start, raw),
	}})
}

// lastLine returns the number of the last line of raw, which starts at line
// start.
func lastLine(start int, raw string) int {
	return start + strings.Count(strings.TrimSuffix(raw, "\n"), "\n")
}

// build runs the kind's Build, turning its errors (and a panic) into
// problems.
func build(k *kind, f *Fields) (value any, probs []problem) {
	if k.build == nil {
		return f, nil
	}
	defer func() {
		if r := recover(); r != nil {
			value = nil
			probs = []problem{{f.open, fmt.Sprintf("[%s] could not be checked: its validator failed", k.name)}}
		}
	}()
	v, err := k.build(f)
	if err == nil {
		return v, nil
	}
	for _, e := range leaves(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			probs = append(probs, problem{f.Line(fe.Field), fe.Msg})
		} else {
			probs = append(probs, problem{f.open, e.Error()})
		}
	}
	slices.SortStableFunc(probs, func(a, b problem) int { return a.line - b.line })
	return nil, probs
}

// leaves flattens errors joined with errors.Join (or any Unwrap() []error).
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		if e != nil {
			out = append(out, leaves(e)...)
		}
	}
	return out
}

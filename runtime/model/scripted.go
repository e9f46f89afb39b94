package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Scripted is a [Provider] whose responses come from a YAML script keyed by
// agent, turn and step, so any scenario runs offline and deterministically.
// It is the runtime's embedded default model and the engine of most tests.
// Create one with [LoadScript] or [ParseScript].
//
// # Script format
//
// A script is one YAML document. Unknown keys are errors. The file
// testdata/example.yaml in this package is a commented example.
//
//	chunk_size: 0                  # optional
//	agents:                        # required: at least one agent
//	  assistant:                   # the agent's name, as in Request.Agent
//	    turns:                     # entries chosen by turn number or by match
//	      - steps:                 # step k answers Request.Step == k
//	          - reasoning: "Let me check."
//	            text: "Let me look."
//	            tool_calls:
//	              - name: read_file
//	                id: call_1
//	                args: {path: notes.txt}
//	              - name: broken
//	                arguments: '{"path": '
//	            usage: {input_tokens: 10, output_tokens: 5}
//	          - text: "The file says: {{ .LastMessage }}"
//	      - match: "(?i)weather"
//	        steps:
//	          - error: "simulated provider failure"
//	    fallback:
//	      steps:
//	        - text: "I have nothing scripted for that."
//
// The keys, level by level:
//
//   - chunk_size (integer, default 0): 0 streams each text and reasoning in
//     one chunk; N > 0 splits them into chunks of at most N bytes, cut at
//     UTF-8 boundaries (a chunk holds at least one whole character, so a
//     character longer than N bytes makes a longer chunk).
//   - agents (mapping): agent name → agent.
//   - agent.turns (sequence of entries) and agent.fallback (one entry,
//     optional). An agent needs turns, a fallback or both.
//   - entry.match (string, optional): a Go regexp (package regexp syntax)
//     matched against the turn's input. Not allowed on the fallback.
//   - entry.steps (sequence, at least one step).
//   - step.reasoning, step.text (strings, optional): streamed as reasoning
//     and text chunks. A string containing "{{" is a template (see below).
//     An empty string streams nothing.
//   - step.tool_calls (sequence, optional): the calls the step asks for.
//   - tool_call.name (string, required).
//   - tool_call.id (string, optional): unique within the step; default
//     "call_<turn>_<step>_<n>" with Request.Turn, Request.Step and n counting
//     the step's calls from 1.
//   - tool_call.args (mapping, optional): encoded to one JSON object at load,
//     keys in the script's order. Without args or arguments the arguments
//     are "{}".
//   - tool_call.arguments (string, optional): the raw argument text, streamed
//     verbatim, even when it is not valid JSON (to test malformed calls). A
//     call takes args or arguments, not both.
//   - step.usage (mapping, optional): input_tokens, output_tokens,
//     cache_read_tokens, cache_write_tokens (non-negative integers), streamed
//     as a usage chunk.
//   - step.error (string, optional, not empty): the stream ends with an
//     error chunk whose Err's text is this message.
//
// A step must hold at least one of text, reasoning, tool_calls, usage and
// error. YAML anchors, aliases and merge keys (<<) work, but a key may not
// come both from a merge and from the mapping itself, and a script may not
// expand to more than 262144 nodes through its aliases.
//
// # Choosing a response
//
// The turn's input is the Content of the last message in Request.Messages
// whose Role is user ("" if there is none); it stays the same across the
// steps of a turn. For a request, [Scripted.Stream] looks up the agent named
// Request.Agent and picks its entry:
//
//  1. the first entry with a match whose regexp matches the input;
//  2. else the Request.Turn-th entry without a match (entries with a match
//     do not count: the plain entries are turns 1, 2, 3, ... in file order);
//  3. else the fallback.
//
// Request.Step k then selects the entry's k-th step.
//
// # Chunks
//
// A step streams, in this order: its reasoning, its text, then for each tool
// call a [KindToolCallStart], one [KindToolCallDelta] holding all the
// arguments (left out when raw arguments are empty) and a [KindToolCallEnd],
// then a [KindUsage] chunk if usage is set, and last a [KindError] chunk if
// error is set.
//
// Chunks are computed at load, so a call to Stream costs one small
// allocation, plus one per tool call whose default id depends on
// Request.Turn (in a match or fallback entry). Only a step with a template
// is rendered per call.
//
// # Templates
//
// A text or reasoning containing "{{" is a Go text/template, parsed at load.
// It sees these fields:
//
//	.Agent        Request.Agent
//	.Instance     Request.InstanceKey
//	.Turn         Request.Turn
//	.Step         Request.Step
//	.Input        the turn's input (the last user message's content)
//	.LastMessage  the content of the last message, whatever its role
//
// A template that fails when executed ends the stream with a [KindError]
// chunk naming the template's position.
//
// # Errors
//
// [LoadScript] and [ParseScript] reject a bad script with an error whose
// first line is "file:line:col: message", followed by the source lines with a
// caret under the column. [Scripted.Stream] returns an error, not a chunk,
// when the script has no response for the request: an unknown agent, a turn
// with no entry and no fallback, or a step beyond the entry's steps. The
// texts are stable, for example:
//
//	scripted model: no agent "x" in script.yaml (agents: a, b)
//	scripted model: agent "assistant" has no turn 3 in script.yaml (2 turns, no fallback)
//	scripted model: agent "assistant" turn 1 has no step 4 in script.yaml (3 steps)
//
// # Concurrency
//
// A Scripted is immutable after loading and safe for concurrent use. Each
// [Stream] it returns is used by one goroutine, like any Stream.
type Scripted struct {
	name   string
	agents map[string]*scriptAgent
	names  []string // sorted
}

// scriptAgent is one agent of a script.
type scriptAgent struct {
	name     string
	turns    []*scriptEntry // entries without match, by turn number
	matches  []*scriptEntry // entries with match, in file order
	fallback *scriptEntry
}

// scriptEntry is one entry of an agent's turns, or its fallback.
type scriptEntry struct {
	label string // for errors: "", ` (match "...")` or " (fallback)"
	re    *regexp.Regexp
	steps []scriptStep
}

// scriptStep is one step of an entry: its chunks, computed at load unless
// the step has a template, and what it takes to compute them per request.
type scriptStep struct {
	chunks []Chunk
	// callN is nil unless some chunks need a default tool call id that
	// depends on Request.Turn (in a match or fallback entry): then callN[i]
	// is n > 0 when chunks[i] belongs to the step's n-th call and takes its
	// default id, which Recv fills in.
	callN    []uint16
	template bool

	chunkSize int
	reasoning textPart
	text      textPart
	calls     []scriptCall
	usage     *pipeline.Usage
	err       error
}

// scriptCall is one tool call of a step.
type scriptCall struct {
	id   string // "" means the default id
	name string
	args string
}

// LoadScript reads and parses the script at path; see [Scripted] for the
// format. Errors name the file as path.
func LoadScript(path string) (*Scripted, error) {
	// A file over the size limit is read only up to it: ParseScript then
	// refuses it without the whole file in memory.
	data, err := yamlsrc.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	return ParseScript(path, data)
}

// ParseScript parses a script held in data; name is the file name used in
// errors. See [Scripted] for the format.
func ParseScript(name string, data []byte) (*Scripted, error) {
	return parseScript(name, data)
}

// Agents returns the names of the script's agents, sorted. The caller owns
// the slice.
func (s *Scripted) Agents() []string {
	return slices.Clone(s.names)
}

// Stream returns the scripted response to req. It fails when ctx is already
// done, and when the script has no response for req (see [Scripted]); the
// returned [Stream] fails its Recv with ctx.Err() once ctx is done.
func (s *Scripted) Stream(ctx context.Context, req *Request) (Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, errors.New("scripted model: nil request")
	}
	a := s.agents[req.Agent]
	if a == nil {
		return nil, fmt.Errorf("scripted model: no agent %q in %s (agents: %s)",
			req.Agent, s.name, strings.Join(s.names, ", "))
	}
	if req.Turn < 1 {
		return nil, fmt.Errorf("scripted model: agent %q: invalid turn %d (turns count from 1)", a.name, req.Turn)
	}
	if req.Step < 1 {
		return nil, fmt.Errorf("scripted model: agent %q: invalid step %d (steps count from 1)", a.name, req.Step)
	}

	var e *scriptEntry
	if len(a.matches) > 0 {
		input := lastUserContent(req.Messages)
		for _, m := range a.matches {
			if m.re.MatchString(input) {
				e = m
				break
			}
		}
	}
	if e == nil && req.Turn <= len(a.turns) {
		e = a.turns[req.Turn-1]
	}
	if e == nil {
		e = a.fallback
	}
	if e == nil {
		return nil, a.noTurnError(s.name, req.Turn)
	}
	if req.Step > len(e.steps) {
		return nil, fmt.Errorf("scripted model: agent %q turn %d%s has no step %d in %s (%s)",
			a.name, req.Turn, e.label, req.Step, s.name, plural(len(e.steps), "step", "steps"))
	}
	st := &e.steps[req.Step-1]
	if st.template {
		return &scriptStream{ctx: ctx, chunks: st.render(req)}, nil
	}
	return &scriptStream{ctx: ctx, chunks: st.chunks, callN: st.callN, turn: req.Turn, step: req.Step}, nil
}

// noTurnError reports that agent a has no entry for turn.
func (a *scriptAgent) noTurnError(file string, turn int) error {
	var b strings.Builder
	b.WriteString(plural(len(a.turns), "turn", "turns"))
	if n := len(a.matches); n > 0 {
		b.WriteString(", ")
		b.WriteString(plural(n, "match entry that did not match", "match entries that did not match"))
	}
	b.WriteString(", no fallback")
	return fmt.Errorf("scripted model: agent %q has no turn %d in %s (%s)", a.name, turn, file, b.String())
}

// plural formats n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// lastUserContent returns the content of the last user message, or "".
func lastUserContent(msgs pipeline.MessageList) string {
	for i := msgLen(msgs) - 1; i >= 0; i-- {
		if m := msgs.At(i); m.Role == pipeline.RoleUser {
			return m.Content
		}
	}
	return ""
}

// msgLen is msgs.Len(), with no messages for a nil list.
func msgLen(msgs pipeline.MessageList) int {
	if msgs == nil {
		return 0
	}
	return msgs.Len()
}

// render computes the chunks of a step with a template for req.
func (st *scriptStep) render(req *Request) []Chunk {
	data := templateData{
		Agent:    req.Agent,
		Instance: req.InstanceKey,
		Turn:     req.Turn,
		Step:     req.Step,
		Input:    lastUserContent(req.Messages),
	}
	if n := msgLen(req.Messages); n > 0 {
		data.LastMessage = req.Messages.At(n - 1).Content
	}
	return st.appendChunks(make([]Chunk, 0, 2+3*len(st.calls)+2), req.Turn, req.Step, &data)
}

// appendChunks appends the step's chunks to dst. turn and step name the
// default tool call ids, left empty when turn is 0; data feeds the templates
// (nil when there are none).
func (st *scriptStep) appendChunks(dst []Chunk, turn, step int, data *templateData) []Chunk {
	var ok bool
	if dst, ok = st.reasoning.appendChunks(dst, KindReasoning, st.chunkSize, data); !ok {
		return dst
	}
	if dst, ok = st.text.appendChunks(dst, KindText, st.chunkSize, data); !ok {
		return dst
	}
	for i, c := range st.calls {
		id := c.id
		if id == "" && turn > 0 {
			id = defaultCallID(turn, step, i+1)
		}
		dst = append(dst, Chunk{Kind: KindToolCallStart, ToolCallID: id, ToolName: c.name})
		if c.args != "" {
			dst = append(dst, Chunk{Kind: KindToolCallDelta, ToolCallID: id, ToolName: c.name, ArgumentsDelta: c.args})
		}
		dst = append(dst, Chunk{Kind: KindToolCallEnd, ToolCallID: id, ToolName: c.name})
	}
	if st.usage != nil {
		dst = append(dst, Chunk{Kind: KindUsage, Usage: *st.usage})
	}
	if st.err != nil {
		dst = append(dst, Chunk{Kind: KindError, Err: st.err})
	}
	return dst
}

// defaultCallID is the id of the n-th tool call of a step that gives none.
func defaultCallID(turn, step, n int) string {
	b := make([]byte, 0, 24)
	b = append(b, "call_"...)
	b = strconv.AppendInt(b, int64(turn), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, '_')
	b = strconv.AppendInt(b, int64(n), 10)
	return string(b)
}

// appendSplit appends s as chunks of kind of at most size bytes (all of s
// when size is 0), cut at UTF-8 boundaries. An empty s appends nothing.
func appendSplit(dst []Chunk, kind ChunkKind, s string, size int) []Chunk {
	for len(s) > 0 {
		n := len(s)
		if size > 0 && n > size {
			n = size
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
			if n == 0 { // one character longer than size: keep it whole
				_, n = utf8.DecodeRuneInString(s)
			}
		}
		dst = append(dst, Chunk{Kind: kind, Text: s[:n]})
		s = s[n:]
	}
	return dst
}

// errStreamClosed is what Recv returns after Close.
var errStreamClosed = errors.New("scripted model: stream closed")

// scriptStream yields the chunks of one scripted response from a slice
// shared with other streams and never written. It holds the request's context
// because Recv, which has no context of its own, must honour its
// cancellation.
type scriptStream struct {
	ctx        context.Context
	chunks     []Chunk
	callN      []uint16 // see scriptStep.callN; nil when chunks are final
	next       int      // index of the next chunk
	turn, step int      // for default ids
	id         string   // default id of call idN, once computed
	idN        uint16
	closed     bool
}

// Recv returns the next chunk, io.EOF after the last one, ctx.Err() once the
// stream's context is done, and an error after Close.
func (s *scriptStream) Recv() (Chunk, error) {
	if s.closed {
		return Chunk{}, errStreamClosed
	}
	if err := s.ctx.Err(); err != nil {
		return Chunk{}, err
	}
	if s.next >= len(s.chunks) {
		return Chunk{}, io.EOF
	}
	c := s.chunks[s.next]
	if s.callN != nil {
		if n := s.callN[s.next]; n != 0 {
			if n != s.idN {
				s.id, s.idN = defaultCallID(s.turn, s.step, int(n)), n
			}
			c.ToolCallID = s.id
		}
	}
	s.next++
	return c, nil
}

// Close ends the stream; it is idempotent and always returns nil.
func (s *scriptStream) Close() error {
	s.closed = true
	s.chunks, s.callN = nil, nil
	return nil
}

var (
	_ Provider = (*Scripted)(nil)
	_ Stream   = (*scriptStream)(nil)
)

package scripted

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
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Model is a [model.Provider] whose responses come from a YAML script; see
// the package documentation for the format, how a response is chosen and the
// errors. Create one with [Load] or [Parse].
//
// # Concurrency
//
// A Model is immutable after loading and safe for concurrent use. Each
// [model.Stream] it returns is used by one goroutine, like any Stream.
type Model struct {
	name   string
	agents map[string]*scriptAgent
	names  []string // sorted
}

// scriptAgent is one agent of a script.
type scriptAgent struct {
	name     string
	turns    []*scriptEntry // entries without a condition, by turn number
	matches  []*scriptEntry // entries with a condition (match, kind), in file order
	fallback *scriptEntry
}

// scriptEntry is one entry of an agent's turns, or its fallback.
type scriptEntry struct {
	label string // for errors: "", ` (kind resume, match "...")` or " (fallback)"
	re    *regexp.Regexp
	kind  pipeline.InputKind // "" for any
	steps []scriptStep
}

// conditional reports whether the entry applies only to some turns: it has
// a match or a kind.
func (e *scriptEntry) conditional() bool { return e.re != nil || e.kind != "" }

// applies reports whether the conditional entry e applies to a turn of
// kind whose input is input.
func (e *scriptEntry) applies(kind pipeline.InputKind, input string) bool {
	return (e.kind == "" || e.kind == kind) && (e.re == nil || e.re.MatchString(input))
}

// inputKinds are the values of an entry's kind, and kindList says them.
var inputKinds = []pipeline.InputKind{pipeline.InputUserMessage, pipeline.InputAgentRequest, pipeline.InputDelegationReport, pipeline.InputResume}

const kindList = "user_message, agent_request, delegation_report or resume"

// scriptStep is one step of an entry: its chunks, computed at load unless
// the step has a template, and what it takes to compute them per request.
type scriptStep struct {
	chunks []model.Chunk
	// callN is nil unless some chunks need a default tool call id that
	// depends on Request.Turn (in a match or fallback entry): then callN[i]
	// is n > 0 when chunks[i] belongs to the step's n-th call and takes its
	// default id, which Recv fills in.
	callN    []uint16
	template bool
	// toolResult is set when a template reads .ToolResult, which takes a
	// look back through the messages.
	toolResult bool

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

// Load reads and parses the script at path; see [Model] for the
// format. Errors name the file as path.
func Load(path string) (*Model, error) {
	// A file over the size limit is read only up to it: Parse then
	// refuses it without the whole file in memory.
	data, err := yamlsrc.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a script held in data; name is the file name used in
// errors. See [Model] for the format.
func Parse(name string, data []byte) (*Model, error) {
	return parseScript(name, data)
}

// Agents returns the names of the script's agents, sorted. The caller owns
// the slice.
func (s *Model) Agents() []string {
	return slices.Clone(s.names)
}

// Stream returns the scripted response to req. It fails when ctx is already
// done, and when the script has no response for req (see [Model]); the
// returned [model.Stream] fails its Recv with ctx.Err() once ctx is done.
func (s *Model) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
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
			if m.applies(req.InputKind, input) {
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
		b.WriteString(plural(n, "entry with match or kind that did not apply", "entries with match or kind that did not apply"))
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
func (st *scriptStep) render(req *model.Request) []model.Chunk {
	data := templateData{
		Agent:    req.Agent,
		Instance: req.InstanceKey,
		Turn:     req.Turn,
		Step:     req.Step,
		Kind:     string(req.InputKind),
		Input:    lastUserContent(req.Messages),
	}
	n := msgLen(req.Messages)
	if n > 0 {
		data.LastMessage = req.Messages.At(n - 1).Content
	}
	if st.toolResult {
		for i := n - 1; i >= 0; i-- {
			if m := req.Messages.At(i); m.Role == pipeline.RoleTool {
				data.ToolResult = m.Content
				break
			}
		}
	}
	return st.appendChunks(make([]model.Chunk, 0, 2+3*len(st.calls)+2), req.Turn, req.Step, &data)
}

// appendChunks appends the step's chunks to dst. turn and step name the
// default tool call ids, left empty when turn is 0; data feeds the templates
// (nil when there are none).
func (st *scriptStep) appendChunks(dst []model.Chunk, turn, step int, data *templateData) []model.Chunk {
	var ok bool
	if dst, ok = st.reasoning.appendChunks(dst, model.KindReasoning, st.chunkSize, data); !ok {
		return dst
	}
	if dst, ok = st.text.appendChunks(dst, model.KindText, st.chunkSize, data); !ok {
		return dst
	}
	for i, c := range st.calls {
		id := c.id
		if id == "" && turn > 0 {
			id = defaultCallID(turn, step, i+1)
		}
		dst = append(dst, model.Chunk{Kind: model.KindToolCallStart, ToolCallID: id, ToolName: c.name})
		if c.args != "" {
			dst = append(dst, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: id, ToolName: c.name, ArgumentsDelta: c.args})
		}
		dst = append(dst, model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: id, ToolName: c.name})
	}
	if st.usage != nil {
		dst = append(dst, model.Chunk{Kind: model.KindUsage, Usage: *st.usage})
	}
	if st.err != nil {
		dst = append(dst, model.Chunk{Kind: model.KindError, Err: st.err})
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
func appendSplit(dst []model.Chunk, kind model.ChunkKind, s string, size int) []model.Chunk {
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
		dst = append(dst, model.Chunk{Kind: kind, Text: s[:n]})
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
	chunks     []model.Chunk
	callN      []uint16 // see scriptStep.callN; nil when chunks are final
	next       int      // index of the next chunk
	turn, step int      // for default ids
	id         string   // default id of call idN, once computed
	idN        uint16
	closed     bool
}

// Recv returns the next chunk, io.EOF after the last one, ctx.Err() once the
// stream's context is done, and an error after Close.
func (s *scriptStream) Recv() (model.Chunk, error) {
	if s.closed {
		return model.Chunk{}, errStreamClosed
	}
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	if s.next >= len(s.chunks) {
		return model.Chunk{}, io.EOF
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
	_ model.Provider = (*Model)(nil)
	_ model.Stream   = (*scriptStream)(nil)
)

package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// version is the format version this package writes. It reads every
// version up to it.
const version = 1

// The kinds of line, the "k" key of each.
const (
	kindHeader = "cassette"
	kindInput  = "input"
	kindModel  = "model"
	kindChunk  = "chunk"
	kindTool   = "tool"
	kindID     = "id"
	kindClock  = "clock"
	kindEvent  = "event"
	kindMCP    = "mcp_tools"
)

// maxLine bounds one line of a cassette: a model call's messages are on one.
const maxLine = 64 << 20

type header struct {
	K       string    `json:"k"`
	Version int       `json:"version"`
	Start   time.Time `json:"start"`
}

// Input is one thing a session was given through the runtime's API: a
// message sent to an agent, or the resolution of a pending item.
type Input struct {
	// Op is what was done: "send", "ask", "answer", "edit", "skip",
	// "provide" or "reject".
	Op string `json:"op"`
	// Agent and Instance name the instance of a send or an ask.
	Agent    string `json:"agent,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Input is a send's input.
	Input *pipeline.InputEvent `json:"input,omitempty"`
	// ID is the pending item an answer, edit, skip, provide or reject resolves.
	ID string `json:"id,omitempty"`
	// Text is an ask's message, an answer, a rejection's reason, or an
	// edit's arguments, or a provided value. A secret value is never
	// recorded: it reads "[secret]".
	Text string `json:"text,omitempty"`
	// Secret marks a provide of a secret value.
	Secret bool `json:"secret,omitempty"`
}

type inputLine struct {
	K string `json:"k"`
	Input
}

// message is a message as a model is sent it: without the IDs, times and
// metadata that stay in the runtime.
type message struct {
	Role       pipeline.Role `json:"role"`
	Content    string        `json:"content,omitempty"`
	Reasoning  string        `json:"reasoning,omitempty"`
	ToolCalls  []toolCall    `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
	Name       string        `json:"name,omitempty"`
	IsError    bool          `json:"is_error,omitempty"`
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type toolSpec struct {
	Name        string                `json:"name"`
	Description string                `json:"description,omitempty"`
	Category    pipeline.ToolCategory `json:"category,omitempty"`
	Parameters  json.RawMessage       `json:"parameters,omitempty"`
}

func wireMessage(m pipeline.Message) message {
	w := message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID, Name: m.Name, IsError: m.IsError}
	if len(m.ToolCalls) > 0 {
		w.ToolCalls = make([]toolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			w.ToolCalls[i] = toolCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)}
		}
	}
	return w
}

func wireTools(tools []pipeline.Tool) []toolSpec {
	out := make([]toolSpec, len(tools))
	for i, t := range tools {
		out[i] = toolSpec{Name: t.Name, Description: t.Description, Category: t.Category, Parameters: compactJSON(t.Parameters)}
	}
	return out
}

// compactJSON returns raw without insignificant space, so that a schema
// written another way compares equal; raw that is not JSON stays as it is.
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// modelLine is a model call's request.
type modelLine struct {
	K               string    `json:"k"`
	Call            int       `json:"call"`
	Model           string    `json:"model,omitempty"`
	Agent           string    `json:"agent"`
	Instance        string    `json:"instance"`
	TurnID          string    `json:"turn_id"`
	Step            int       `json:"step"`
	ModelName       string    `json:"model_name,omitempty"`
	System          string    `json:"system,omitempty"`
	MaxOutputTokens int       `json:"max_output_tokens,omitempty"`
	Same            int       `json:"same,omitempty"`
	Messages        []message `json:"messages"`
	// Tools is left out (nil) when the catalog is the previous call's;
	// an empty list is no tools.
	Tools []toolSpec `json:"tools,omitzero"`
	// OpenError is the error the provider refused the call with.
	OpenError *wireError `json:"open_error,omitempty"`
}

type chunkLine struct {
	K          string          `json:"k"`
	Call       int             `json:"call"`
	MS         int64           `json:"ms"`
	Kind       string          `json:"kind"`
	Text       string          `json:"text,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	Arguments  string          `json:"arguments,omitempty"`
	Usage      *pipeline.Usage `json:"usage,omitempty"`
	Error      *wireError      `json:"error,omitempty"`
}

// wireError is a failed model call: a provider's *model.Error field by
// field, so that its replay reads the same, or another error's text.
type wireError struct {
	Kind     string `json:"kind,omitempty"`
	Provider string `json:"provider,omitempty"`
	Status   int    `json:"status,omitempty"`
	Message  string `json:"message"`
}

func toWireError(err error) *wireError {
	if me, ok := errors.AsType[*model.Error](err); ok {
		return &wireError{Kind: me.Kind.String(), Provider: me.Provider, Status: me.Status, Message: me.Message}
	}
	return &wireError{Message: err.Error()}
}

func (w *wireError) err() error {
	if w.Kind == "" {
		return errors.New(w.Message)
	}
	for k := model.ErrorOther; k.String() != "ErrorKind("+strconv.Itoa(int(k))+")"; k++ {
		if k.String() == w.Kind {
			return &model.Error{Kind: k, Provider: w.Provider, Status: w.Status, Message: w.Message}
		}
	}
	return &model.Error{Kind: model.ErrorOther, Provider: w.Provider, Status: w.Status, Message: w.Message}
}

type toolLine struct {
	K        string `json:"k"`
	Agent    string `json:"agent"`
	Instance string `json:"instance"`
	TurnID   string `json:"turn_id"`
	Step     int    `json:"step"`
	CallID   string `json:"call_id"`
	Name     string `json:"name"`
	// Arguments is the JSON the tool was called with, as a string (it may
	// be malformed).
	Arguments string `json:"arguments"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
	// Error is the error the tool returned instead of a result, and
	// NoResult marks a tool that returned neither.
	Error    string `json:"error,omitempty"`
	NoResult bool   `json:"no_result,omitempty"`
	MS       int64  `json:"ms"`
}

// setResult sets what a tool run came to, masked with mask (if not nil).
func (l *toolLine) setResult(res *pipeline.ToolResult, err error, mask func(string) string) {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	switch {
	case err != nil:
		l.Error = mask(err.Error())
	case res == nil:
		l.NoResult = true
	default:
		l.Content, l.IsError = mask(res.Content), res.IsError
	}
}

// mcpLine is an MCP server's tool listing, written when it changed.
type mcpLine struct {
	K      string          `json:"k"`
	Server string          `json:"server"`
	Tools  json.RawMessage `json:"tools"`
}

type idLine struct {
	K   string `json:"k"`
	Key string `json:"key"`
	ID  string `json:"id"`
}

type clockLine struct {
	K  string  `json:"k"`
	NS []int64 `json:"ns"`
}

type eventLine struct {
	K        string          `json:"k"`
	Topic    string          `json:"topic"`
	Agent    string          `json:"agent,omitempty"`
	Instance string          `json:"instance,omitempty"`
	TurnID   string          `json:"turn_id,omitempty"`
	Source   string          `json:"source"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// call is a recorded model call: its request and its response.
type call struct {
	line   modelLine
	msgs   []message // every message, the same ones of the call before included
	tools  []toolSpec
	chunks []chunkLine
}

// Cassette is a recorded session, read with [Open] or [Read].
type Cassette struct {
	start  time.Time
	inputs []Input
	calls  []*call
	tools  []toolLine
	ids    []idLine
	clock  []time.Time
	events []eventLine
	mcp    map[string]json.RawMessage // each MCP server's last listing
}

// Inputs returns what the session was given, in order.
func (c *Cassette) Inputs() []Input { return c.inputs }

// Open reads the cassette in the file at path.
func Open(path string) (*Cassette, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return c, nil
}

// Read reads a cassette. Its errors name the line that is wrong:
// "3: model line: ...".
func Read(r io.Reader) (*Cassette, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	c := &Cassette{}
	n := 0
	prev := map[string]*call{} // the last call of each conversation
	calls := map[int]*call{}
	at := time.Time{}
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var k struct {
			K string `json:"k"`
		}
		if err := json.Unmarshal(line, &k); err != nil {
			return nil, fmt.Errorf("%d: not a JSON object: %v", n, err)
		}
		if n == 1 || c.start.IsZero() {
			if k.K != kindHeader {
				return nil, fmt.Errorf("%d: not a cassette: the first line must be the header {\"k\":\"cassette\",...}, found %q", n, k.K)
			}
			var h header
			if err := strictUnmarshal(line, &h); err != nil {
				return nil, fmt.Errorf("%d: header: %v", n, err)
			}
			if h.Version < 1 || h.Version > version {
				return nil, fmt.Errorf("%d: cassette version %d; this build reads versions 1 to %d", n, h.Version, version)
			}
			if h.Start.IsZero() {
				return nil, fmt.Errorf("%d: header: no start time", n)
			}
			c.start, at = h.Start, h.Start
			continue
		}
		if err := c.readLine(k.K, line, prev, calls, &at); err != nil {
			return nil, fmt.Errorf("%d: %s line: %v", n, k.K, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%d: a line longer than %d MiB", n+1, maxLine>>20)
		}
		return nil, err
	}
	if c.start.IsZero() {
		return nil, errors.New("1: not a cassette: empty")
	}
	return c, nil
}

func (c *Cassette) readLine(kind string, line []byte, prev map[string]*call, calls map[int]*call, at *time.Time) error {
	switch kind {
	case kindInput:
		var l inputLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		switch l.Op {
		case "send":
			if l.Input.Input == nil || l.Agent == "" {
				return errors.New("a send needs agent and input")
			}
		case "ask":
			if l.Agent == "" {
				return errors.New("an ask needs an agent")
			}
		case "answer", "edit", "skip", "provide", "reject":
			if l.ID == "" {
				return fmt.Errorf("an %s needs the pending item's id", l.Op)
			}
		default:
			return fmt.Errorf("unknown op %q (want send, ask, answer, edit, skip, provide or reject)", l.Op)
		}
		c.inputs = append(c.inputs, l.Input)
	case kindModel:
		var l modelLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		if _, dup := calls[l.Call]; dup || l.Call <= 0 {
			return fmt.Errorf("call number %d is not new", l.Call)
		}
		cl := &call{line: l, tools: l.Tools}
		key := conversation(l.Model, l.Agent, l.Instance)
		if p := prev[key]; p != nil {
			if l.Same > len(p.msgs) {
				return fmt.Errorf("same: %d, but the call before for this conversation had %d messages", l.Same, len(p.msgs))
			}
			cl.msgs = append(cl.msgs, p.msgs[:l.Same]...)
			if l.Tools == nil {
				cl.tools = p.tools
			}
		} else if l.Same > 0 {
			return fmt.Errorf("same: %d, but it is the first call for model %q of agent %q instance %q", l.Same, l.Model, l.Agent, l.Instance)
		}
		cl.msgs = append(cl.msgs, l.Messages...)
		prev[key] = cl
		calls[l.Call] = cl
		c.calls = append(c.calls, cl)
	case kindChunk:
		var l chunkLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		cl := calls[l.Call]
		if cl == nil {
			return fmt.Errorf("chunk of call %d, which no model line before it opened", l.Call)
		}
		if _, ok := chunkKind(l.Kind); !ok {
			return fmt.Errorf("unknown chunk kind %q", l.Kind)
		}
		cl.chunks = append(cl.chunks, l)
	case kindTool:
		var l toolLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		c.tools = append(c.tools, l)
	case kindID:
		var l idLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		if l.Key == "" || l.ID == "" {
			return errors.New("an id needs a key and an id")
		}
		c.ids = append(c.ids, l)
	case kindClock:
		var l clockLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		for _, d := range l.NS {
			*at = at.Add(time.Duration(d))
			c.clock = append(c.clock, *at)
		}
	case kindEvent:
		var l eventLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		c.events = append(c.events, l)
	case kindMCP:
		var l mcpLine
		if err := strictUnmarshal(line, &l); err != nil {
			return err
		}
		if l.Server == "" || !json.Valid(l.Tools) {
			return errors.New("an MCP listing needs a server and its tools as JSON")
		}
		if c.mcp == nil {
			c.mcp = map[string]json.RawMessage{}
		}
		c.mcp[l.Server] = l.Tools
	case kindHeader:
		return errors.New("a second header")
	default:
		return fmt.Errorf("unknown kind %q (want input, model, chunk, tool, id, clock, event or mcp_tools)", kind)
	}
	return nil
}

// conversation keys the model calls whose messages follow on each other.
func conversation(label, agent, instance string) string {
	return label + "\x00" + agent + "\x00" + instance
}

func strictUnmarshal(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

var chunkKinds = map[string]model.ChunkKind{}

func init() {
	for k := model.KindText; k <= model.KindError; k++ {
		chunkKinds[k.String()] = k
	}
}

func chunkKind(name string) (model.ChunkKind, bool) {
	k, ok := chunkKinds[name]
	return k, ok
}

// Call is a tool call the model asked for in a recorded session.
type Call struct {
	Agent, Instance, TurnID string
	Step                    int
	pipeline.ToolCall
	// Category is the tool's category in the catalog the model was
	// offered; "" for a tool it was not offered.
	Category pipeline.ToolCategory
}

// Calls returns the tool calls the model asked for, in the order of the
// recording: what approval rules decided in the session, to try other
// rules on (ganglion rules test). The calls of an agent on the XML tool
// protocol are in its model's text, which the cassette holds as written:
// they are not listed.
func (c *Cassette) Calls() []Call {
	var out []Call
	for _, cl := range c.calls {
		if cl.line.Model != "" {
			continue // an extension's model: its calls are the extension's business
		}
		start := len(out)
		for _, ch := range cl.chunks {
			switch ch.Kind {
			case "tool_call_start":
				cat := pipeline.ToolCategory("")
				for _, t := range cl.tools {
					if t.Name == ch.ToolName {
						cat = t.Category
					}
				}
				out = append(out, Call{Agent: cl.line.Agent, Instance: cl.line.Instance, TurnID: cl.line.TurnID, Step: cl.line.Step,
					ToolCall: pipeline.ToolCall{ID: ch.ToolCallID, Name: ch.ToolName}, Category: cat})
			case "tool_call_delta":
				for i := start; i < len(out); i++ {
					if out[i].ID == ch.ToolCallID {
						out[i].Arguments = append(out[i].Arguments, ch.Arguments...)
					}
				}
			}
		}
	}
	return out
}

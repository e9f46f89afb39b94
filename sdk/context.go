package ganglion

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"
)

// Context is what every hook's context offers: [*Turn], [*Step],
// [*ToolCall] and [*Event] implement it. A context is valid only while its
// hook runs; afterwards the host refuses it ([ErrStale]).
//
// Context is sealed: only this package implements it.
type Context interface {
	// Agent returns the agent's name.
	Agent() string
	// Instance returns the key of the instance the hook runs for.
	Instance() string
	// State decodes the extension's state for the instance into v and
	// reports whether there was any.
	State(v any) (found bool, err error)
	// SetState stores v, encoded as JSON, as the extension's state for the
	// instance.
	SetState(v any) error
	// ClearState deletes the extension's state for the instance.
	ClearState() error
	// Secret returns the value of a secret provided to the instance.
	Secret(name string) (string, error)
	// ReadFile returns a file of the agent's workspace the manifest's
	// Files name (ABI version 2).
	ReadFile(path string) ([]byte, error)
	// ListFiles returns the entries of a directory of the workspace the
	// manifest's Files name.
	ListFiles(path string) ([]FileEntry, error)
	// WriteFile replaces a file of the workspace the manifest's
	// Files.Write name.
	WriteFile(path string, data []byte) error
	// AppendFile adds to a file of the workspace the manifest's
	// Files.Write name.
	AppendFile(path string, data []byte) error
	// HTTP sends a request to an origin the config grants.
	HTTP(req HTTPRequest) (HTTPResponse, error)

	handle() int32
}

// hook is the part every context shares: the handle the host passed.
type hook struct {
	h int32
}

func (c *hook) handle() int32 { return c.h }

// text reads a text field; a refusal panics (see the package doc's
// # Errors).
//
// It makes the host call itself rather than through field: in a Go guest
// each function call costs a prologue of its own, and a hook's reads are
// on the path of every call.
func (c *hook) text(field int32) string {
	var b []byte
	if n := host.field(c.h, field, buf); n >= 0 && int(n) <= len(buf) {
		b = buf[:n]
	} else {
		var err error
		if b, err = c.fieldAfter(field, n); err != nil {
			panic(err)
		}
	}
	if int(field) >= len(lastText) || len(b) > maxLastText {
		return string(b)
	}
	if last := lastText[field]; sameText(last, b) {
		return last
	}
	lastText[field] = cutString(b)
	return lastText[field]
}

// cutString returns b as a string cut from a shared chunk: an allocation
// in a Go guest costs about 300 ns (Go's allocator compiled to
// WebAssembly), a cut a copy (BENCHMARKS.md, "Strings cut from a chunk").
// A chunk's bytes are never written after they are cut, so the strings
// stay immutable. A string kept keeps its whole chunk alive (2 KiB), so
// only values up to 256 bytes are cut: a guest that keeps one of every
// few values holds at most a few times what it keeps.
func cutString(b []byte) string {
	n := len(b)
	if n == 0 {
		return ""
	}
	if n > maxCutString {
		return string(b)
	}
	if n > len(chunk) {
		chunk = make([]byte, strChunk)
	}
	s := chunk[:n:n]
	chunk = chunk[n:]
	copy(s, b)
	return unsafe.String(&s[0], n)
}

// chunk is the rest of the chunk cutString cuts from.
var chunk []byte

const (
	strChunk     = 2 << 10
	maxCutString = 256
)

// lastText is, by field, the last value text returned. A guest reads the
// same values again and again (a turn's input text at each of its steps,
// in each extension; a tool's name at each call), and allocating a string
// is a good part of a hook's cost in a Go guest: a value equal to the last
// one comes back as that same string. Strings are immutable, so sharing
// one is safe; one call runs at a time in a guest.
var lastText [fieldIdempotencyKey + 1]string

// sameText reports whether s and b hold the same bytes: s == string(b),
// eight bytes at a time. Go's own comparison compiles to WebAssembly as a
// loop over single bytes (and two calls), and text compares each value
// it reads with the last one.
func sameText(s string, b []byte) bool {
	n := len(b)
	if len(s) != n {
		return false
	}
	if n == 0 {
		return true
	}
	p, q := unsafe.Pointer(unsafe.StringData(s)), unsafe.Pointer(&b[0])
	i := 0
	for ; i+8 <= n; i += 8 {
		if *(*uint64)(unsafe.Add(p, i)) != *(*uint64)(unsafe.Add(q, i)) {
			return false
		}
	}
	for ; i < n; i++ {
		if s[i] != b[i] {
			return false
		}
	}
	return true
}

// maxLastText is the longest value lastText keeps, so that one long
// input is not kept alive by the cache.
const maxLastText = 4 << 10

// field reads a field into the shared buffer (see read). A value that
// fits takes one host call and no other: a Go guest pays for each call of
// its own, and a turn's fields are read at each of its steps.
func (c *hook) field(field int32) ([]byte, error) {
	n := host.field(c.h, field, buf)
	if n >= 0 && int(n) <= len(buf) {
		return buf[:n], nil
	}
	return c.fieldAfter(field, n)
}

// fieldAfter is field after a first call that answered n: a failure, or
// a value longer than the shared buffer.
func (c *hook) fieldAfter(field, n int32) ([]byte, error) {
	return readFrom(fieldOp(field), n, func(b []byte) int32 { return host.field(c.h, field, b) })
}

// raw reads a field as bytes of its own.
func (c *hook) raw(field int32) []byte {
	b, err := c.field(field)
	if err != nil {
		panic(err)
	}
	return append([]byte(nil), b...)
}

// decode reads a JSON field into v.
func (c *hook) decode(field int32, v any) error {
	b, err := c.field(field)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("ganglion: %s: %w", fieldOp(field), err)
	}
	return nil
}

// set writes a field.
func (c *hook) set(field int32, v []byte) error {
	if code := host.setField(c.h, field, v); code < 0 {
		return hostError("set_field "+fieldNames[field], code)
	}
	return nil
}

// setJSON writes v, encoded, to a field.
func (c *hook) setJSON(field int32, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ganglion: set_field %s: %w", fieldNames[field], err)
	}
	return c.set(field, b)
}

// fieldOp names a field read in its error ("field INPUT_TEXT"). The names
// are built once: every read passes its name, and a concatenation at each
// would be an allocation, a good part of a read's cost in a Go guest.
func fieldOp(field int32) string {
	if field > 0 && int(field) < len(fieldOps) {
		return fieldOps[field]
	}
	return "field " + strconv.Itoa(int(field))
}

var fieldOps = func() (ops [len(fieldNames)]string) {
	for i, name := range fieldNames {
		ops[i] = "field " + name
	}
	return ops
}()

// Agent returns the agent's name.
func (c *hook) Agent() string { return c.text(fieldAgent) }

// Instance returns the key of the instance the hook runs for.
func (c *hook) Instance() string { return c.text(fieldInstance) }

// State decodes the extension's JSON state for the instance into v and
// reports whether there was any. The manifest must declare State.
func (c *hook) State(v any) (found bool, err error) {
	b, err := read("state_get", func(b []byte) int32 { return host.stateGet(c.h, b) })
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("ganglion: state_get: %w", err)
	}
	return true, nil
}

// SetState stores v, encoded as JSON (at most 1 MiB), as the extension's
// state for the instance; the host persists it with the instance. The
// manifest must declare State.
func (c *hook) SetState(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ganglion: state_set: %w", err)
	}
	if code := host.stateSet(c.h, b); code < 0 {
		return hostError("state_set", code)
	}
	return nil
}

// ClearState deletes the extension's state for the instance.
func (c *hook) ClearState() error {
	if code := host.stateSet(c.h, nil); code < 0 {
		return hostError("state_set", code)
	}
	return nil
}

// Secret returns the value of the secret name provided to the instance
// (an API key a human gave a paused turn). The manifest must list the name
// and the agent's config grant it; a secret not provided is [ErrNotFound].
// Do not log, publish or store the value.
func (c *hook) Secret(name string) (string, error) {
	return readString("secret", func(b []byte) int32 { return host.secret(c.h, name, b) })
}

// conversation is the message access of turn and step contexts.
type conversation struct{ hook }

// Messages returns the number of messages in the conversation.
func (c *conversation) Messages() int {
	n := host.messagesLen(c.h)
	if n < 0 {
		panic(hostError("messages_len", n))
	}
	return int(n)
}

// Message returns message i of the conversation, oldest first; a negative
// i counts from the end (-1 is the last). An index out of range is
// [ErrNotFound].
func (c *conversation) Message(i int) (Message, error) {
	var m Message
	if i != int(int32(i)) {
		return m, &Error{Op: "message", Code: CodeNotFound, Message: "message " + strconv.Itoa(i) + " is out of range"}
	}
	b, err := read("message", func(b []byte) int32 { return host.message(c.h, int32(i), b) })
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("ganglion: message %d: %w", i, err)
	}
	return m, nil
}

// Emit appends, replaces or removes a message of the conversation. A
// message the guest appends without a Source is the extension's.
func (c *conversation) Emit(ev MessageEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("ganglion: emit: %w", err)
	}
	if code := host.emit(c.h, b); code < 0 {
		return hostError("emit", code)
	}
	return nil
}

// TurnID returns the turn's ID ("turn-7").
func (c *conversation) TurnID() string { return c.text(fieldTurnID) }

// Input returns the event the turn handles.
func (c *conversation) Input() InputEvent {
	var in InputEvent
	if err := c.decode(fieldInput, &in); err != nil {
		panic(err)
	}
	return in
}

// InputText returns the text of the turn's input.
func (c *conversation) InputText() string { return c.inboxText(slotInputText, fieldInputText) }

// The inbox (sdk/ABI.md, "inbox") is where the host keeps the handle of
// the hook whose code runs and the generations of its input text and tool
// name: two calls given the same generation have the same value. A Go
// guest's field read is a round trip through the sandbox, about 120 ns,
// and a turn's hooks read the same input text at every step; with the
// inbox, a value read once is had again for a comparison. The host
// writes it whenever what it says may change (a hook starts, its next
// returns, it sets its input), so it holds for the context whose handle it
// names; a context of another hook, an outer one or one kept past its
// call, reads through the host.
//
// The SDK registers the inbox at the first read it serves, so that a guest
// that reads neither field does not have the host write it at each hook.
// A host that refuses it leaves it 0: every read then goes to the host, as
// it would without one.
var (
	inbox   [3]uint64 // handle, INPUT_TEXT's generation, TOOL_NAME's
	inboxOn bool      // registered (or refused)
	inboxed [2]struct {
		gen  uint64
		text string
	}
)

// Inbox slots: a generation's index in inbox, less one.
const (
	slotInputText = 0
	slotToolName  = 1
)

// inboxText reads text field field, whose generation is in inbox slot
// slot: the value kept for its generation, or else from the host.
func (c *hook) inboxText(slot int, field int32) string {
	if !inboxOn {
		inboxOn = true
		host.inbox(&inbox)
	}
	g := inbox[1+slot]
	if g == 0 || inbox[0] != uint64(uint32(c.h)) {
		return c.text(field) // no generation, or not for this context
	}
	if g == inboxed[slot].gen {
		return inboxed[slot].text
	}
	// A field read does not write the inbox: g is still this value's.
	s := c.text(field)
	inboxed[slot].gen, inboxed[slot].text = g, s
	return s
}

// nextFailures holds the failure of Next, by the hook's handle, for each
// running hook whose Next failed, until the hook returns (settle, or the
// export's recovery when it panics). Hooks nest, and a handle names one
// running call, so a hook finds its own entry whatever ran within it. It
// lives here, not in the contexts, so that a context is its handle alone
// (4 bytes): contexts come one per call from slabs (see api.go), and slabs
// of small values without pointers are what the guest's allocator and
// collector handle cheapest (BENCHMARKS.md, "A hook's context is its
// handle").
var nextFailures map[int32]error

// callNext is Next of the turn, step or toolCall hook h.
func callNext(h int32) error {
	if code := host.next(h); code < 0 {
		err := hostError("next", code)
		if code == int32(CodeFailed) {
			if nextFailures == nil {
				nextFailures = make(map[int32]error)
			}
			nextFailures[h] = err
		}
		return err
	}
	return nil
}

// result is the result code of hook h, which returned err; small enough
// to be inlined, so that a hook that succeeds makes no call.
func result(h int32, err error) int32 {
	if err == nil && len(nextFailures) == 0 {
		return 0
	}
	return settle(h, err)
}

// settle is result's slow path: it drops h's failure of Next, if any. It
// returns 0 for a hook that returned nil, or that handed back the failure
// of its Next (err is or wraps it): the host then passes the chain's own
// error on, unchanged and not blamed on the extension. Else 1.
func settle(h int32, err error) int32 {
	nextErr, failed := nextFailures[h]
	if failed {
		delete(nextFailures, h)
	}
	if err == nil || failed && errors.Is(err, nextErr) {
		return 0
	}
	return hookFailed(err)
}

// Turn is the context of one turn, given to turn middleware.
type Turn struct {
	conversation
}

// SetInput changes the event that the rest of the chain sees.
func (t *Turn) SetInput(in InputEvent) error { return t.setJSON(fieldInput, in) }

// Next runs the rest of the chain: the inner middleware, then the model
// and the tools. It may be called once. When the rest fails, Next returns
// an error matching [ErrFailed]: return it (or wrap it with %w) to pass the
// failure on as it is, or set a result of your own.
func (t *Turn) Next() error { return callNext(t.h) }

// Result returns the turn's result: the one set with SetResult, else the
// one Next returned. Before either it is [ErrNotFound].
func (t *Turn) Result() (TurnResult, error) {
	var r TurnResult
	err := t.decode(fieldResult, &r)
	return r, err
}

// SetResult makes r the turn's result, with or without Next: a middleware
// that answers by itself (a guardrail) sets a result and does not call Next.
//
// The history keeps what the user saw. Without Next, the turn's input and
// r's response are stored, the response as this extension's message
// (unless the middleware wrote the history itself with EmitMessage). After
// Next, a response with another text than the model's replaces the model's
// final message with it, as this extension's: the model's next turn reads
// what the user read.
func (t *Turn) SetResult(r TurnResult) error { return t.setJSON(fieldResult, r) }

// Step is the context of one step (one model call and the tool calls it
// asks for), given to step middleware.
type Step struct {
	conversation
}

// Index returns the step's number within its turn, from 1.
func (s *Step) Index() int {
	n, err := strconv.Atoi(s.text(fieldStep))
	if err != nil {
		panic(&Error{Op: "field STEP", Code: CodeInvalid, Message: err.Error()})
	}
	return n
}

// Tools returns the names of the tools offered to the model in this step.
func (s *Step) Tools() []string {
	var names []string
	if err := s.decode(fieldTools, &names); err != nil {
		panic(err)
	}
	return names
}

// SetTools keeps, of the step's tools, only those named.
func (s *Step) SetTools(names []string) error {
	if names == nil {
		names = []string{}
	}
	return s.setJSON(fieldTools, names)
}

// Next runs the rest of the chain: the inner middleware, then the model
// call and the tool calls. See [Turn.Next].
func (s *Step) Next() error { return callNext(s.h) }

// Result returns the step's stop and continue flags after Next.
func (s *Step) Result() (StepResult, error) {
	var r StepResult
	err := s.decode(fieldResult, &r)
	return r, err
}

// SetResult changes the step's stop and continue flags; only after Next.
func (s *Step) SetResult(r StepResult) error { return s.setJSON(fieldResult, r) }

// ToolCall is the context of one tool call: given to toolCall middleware,
// and to a tool the extension registered. Next, SetArgs and Result are for
// middleware.
type ToolCall struct {
	hook
}

// TurnID returns the ID of the turn.
func (c *ToolCall) TurnID() string { return c.text(fieldTurnID) }

// Step returns the number of the step within the turn.
func (c *ToolCall) Step() int {
	n, err := strconv.Atoi(c.text(fieldStep))
	if err != nil {
		panic(&Error{Op: "field STEP", Code: CodeInvalid, Message: err.Error()})
	}
	return n
}

// Name returns the called tool's name.
func (c *ToolCall) Name() string { return c.inboxText(slotToolName, fieldToolName) }

// CallID returns the provider's ID of the call.
func (c *ToolCall) CallID() string { return c.text(fieldCallID) }

// IdempotencyKey returns the call's stable key: the same for every run of
// the call (an approved call resumed later, a call the runtime was
// interrupted in), different for every other call. A tool whose effect must
// not happen twice records it with the effect and skips a key it has seen.
func (c *ToolCall) IdempotencyKey() string { return c.text(fieldIdempotencyKey) }

// Args returns the arguments as the model wrote them: JSON, possibly
// malformed in a middleware (a tool runs only with arguments that match its
// schema).
func (c *ToolCall) Args() json.RawMessage { return c.raw(fieldToolArgs) }

// SetArgs changes the arguments the rest of the chain and the tool see;
// they must be valid JSON.
func (c *ToolCall) SetArgs(args json.RawMessage) error { return c.set(fieldToolArgs, args) }

// Next runs the rest of the chain and, in the end, the tool. See
// [Turn.Next].
func (c *ToolCall) Next() error { return callNext(c.h) }

// Result returns the call's result: the one set with SetResult, else the
// one Next returned.
func (c *ToolCall) Result() (ToolResult, error) {
	var r ToolResult
	err := c.decode(fieldResult, &r)
	return r, err
}

// SetResult makes r the call's result, with or without Next.
func (c *ToolCall) SetResult(r ToolResult) error { return c.setJSON(fieldResult, r) }

// Event is the context of one event delivered to a subscription.
type Event struct {
	hook
}

// Topic returns the event's topic.
func (e *Event) Topic() string { return e.text(fieldEventTopic) }

// Data returns the event's data, JSON.
func (e *Event) Data() json.RawMessage { return e.raw(fieldEventData) }

var (
	_ Context = (*Turn)(nil)
	_ Context = (*Step)(nil)
	_ Context = (*ToolCall)(nil)
	_ Context = (*Event)(nil)
)

// Agents calls other agents from a turn or step hook
// (ctx.agents): the calling agent's model never sees the call. The host
// routes them through the runtime's orchestrator. The target must be
// listed in the manifest's Agents and granted by the config.
type Agents struct{ h int32 }

// AgentOptions tune an agent call.
type AgentOptions struct {
	// Instance is the callee's instance key; empty: the callee's instance
	// for this caller.
	Instance string
	// Timeout bounds a Request; zero: the host's default (15 s).
	Timeout time.Duration
	// Metadata is added to the call's input metadata, beside the caller's
	// (callerAgent, callerInstanceKey, callerTurnId, callSource); it must
	// encode as JSON.
	Metadata map[string]any
}

// AgentReply is the answer of a [Agents.Request].
type AgentReply struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
}

type agentRequest struct {
	Agent     string         `json:"agent"`
	Instance  string         `json:"instance,omitempty"`
	Text      string         `json:"text"`
	TimeoutMS int64          `json:"timeout_ms,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

func (a *Agents) request(agent, text string, o AgentOptions) ([]byte, error) {
	return json.Marshal(agentRequest{Agent: agent, Instance: o.Instance, Text: text, TimeoutMS: o.Timeout.Milliseconds(), Metadata: o.Metadata})
}

// Request asks agent and waits for its answer.
func (a *Agents) Request(agent, text string, o AgentOptions) (AgentReply, error) {
	req, err := a.request(agent, text, o)
	if err != nil {
		return AgentReply{}, err
	}
	b, err := read("agents_request", func(b []byte) int32 { return host.agentsRequest(a.h, req, b) })
	if err != nil {
		return AgentReply{}, err
	}
	var r AgentReply
	if err := json.Unmarshal(b, &r); err != nil {
		return AgentReply{}, fmt.Errorf("ganglion: agents_request: %w", err)
	}
	return r, nil
}

// Send sends text to agent without waiting for an answer.
func (a *Agents) Send(agent, text string, o AgentOptions) error {
	req, err := a.request(agent, text, o)
	if err != nil {
		return err
	}
	if code := host.agentsSend(a.h, req); code < 0 {
		return hostError("agents_send", code)
	}
	return nil
}

// Agents calls other agents; see [Agents].
func (t *Turn) Agents() *Agents { return &Agents{t.h} }

// Agents calls other agents; see [Agents].
func (s *Step) Agents() *Agents { return &Agents{s.h} }

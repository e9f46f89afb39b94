package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ganglion-dev/ganglion/internal/turnhost"
)

func init() {
	turnhost.Get = hostOf
	turnhost.Set = setHost
}

// hostOf is turnhost.Get.
func hostOf(c any) any {
	switch c := c.(type) {
	case *TurnContext:
		return c.host
	case *StepContext:
		return c.turn.host
	case *ToolCallContext:
		return c.host
	}
	return nil
}

// setHost is turnhost.Set.
func setHost(c, v any) {
	switch c := c.(type) {
	case *TurnContext:
		c.host = v
	case *ToolCallContext:
		c.host = v
	default:
		panic(fmt.Sprintf("turnhost.Set: %T holds no turn state", c))
	}
}

// FinishReason says how a turn ended.
type FinishReason string

// The finish reasons of a turn.
const (
	// FinishText: the model answered in text.
	FinishText FinishReason = "text_response"
	// FinishMaxSteps: the turn used the agent's max_steps without a text answer.
	FinishMaxSteps FinishReason = "max_steps"
	// FinishPaused: the turn waits for a human; a pending item records what for.
	FinishPaused FinishReason = "paused"
	// FinishDelegated: the turn delegated work to other agents and waits
	// for their reports; its task's final answer goes to the requester's
	// channel when they are in (TurnResult.TaskID names the task).
	FinishDelegated FinishReason = "delegated"
	// FinishError: the turn failed; the error says why.
	FinishError FinishReason = "error"
	// FinishAborted: the caller cancelled the turn.
	FinishAborted FinishReason = "aborted"
)

// TurnResult is the outcome of a turn.
type TurnResult struct {
	TurnID       string       `json:"turn_id"`
	FinishReason FinishReason `json:"finish_reason"`
	// Response is the agent's final message (the last assistant message).
	Response Message `json:"response"`
	// Steps is the number of steps the turn ran.
	Steps int `json:"steps"`
	// Usage sums the model usage of the turn's steps.
	Usage Usage `json:"usage"`
	// TaskID is the delegation task the turn works on, if any.
	TaskID string `json:"task_id,omitempty"`
	// AnsweredBy is the extension whose turn middleware made this result:
	// it answered without calling Next, or returned another result than
	// Next's, or Next's with another Response.Content (the outermost such
	// layer). Empty when the result is the turn's own (the model's
	// answer). The pipeline sets it; the runtime stores the answer in the
	// history as that extension's.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// StepResult is the outcome of a step: the model's message and the results of
// the tool calls it asked for.
type StepResult struct {
	// Message is the assistant message of the step.
	Message Message
	// ToolResults answer Message.ToolCalls, in the same order.
	ToolResults []ToolResult
	Usage       Usage
	// Stop, when set, ends the turn after this step with that finish reason,
	// even if the model asked for tools. A step middleware may set it.
	Stop FinishReason
	// Continue, when set, runs another step even though the model answered
	// in text: a middleware that added a message for the model to read (a
	// correction, a reminder) sets it. The turn's max_steps still bounds the
	// loop. Stop wins over Continue.
	Continue bool
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// TurnFunc is a turn middleware, and also the innermost turn handler. A
// middleware acts before and after [TurnContext.Next], may change what Next
// sees (the input, the conversation), or return without calling it.
type TurnFunc func(ctx context.Context, t *TurnContext) (*TurnResult, error)

// StepFunc is a step middleware, and also the innermost step handler.
type StepFunc func(ctx context.Context, s *StepContext) (*StepResult, error)

// ToolCallFunc is a toolCall middleware. Its innermost handler is the tool's [ToolFunc].
type ToolCallFunc = ToolFunc

// TurnInfo is what a runtime knows when it starts a turn.
type TurnInfo struct {
	Agent        string
	InstanceKey  string
	TurnID       string
	Input        InputEvent
	Conversation Conversation
	// Agents calls other agents (see [TurnContext.Agents]); nil: none.
	Agents Agents
	// Window is the turn's context window (see [StepContext.Window]) and
	// Models calls models for middleware (see [TurnContext.Models]); nil:
	// none.
	Window Window
	Models Models
}

// TurnContext is the context of one turn, given to turn middleware.
//
// A TurnContext is used by one goroutine at a time: the turn's own.
type TurnContext struct {
	info TurnInfo
	host any // the runtime's state for the turn (internal/turnhost)
	p    *Pipeline
	cur  cursor[*TurnResult]
}

// NewTurnContext returns a context for a turn described by info.
func NewTurnContext(info TurnInfo) *TurnContext {
	t := new(TurnContext)
	t.Reset(info)
	return t
}

// Reset makes t the context of the turn described by info, so that a
// runtime can embed contexts in its own per-turn state instead of
// allocating them. It must not be called while t's chain runs.
func (t *TurnContext) Reset(info TurnInfo) {
	*t = TurnContext{info: info, cur: cursor[*TurnResult]{depth: -1, more: t.cur.more[:0], skips: t.cur.skips}}
}

// Agent returns the agent's name.
func (t *TurnContext) Agent() string { return t.info.Agent }

// InstanceKey returns the key of the instance the turn runs in.
func (t *TurnContext) InstanceKey() string { return t.info.InstanceKey }

// TurnID returns the turn's ID, unique within the instance.
func (t *TurnContext) TurnID() string { return t.info.TurnID }

// Input returns the event the turn handles.
func (t *TurnContext) Input() InputEvent { return t.info.Input }

// SetInput changes the event that the rest of the chain sees. The
// runtime stores the input as the chain leaves it; the input's reserved
// metadata ([CheckMetadata]) stays as it came, but [MetaPinned]: a reserved
// key set or changed fails the turn, one left out is kept.
func (t *TurnContext) SetInput(in InputEvent) { t.info.Input = in }

// Conversation returns the instance's history.
func (t *TurnContext) Conversation() Conversation { return t.info.Conversation }

// EmitMessage changes the conversation. A message may be pinned
// ([MetaPinned]) but hold no other reserved metadata ([CheckMetadata]);
// a replacement keeps the reserved metadata of the message it replaces.
func (t *TurnContext) EmitMessage(ev MessageEvent) error { return t.info.Conversation.Apply(ev) }

// Next runs the rest of the chain and returns its outcome. A middleware calls
// it at most once; a second call returns an error wrapping [ErrNextCalledTwice]
// and runs nothing.
func (t *TurnContext) Next(ctx context.Context) (*TurnResult, error) {
	if t.p == nil {
		return nil, errNextOutsideChain
	}
	return t.p.turn.next(ctx, t, &t.cur)
}

// StepContext is the context of one step (one model call and the tool calls
// it asks for), given to step middleware.
//
// A StepContext is used by one goroutine at a time: the turn's own.
type StepContext struct {
	turn     *TurnContext
	index    int
	catalog  ToolCatalog
	watchers []func(delta string)
	onReply  []func(ctx context.Context, m *Message) error
	p        *Pipeline
	cur      cursor[*StepResult]
}

// NewStepContext returns the context of step index (1-based) of turn t,
// offering tools. The runtime may reuse it for the next step with [StepContext.Reset].
func NewStepContext(t *TurnContext, index int, tools []Tool) *StepContext {
	s := new(StepContext)
	s.Init(t, index, tools)
	return s
}

// Init makes s the context of step index of turn t; see [TurnContext.Reset].
func (s *StepContext) Init(t *TurnContext, index int, tools []Tool) {
	*s = StepContext{turn: t, watchers: s.watchers[:0], onReply: s.onReply[:0], cur: cursor[*StepResult]{depth: -1, more: s.cur.more[:0], skips: s.cur.skips}}
	s.Reset(index, tools)
}

// Reset makes s the context of step index, offering tools.
func (s *StepContext) Reset(index int, tools []Tool) {
	s.index = index
	s.catalog.reset(tools)
	clear(s.watchers)
	s.watchers = s.watchers[:0]
	clear(s.onReply)
	s.onReply = s.onReply[:0]
}

// WatchText calls fn with each piece of the model's text as it streams in
// this step, in order, before [StepContext.Next] returns: a middleware
// that reads the output while it streams (a protocol parser) registers it
// before calling Next. The pieces are cut wherever the provider cut them,
// even inside a UTF-8 sequence. fn runs on the turn's goroutine and must
// not block.
func (s *StepContext) WatchText(fn func(delta string)) {
	s.watchers = append(s.watchers, fn)
}

// PublishText hands delta to the functions registered with
// [StepContext.WatchText]. The runtime calls it for every text chunk of
// the model's stream; middleware has no use for it.
func (s *StepContext) PublishText(delta string) {
	for _, fn := range s.watchers {
		fn(delta)
	}
}

// WatchReply calls fn once the model's reply of this step is complete,
// before [StepContext.Next] returns: after the reply joined the
// conversation, but before it is stored and before any tool it asks for
// runs. What fn stores through the Extension API (a pending item that a
// question in the reply opens) is so committed together with the reply, and
// a crash cannot keep one without the other. m is the message as the
// conversation holds it, shared: fn must not change it. An error
// from fn fails the step, as an error of the middleware would, and no tool
// runs. fn is not called when a middleware inside answers the step itself.
func (s *StepContext) WatchReply(fn func(ctx context.Context, m *Message) error) {
	s.onReply = append(s.onReply, fn)
}

// PublishReply calls the functions registered with [StepContext.WatchReply]
// in order, and returns the first error. The runtime calls it once per
// step; middleware has no use for it.
func (s *StepContext) PublishReply(ctx context.Context, m *Message) error {
	for _, fn := range s.onReply {
		if err := fn(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Watching reports whether any function watches the step's text.
func (s *StepContext) Watching() bool { return len(s.watchers) > 0 }

// Index returns the step's number within its turn, from 1.
func (s *StepContext) Index() int { return s.index }

// Tools returns the tool catalog of this step, which a middleware may change.
func (s *StepContext) Tools() *ToolCatalog { return &s.catalog }

// Agent returns the agent's name.
func (s *StepContext) Agent() string { return s.turn.info.Agent }

// InstanceKey returns the key of the instance.
func (s *StepContext) InstanceKey() string { return s.turn.info.InstanceKey }

// TurnID returns the ID of the turn the step belongs to.
func (s *StepContext) TurnID() string { return s.turn.info.TurnID }

// Input returns the event the turn handles.
func (s *StepContext) Input() InputEvent { return s.turn.info.Input }

// Conversation returns the instance's history.
func (s *StepContext) Conversation() Conversation { return s.turn.info.Conversation }

// EmitMessage changes the conversation before the model sees it.
func (s *StepContext) EmitMessage(ev MessageEvent) error { return s.turn.info.Conversation.Apply(ev) }

// Next runs the rest of the chain: in the end, the model call and the tool calls.
func (s *StepContext) Next(ctx context.Context) (*StepResult, error) {
	if s.p == nil {
		return nil, errNextOutsideChain
	}
	return s.p.step.next(ctx, s, &s.cur)
}

// ToolCallInfo describes one tool call for a [ToolCallContext].
type ToolCallInfo struct {
	Agent       string
	InstanceKey string
	TurnID      string
	Step        int
	Call        ToolCall
	// Tool is the tool the call names, if the step's catalog offers it.
	Tool  Tool
	Found bool
	// Input is the event that started the turn.
	Input InputEvent
	// MessageID is the ID of the stored message whose tool calls hold this
	// one; with the agent, the instance and the call's ID it names the call
	// for good (see [ToolCallContext.IdempotencyKey]).
	MessageID string
}

// ToolCallContext is the context of one tool call, given to toolCall
// middleware and to the tool itself. It offers no way to call other agents:
// that belongs on turn and step contexts.
//
// A ToolCallContext is used by one goroutine at a time. Tool calls of one step
// may run concurrently, each with its own context.
type ToolCallContext struct {
	info ToolCallInfo
	host any // the runtime's state for the turn (internal/turnhost)
	p    *Pipeline
	cur  cursor[*ToolResult]
}

// NewToolCallContext returns the context of the call described by info.
func NewToolCallContext(info ToolCallInfo) *ToolCallContext {
	c := new(ToolCallContext)
	c.Reset(info)
	return c
}

// Reset makes c the context of the call described by info; see [TurnContext.Reset].
func (c *ToolCallContext) Reset(info ToolCallInfo) {
	*c = ToolCallContext{info: info, cur: cursor[*ToolResult]{depth: -1, more: c.cur.more[:0], skips: c.cur.skips}}
}

// Agent returns the agent's name.
func (c *ToolCallContext) Agent() string { return c.info.Agent }

// InstanceKey returns the key of the instance.
func (c *ToolCallContext) InstanceKey() string { return c.info.InstanceKey }

// TurnID returns the ID of the turn.
func (c *ToolCallContext) TurnID() string { return c.info.TurnID }

// Step returns the number of the step within the turn.
func (c *ToolCallContext) Step() int { return c.info.Step }

// Input returns the event that started the turn: who started it (a user,
// another agent and its call chain, a resume), not something to change.
func (c *ToolCallContext) Input() InputEvent { return c.info.Input }

// IdempotencyKey returns a key that names this tool call for good: the same
// for every run of the call (a call resumed after an approval, or one asked
// again after a restart) and different for any other call, even one a
// provider gave the same ID. A tool whose effect must not happen twice
// records the key with the effect and skips a key it has seen; the runtime
// never re-runs a call on its own, but an agent or a human may ask again.
// The key is "gk-" and 32 hex digits; execute_command receives it as the
// environment variable GANGLION_IDEMPOTENCY_KEY.
func (c *ToolCallContext) IdempotencyKey() string {
	return IdempotencyKey(c.info.Agent, c.info.InstanceKey, c.info.MessageID, c.info.Call.ID)
}

// IdempotencyKey is the key [ToolCallContext.IdempotencyKey] returns for
// call callID of the stored message messageID of agent's instance key.
func IdempotencyKey(agent, instanceKey, messageID, callID string) string {
	h := sha256.New()
	for _, part := range [...]string{agent, instanceKey, messageID, callID} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	return "gk-" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// CallID returns the provider's ID of the call.
func (c *ToolCallContext) CallID() string { return c.info.Call.ID }

// Name returns the tool's name.
func (c *ToolCallContext) Name() string { return c.info.Call.Name }

// Arguments returns the arguments as the model wrote them (JSON, possibly malformed).
func (c *ToolCallContext) Arguments() json.RawMessage { return c.info.Call.Arguments }

// SetArguments changes the arguments that the rest of the chain and the tool see.
func (c *ToolCallContext) SetArguments(args json.RawMessage) { c.info.Call.Arguments = args }

// Tool returns the tool the call names, and whether the step offers it.
func (c *ToolCallContext) Tool() (Tool, bool) { return c.info.Tool, c.info.Found }

// Next runs the rest of the chain and, in the end, the tool. A middleware
// replaces the result by returning another one.
func (c *ToolCallContext) Next(ctx context.Context) (*ToolResult, error) {
	if c.p == nil {
		return nil, errNextOutsideChain
	}
	return c.p.tool.next(ctx, c, &c.cur)
}

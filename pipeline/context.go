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

// The finish reasons of a turn: a text answer, max_steps spent, paused for
// a human, delegated (waiting for reports on [TurnResult].TaskID), an
// error, aborted by the caller.
const (
	FinishText      FinishReason = "text_response"
	FinishMaxSteps  FinishReason = "max_steps"
	FinishPaused    FinishReason = "paused"
	FinishDelegated FinishReason = "delegated"
	FinishError     FinishReason = "error"
	FinishAborted   FinishReason = "aborted"
)

// TurnResult is the outcome of a turn; Response is its last assistant
// message.
type TurnResult struct {
	TurnID       string       `json:"turn_id"`
	FinishReason FinishReason `json:"finish_reason"`
	Response     Message      `json:"response"`
	Steps        int          `json:"steps"`
	Usage        Usage        `json:"usage"`
	TaskID       string       `json:"task_id,omitempty"`
	// AnsweredBy is the outermost extension whose turn middleware made the
	// result instead of Next; the history stores the answer as its.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// StepResult is the outcome of a step. A step middleware may set Stop, to
// end the turn, or Continue, to run another step after a text answer (Stop
// wins).
type StepResult struct {
	Message     Message
	ToolResults []ToolResult
	Usage       Usage
	Stop        FinishReason
	Continue    bool
}

// ToolResult is the outcome of one tool call.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// TurnFunc is a turn middleware and the innermost turn handler: it acts
// before and after [TurnContext.Next], or answers without calling it.
type TurnFunc func(ctx context.Context, t *TurnContext) (*TurnResult, error)

// StepFunc is a step middleware, and also the innermost step handler.
type StepFunc func(ctx context.Context, s *StepContext) (*StepResult, error)

// ToolCallFunc is a toolCall middleware. Its innermost handler is the tool's [ToolFunc].
type ToolCallFunc = ToolFunc

// TurnInfo is what a runtime knows when it starts a turn; nil Agents, Window
// or Models offer none.
type TurnInfo struct {
	Agent        string
	InstanceKey  string
	TurnID       string
	Input        InputEvent
	Conversation Conversation
	Agents       Agents
	Window       Window
	Models       Models
}

// TurnContext is the context of one turn, used by the turn's goroutine.
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

// Reset reuses t for the turn info describes, not while its chain runs.
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

// SetInput changes the input the rest of the chain sees and the runtime
// stores; setting or changing a reserved metadata key ([CheckMetadata]) but
// [MetaPinned] fails the turn.
func (t *TurnContext) SetInput(in InputEvent) { t.info.Input = in }

// Conversation returns the instance's history.
func (t *TurnContext) Conversation() Conversation { return t.info.Conversation }

// EmitMessage changes the conversation; see [Conversation].Apply.
func (t *TurnContext) EmitMessage(ev MessageEvent) error { return t.info.Conversation.Apply(ev) }

// Next runs the rest of the chain; a second call runs nothing and fails with
// [ErrNextCalledTwice].
func (t *TurnContext) Next(ctx context.Context) (*TurnResult, error) {
	if t.p == nil {
		return nil, errNextOutsideChain
	}
	return t.p.turn.next(ctx, t, &t.cur)
}

// StepContext is the context of one step, used by the turn's goroutine.
type StepContext struct {
	turn     *TurnContext
	index    int
	catalog  ToolCatalog
	watchers []func(delta string)
	onReply  []func(ctx context.Context, m *Message) error
	p        *Pipeline
	cur      cursor[*StepResult]
}

// NewStepContext returns the context of step index (from 1) of t.
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

// Reset makes s the context of step index.
func (s *StepContext) Reset(index int, tools []Tool) {
	s.index = index
	s.catalog.reset(tools)
	clear(s.watchers)
	s.watchers = s.watchers[:0]
	clear(s.onReply)
	s.onReply = s.onReply[:0]
}

// WatchText calls fn with each piece of the model's text as it streams (cut
// anywhere, even in a UTF-8 sequence), on the turn's goroutine: fn must not
// block. Call it before Next.
func (s *StepContext) WatchText(fn func(delta string)) {
	s.watchers = append(s.watchers, fn)
}

// PublishText hands delta to the watchers; the runtime calls it.
func (s *StepContext) PublishText(delta string) {
	for _, fn := range s.watchers {
		fn(delta)
	}
}

// WatchReply calls fn with the step's reply before Next returns, before it
// is stored or a tool runs; fn must not change m, and its error fails the step.
func (s *StepContext) WatchReply(fn func(ctx context.Context, m *Message) error) {
	s.onReply = append(s.onReply, fn)
}

// PublishReply calls the WatchReply functions; the runtime calls it.
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

// Tools returns the step's tool catalog, which a middleware may change.
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

// Next runs the rest of the chain, in the end the model and the tools.
func (s *StepContext) Next(ctx context.Context) (*StepResult, error) {
	if s.p == nil {
		return nil, errNextOutsideChain
	}
	return s.p.step.next(ctx, s, &s.cur)
}

// ToolCallInfo describes one tool call; MessageID is the stored message
// holding it.
type ToolCallInfo struct {
	Agent       string
	InstanceKey string
	TurnID      string
	Step        int
	Call        ToolCall
	Tool        Tool
	Found       bool
	Input       InputEvent
	MessageID   string
}

// ToolCallContext is the context of one tool call, for toolCall middleware
// and the tool, used by one goroutine (a step's calls may run at once).
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

// Reset reuses c for the call info describes.
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

// Input returns the event that started the turn.
func (c *ToolCallContext) Input() InputEvent { return c.info.Input }

// IdempotencyKey names this call for good, the same on every run of it
// (resumed, asked again): a tool whose effect must not happen twice records
// it and skips a key it has seen. Commands get it as GANGLION_IDEMPOTENCY_KEY.
func (c *ToolCallContext) IdempotencyKey() string {
	return IdempotencyKey(c.info.Agent, c.info.InstanceKey, c.info.MessageID, c.info.Call.ID)
}

// IdempotencyKey is [ToolCallContext.IdempotencyKey] for a call.
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

// Arguments returns the model's arguments (JSON, possibly malformed).
func (c *ToolCallContext) Arguments() json.RawMessage { return c.info.Call.Arguments }

// SetArguments changes the arguments the rest of the chain sees.
func (c *ToolCallContext) SetArguments(args json.RawMessage) { c.info.Call.Arguments = args }

// Tool returns the tool the call names, and whether the step offers it.
func (c *ToolCallContext) Tool() (Tool, bool) { return c.info.Tool, c.info.Found }

// Next runs the rest of the chain and the tool.
func (c *ToolCallContext) Next(ctx context.Context) (*ToolResult, error) {
	if c.p == nil {
		return nil, errNextOutsideChain
	}
	return c.p.tool.next(ctx, c, &c.cur)
}

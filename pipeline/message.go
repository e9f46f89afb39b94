package pipeline

import (
	"encoding/json"
	"fmt"
	"time"
)

// Role is the author of a [Message] as a model provider sees it.
type Role string

// The roles a conversation holds.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// SourceType says what produced a [Message].
type SourceType string

// The producers of messages.
const (
	SourceUser      SourceType = "user"
	SourceModel     SourceType = "model"
	SourceTool      SourceType = "tool"
	SourceExtension SourceType = "extension"
	SourceAgent     SourceType = "agent"
	SourceRuntime   SourceType = "runtime"
)

// Source records what produced a message; Extension names the extension when
// Type is [SourceExtension], Agent names the calling agent when Type is [SourceAgent].
type Source struct {
	Type      SourceType `json:"type"`
	Extension string     `json:"extension,omitempty"`
	Agent     string     `json:"agent,omitempty"`
}

// ToolCall is one tool invocation that an assistant message asks for.
type ToolCall struct {
	// ID is the provider's call ID; a tool result message answers it in ToolCallID.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON object the model produced, verbatim. It may be
	// malformed JSON: the runtime reports that back to the model as a tool error.
	// In JSON it is a string holding those bytes, as providers send it.
	Arguments json.RawMessage `json:"arguments"`
}

// toolCallWire is a ToolCall as JSON: the arguments as a string, so that
// malformed arguments can be stored and every byte comes back as it was.
type toolCallWire struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MarshalJSON encodes c with its arguments as a JSON string.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(toolCallWire{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
}

// UnmarshalJSON decodes what MarshalJSON encodes; it also accepts arguments
// given as a JSON object.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.ID, c.Name, c.Arguments = w.ID, w.Name, nil
	switch {
	case len(w.Arguments) == 0 || string(w.Arguments) == "null":
	case w.Arguments[0] == '"':
		var s string
		if err := json.Unmarshal(w.Arguments, &s); err != nil {
			return fmt.Errorf("tool call %q: arguments: %w", w.ID, err)
		}
		c.Arguments = json.RawMessage(s)
	default:
		c.Arguments = w.Arguments
	}
	return nil
}

// Message is one entry of a conversation.
//
// A Message is a value: the runtime hands out copies, and changing one changes
// nothing stored. To change the conversation, emit a [MessageEvent].
type Message struct {
	// ID is unique within its instance's conversation.
	ID   string `json:"id"`
	Role Role   `json:"role"`
	// Content is the text of the message (for a tool message, the tool's result).
	Content string `json:"content,omitempty"`
	// Reasoning is the model's reasoning text, kept apart from Content.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls lists the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is set on a tool message: the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message whose call failed.
	IsError bool `json:"is_error,omitempty"`
	// Source says what produced the message.
	Source Source `json:"source"`
	// Metadata holds JSON-serialisable annotations; keys are namespaced by
	// convention ("my-extension.injected").
	Metadata  map[string]any `json:"metadata,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// MessageEventType is the kind of change a [MessageEvent] makes.
type MessageEventType string

// The changes a middleware may make to its conversation.
const (
	// MessageAppend adds Message at the end of the conversation.
	MessageAppend MessageEventType = "append"
	// MessageReplace puts Message in place of the message whose ID is TargetID.
	MessageReplace MessageEventType = "replace"
	// MessageRemove removes the message whose ID is TargetID.
	MessageRemove MessageEventType = "remove"
)

// MessageEvent is a change to a conversation, emitted by a middleware through
// [TurnContext.EmitMessage] or [StepContext.EmitMessage].
type MessageEvent struct {
	Type MessageEventType `json:"type"`
	// TargetID names the message to replace or remove.
	TargetID string `json:"target_id,omitempty"`
	// Message is the message to append, or the replacement.
	Message Message `json:"message,omitzero"`
}

// MessageList is read-only access to a sequence of messages, oldest first.
// It lets a reader take only the messages it needs, without a copy of the
// whole conversation.
type MessageList interface {
	// Len reports the number of messages.
	Len() int
	// At returns a copy of message i, 0 <= i < Len().
	At(i int) Message
}

// MessageSlice adapts a slice to [MessageList].
type MessageSlice []Message

// Len returns len(s).
func (s MessageSlice) Len() int { return len(s) }

// At returns s[i].
func (s MessageSlice) At(i int) Message { return s[i] }

// Conversation is read access to one instance's history plus the one way to
// change it. The runtime implements it; middleware reads only what it needs,
// so the cost of a call does not grow with the conversation.
//
// A Conversation belongs to the turn that handed it out: it is safe to use from
// that turn's middleware and tools, not after the turn has finished.
type Conversation interface {
	MessageList
	// Apply makes the change. It fails, changing nothing, when TargetID names
	// no message or the message is invalid.
	Apply(ev MessageEvent) error
}

// InputKind says what started a turn.
type InputKind string

// The events that start a turn.
const (
	InputUserMessage      InputKind = "user_message"
	InputAgentRequest     InputKind = "agent_request"
	InputDelegationReport InputKind = "delegation_report"
	InputResume           InputKind = "resume"
)

// InputEvent is what a turn handles.
type InputEvent struct {
	Kind InputKind `json:"kind"`
	// Text is the message text (for a user message or an agent request).
	Text string `json:"text"`
	// Metadata carries caller information, such as callerAgent for an agent request.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Usage counts the tokens of one or more model calls.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Message metadata the runtime reads to build the effective history, the
// history the model sees (see the condense extension). The full history
// keeps every message; these marks only hide or replace them in the view.
const (
	// MetaPinned (true) keeps a message out of every summary and
	// truncation; an extension pins what the model must always see.
	MetaPinned = "pinned"
	// MetaTruncated (true) leaves a message out of the effective history.
	MetaTruncated = "truncated"
	// MetaCondensedBy names the summary message that stands for this one
	// in the effective history.
	MetaCondensedBy = "condensed_by"
	// MetaSummary marks a summary message: the effective history shows it
	// where the first message it condenses was, not where it is stored.
	MetaSummary = "summary"
)

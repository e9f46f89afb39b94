package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	// convention ("my-extension.injected"). The keys the runtime gives
	// meaning to are reserved: see [CheckMetadata].
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
	// no message, the message is invalid, or it sets reserved metadata
	// other than MetaPinned ([CheckMetadata]). A replacement keeps the
	// reserved metadata of the message it replaces.
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
	// Metadata carries caller information, such as callerAgent for an agent
	// request. It becomes the metadata of the turn's input message. A caller
	// outside the runtime may set channel, replyTo and requester, and keys
	// of its own, but no reserved key: see [CheckMetadata].
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
// They are reserved keys (see [CheckMetadata]): the runtime sets them, and
// refuses them from outside.
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

// reservedMetadata maps each metadata key the runtime gives meaning to, on
// a message or an input event, to what it does there. The runtime sets
// these keys itself; [CheckMetadata] refuses them from everyone else.
var reservedMetadata = map[string]string{
	// The effective history (above).
	MetaPinned:      "it keeps the message in every context window, whatever it costs",
	MetaTruncated:   "it leaves the message out of what the model sees",
	MetaCondensedBy: "it shows a summary in place of the message",
	MetaSummary:     "it marks a summary, which the model sees in place of the messages it condenses",
	// Crashes and pauses: the marks the runtime finds its way back by.
	"interrupted":      "it marks a tool result the runtime wrote for a call a stop of the process cut short",
	"awaits":           "it marks a tool result that waits for a pending item",
	"edited_arguments": "it records the arguments a human edited a call to",
	"continues":        "it continues a turn a stop of the process cut short",
	"turn_id":          "it names the turn a message belongs to",
	"resumes":          "it names the paused turn a resume continues",
	"pending":          "it lists the pending items a resume answers",
	"failed":           "it fails the task a resume is for",
	// Delegation.
	"taskId":       "it names the delegation task a turn works on",
	"parentTaskId": "it names the task that delegated a task",
	"taskChain":    "it lists the delegation ancestry, which approval rules check",
	"reported":     "it counts the delegation reports a turn took in",
	"team":         "it names the team a delegated task runs in",
	// Agent calls: the caller's metadata, which the orchestrator adds.
	"chain":             "it lists the callers that wait, for cycle detection and the depth limit",
	"callerAgent":       "it names the agent that called, which the orchestrator adds",
	"callerInstanceKey": "it names the calling instance, which the orchestrator adds",
	"callerTurnId":      "it names the calling turn, which the orchestrator adds",
	"callSource":        "it says how the call was made, which the orchestrator adds",
}

// IsReservedMetadata reports whether key is a metadata key the runtime
// reserves (see [CheckMetadata]). No key with a '.' in it is reserved, now
// or later: a key under a prefix of one's own ("myapp.note") is safe.
func IsReservedMetadata(key string) bool {
	_, ok := reservedMetadata[key]
	return ok
}

// ErrReservedMetadata is matched (with [errors.Is]) by every error of
// [CheckMetadata].
var ErrReservedMetadata = errors.New("metadata key reserved by the runtime")

// reservedError is a refused metadata key.
type reservedError struct {
	key, from string
	changed   bool // the key was there with another value
}

func (e *reservedError) Error() string {
	verb := "set"
	if e.changed {
		verb = "change"
	}
	return fmt.Sprintf("metadata key %q is reserved by the runtime: %s may not %s it (%s); name your own keys with a prefix, such as %q",
		e.key, e.from, verb, reservedMetadata[e.key], "myapp."+e.key)
}

// Is makes errors.Is(err, ErrReservedMetadata) hold.
func (e *reservedError) Is(target error) bool { return target == ErrReservedMetadata }

// CheckMetadata refuses metadata that sets a key the runtime reserves.
// next is the metadata someone outside the runtime gives; prev is what it
// replaces (nil for new input). A reserved key of next must hold the value
// it has in prev: absent from prev, it may not be set at all. allow names
// reserved keys the caller may set anyway. from says where next came from,
// for the error:
//
//	metadata key "truncated" is reserved by the runtime: the input's metadata may not set it (it leaves the message out of what the model sees); name your own keys with a prefix, such as "myapp.truncated"
//
// The error names the first such key in byte order, and matches
// [ErrReservedMetadata].
//
// The reserved keys are the effective history's marks ([MetaPinned],
// [MetaTruncated], [MetaCondensedBy], [MetaSummary]); the runtime's marks
// for crashes and pauses (interrupted, awaits, edited_arguments,
// continues, turn_id, resumes, pending, failed); delegation's (taskId,
// parentTaskId, taskChain, reported, team); and the caller's metadata an
// agent call carries (chain, callerAgent, callerInstanceKey, callerTurnId,
// callSource). A caller may set channel, replyTo and requester on its
// input: they say where a delegated task's answer goes and who asked.
//
// The runtime applies the check to every input from outside: the input
// of Runtime.Send (and so the HTTP API and the CLI), the metadata of an
// agent call (ctx.agents, native or WebAssembly), the messages a
// middleware appends or replaces, the input a turn middleware sets, and a
// summary's metadata. Its own code sets the keys without it.
func CheckMetadata(from string, prev, next map[string]any, allow ...string) error {
	var bad []string
	for k, v := range next {
		if !IsReservedMetadata(k) || slices.Contains(allow, k) {
			continue
		}
		if old, ok := prev[k]; !ok || !sameValue(old, v) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	k := slices.Min(bad)
	_, changed := prev[k]
	return &reservedError{key: k, from: from, changed: changed}
}

// sameValue reports whether a and b are the same JSON value: metadata that
// went through JSON holds float64 where the runtime's own holds int, and
// []any where it holds []string.
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && string(ja) == string(jb)
}

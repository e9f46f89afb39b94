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

// Source records what produced a message; Extension or Agent names it for
// [SourceExtension] or [SourceAgent].
type Source struct {
	Type      SourceType `json:"type"`
	Extension string     `json:"extension,omitempty"`
	Agent     string     `json:"agent,omitempty"`
}

// ToolCall is one tool call of an assistant message. Arguments is the
// model's JSON verbatim, possibly malformed; in JSON, a string.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
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

// UnmarshalJSON decodes what MarshalJSON encodes, or arguments as an object.
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

// Message is one entry of a conversation, a value: change the conversation
// with a [MessageEvent]. Metadata keys are namespaced ("myext.note"); see
// [CheckMetadata] for the reserved ones.
type Message struct {
	ID         string         `json:"id"`
	Role       Role           `json:"role"`
	Content    string         `json:"content,omitempty"`
	Reasoning  string         `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall     `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
	IsError    bool           `json:"is_error,omitempty"`
	Source     Source         `json:"source"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
}

// MessageEventType is the kind of change a [MessageEvent] makes.
type MessageEventType string

// The changes a middleware may make: append Message, or replace or remove
// the message TargetID names.
const (
	MessageAppend  MessageEventType = "append"
	MessageReplace MessageEventType = "replace"
	MessageRemove  MessageEventType = "remove"
)

// MessageEvent is a change to a conversation, emitted by a middleware through
// [TurnContext.EmitMessage] or [StepContext.EmitMessage].
type MessageEvent struct {
	Type     MessageEventType `json:"type"`
	TargetID string           `json:"target_id,omitempty"`
	Message  Message          `json:"message,omitzero"`
}

// MessageList is read-only access to messages, oldest first.
type MessageList interface {
	Len() int
	At(i int) Message
}

// MessageSlice adapts a slice to [MessageList].
type MessageSlice []Message

// Len returns len(s).
func (s MessageSlice) Len() int { return len(s) }

// At returns s[i].
func (s MessageSlice) At(i int) Message { return s[i] }

// Conversation is one instance's history, valid during its turn.
type Conversation interface {
	MessageList
	// Apply makes the change or fails changing nothing; a replacement keeps
	// the reserved metadata of the message it replaces.
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
	Text string    `json:"text"`
	// Metadata becomes the input message's; see [CheckMetadata].
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

// The marks of the effective history (what the model sees), reserved keys
// ([CheckMetadata]): pinned (true) keeps a message from every summary and
// truncation, truncated (true) leaves it out, condensed_by names the summary
// shown in its place, summary marks a summary.
const (
	MetaPinned      = "pinned"
	MetaTruncated   = "truncated"
	MetaCondensedBy = "condensed_by"
	MetaSummary     = "summary"
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

// IsReservedMetadata reports whether the runtime reserves key. No key with a
// '.' is reserved.
func IsReservedMetadata(key string) bool {
	_, ok := reservedMetadata[key]
	return ok
}

// ErrReservedMetadata is matched by every error of [CheckMetadata].
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

// CheckMetadata refuses next, metadata from outside the runtime (from says
// whence), if it sets a reserved key to other than its value in prev (nil
// for new input), unless allow names the key. The error names the first
// such key and matches [ErrReservedMetadata]. The keys: docs/extensions.md,
// "Metadata".
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

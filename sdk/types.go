package ganglion

import (
	"encoding/json"
	"fmt"
	"time"
)

// Manifest declares what an extension is and what it needs beyond its
// hooks. [Register] sends it to the host at the start of every instance's
// init, with the fields the host derives from the registrations added: the
// hook kinds, the tool names and the subscribed patterns (sdk/ABI.md,
// "manifest"). The host refuses at run time what the manifest does not
// declare.
type Manifest struct {
	// Name is the extension's own name, for people; the agent's config
	// names the extension as it likes.
	Name string
	// Version is the extension's version, for people.
	Version string
	// Publish lists the topic patterns (as in the runtime's event bus:
	// "counter.*") the extension may publish on.
	Publish []string
	// Secrets lists the secrets the extension may read with Secret. The
	// agent's config must grant each one, or the host refuses to load the
	// module.
	Secrets []string
	// State declares that the extension keeps state per instance (State,
	// SetState).
	State bool
	// Agents lists the agents the extension may call ([Agents]). A host
	// without an orchestrator refuses to load a module that lists any.
	Agents []string
	// Models declares that the extension calls the agent's model
	// ([Step.Models]), which costs money; without it the host refuses the
	// calls.
	Models bool
	// Files are the paths of the agent's workspace the extension reads
	// and writes. The agent's config must grant each (files: read:,
	// write:), or the host refuses to load the module.
	Files Files
	// HTTP lists the origins (scheme://host[:port]) the extension calls
	// with [Context].HTTP. The agent's config must grant each one under
	// the extension's http:, or the host refuses to load the module.
	HTTP []string
}

// manifestJSON is a manifest as the manifest import reads it.
type manifestJSON struct {
	Name    string     `json:"name"`
	Version string     `json:"version"`
	ABI     int        `json:"abi"`
	Hooks   []string   `json:"hooks"`
	Tools   []string   `json:"tools"`
	Topics  topicsJSON `json:"topics"`
	Secrets []string   `json:"secrets"`
	State   bool       `json:"state"`
	Agents  []string   `json:"agents,omitempty"`
	Models  bool       `json:"models,omitempty"`
	Pending []string   `json:"pending,omitempty"`
	Files   *filesJSON `json:"files,omitempty"`
	HTTP    []string   `json:"http,omitempty"`
}

type topicsJSON struct {
	Publish   []string `json:"publish"`
	Subscribe []string `json:"subscribe"`
}

// Role is the author of a [Message].
type Role string

// The roles of a conversation's messages.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Source records what produced a message. Extension names the extension
// when Type is "extension", Agent the calling agent when Type is "agent".
// The host fills in the emitting extension when a guest leaves it empty.
type Source struct {
	Type      string `json:"type"`
	Extension string `json:"extension,omitempty"`
	Agent     string `json:"agent,omitempty"`
}

// Call is one tool invocation that an assistant message asks for.
type Call struct {
	// ID is the provider's call ID; the tool message answering it carries it
	// in ToolCallID.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON the model wrote, verbatim; it may be malformed.
	// In JSON it travels as a string holding those bytes.
	Arguments json.RawMessage `json:"arguments"`
}

type callWire struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MarshalJSON encodes c with its arguments as a JSON string, as the host
// does.
func (c Call) MarshalJSON() ([]byte, error) {
	return json.Marshal(callWire{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
}

// UnmarshalJSON decodes what MarshalJSON encodes; it also accepts
// arguments given as a JSON object.
func (c *Call) UnmarshalJSON(b []byte) error {
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

// Message is one entry of a conversation, in the host's JSON shape.
// Changing a Message changes nothing on the host: emit a [MessageEvent].
type Message struct {
	// ID is unique within the instance's conversation. The host assigns
	// one to a message a guest appends without.
	ID   string `json:"id,omitempty"`
	Role Role   `json:"role,omitempty"`
	// Content is the text (for a tool message, the tool's result).
	Content string `json:"content,omitempty"`
	// Reasoning is the model's reasoning text.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls lists the calls an assistant message asks for.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message whose call failed.
	IsError bool `json:"is_error,omitempty"`
	// Source says what produced the message.
	Source Source `json:"source,omitzero"`
	// Metadata holds JSON annotations, keys namespaced by convention
	// ("my-extension.note").
	Metadata map[string]any `json:"metadata,omitempty"`
	// CreatedAt is when the host stored the message.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// MessageEventType is the kind of change a [MessageEvent] makes.
type MessageEventType string

// The changes a turn or step middleware may make to its conversation.
const (
	// MessageAppend adds Message at the end.
	MessageAppend MessageEventType = "append"
	// MessageReplace puts Message in place of the message TargetID.
	MessageReplace MessageEventType = "replace"
	// MessageRemove removes the message TargetID.
	MessageRemove MessageEventType = "remove"
)

// MessageEvent is a change to the conversation, for [Turn.Emit] and
// [Step.Emit].
type MessageEvent struct {
	Type MessageEventType `json:"type"`
	// TargetID names the message to replace or remove.
	TargetID string `json:"target_id,omitempty"`
	// Message is the message to append, or the replacement.
	Message Message `json:"message,omitzero"`
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
	// Text is the message text.
	Text string `json:"text"`
	// Metadata carries caller information.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// FinishReason says how a turn ended.
type FinishReason string

// The finish reasons of a turn.
const (
	FinishText     FinishReason = "text_response"
	FinishMaxSteps FinishReason = "max_steps"
	FinishPaused   FinishReason = "paused"
	FinishError    FinishReason = "error"
	FinishAborted  FinishReason = "aborted"
)

// TurnResult is the outcome of a turn, as a turn middleware reads it after
// [Turn.Next] or sets it with [Turn.SetResult].
type TurnResult struct {
	FinishReason FinishReason `json:"finish_reason"`
	// Response is the agent's answer. A guest that sets a result may leave
	// its Role and Source empty: the host makes it an assistant message
	// from the extension.
	Response Message `json:"response"`
}

// StepResult is the part of a step's outcome a step middleware may read
// and change after [Step.Next]; the model's message is the host's.
type StepResult struct {
	// Stop, when set, ends the turn after this step with that reason.
	Stop FinishReason `json:"stop"`
	// Continue runs another step even though the model answered in text.
	Continue bool `json:"continue"`
}

// ToolResult is the outcome of a tool call.
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// ToolCategory groups tools for approval decisions.
type ToolCategory string

// The tool categories.
const (
	CategoryRead    ToolCategory = "read"
	CategoryWrite   ToolCategory = "write"
	CategoryExecute ToolCategory = "execute"
	CategoryBrowser ToolCategory = "browser"
	CategoryMCP     ToolCategory = "mcp"
	CategoryOther   ToolCategory = "other"
)

// ToolSpec is what the model is told about a tool.
type ToolSpec struct {
	// Name is 1–64 letters, digits, '_' or '-'.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object; empty means
	// any object. The host checks the model's arguments against it before
	// the tool runs.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Category is one of the Category constants; empty is "other".
	Category ToolCategory `json:"category,omitempty"`
}

// validToolName reports whether name follows the host's tool name rule.
func validToolName(name string) error {
	if name == "" {
		return fmt.Errorf("tool name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("tool name %q is longer than 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("tool name %q: want letters, digits, '_' or '-'", name)
		}
	}
	return nil
}

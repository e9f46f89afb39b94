package events

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The payloads (Event.Data) of the runtime's topics, one type per topic:
// a subscriber in Go type-asserts ev.Data to the topic's type, and the JSON
// names are what --json output and WebAssembly subscribers read. The
// pending-item topics carry a ledger.Item.

// TurnStartedData is the payload of [TurnStarted].
type TurnStartedData struct {
	Kind pipeline.InputKind `json:"kind"`
	Text string             `json:"text"`
	// Continues: the turn goes on with one a stop cut short, under its ID.
	Continues bool `json:"continues"`
}

// TurnFinishedData is the payload of [TurnFinished].
type TurnFinishedData struct {
	FinishReason pipeline.FinishReason `json:"finish_reason"`
	Steps        int                   `json:"steps"`
	Usage        pipeline.Usage        `json:"usage"`
	Response     string                `json:"response"`
	Error        string                `json:"error,omitempty"`
}

// StepFinishedData is the payload of [StepFinished].
type StepFinishedData struct {
	Step      int            `json:"step"`
	ToolCalls int            `json:"tool_calls"`
	Usage     pipeline.Usage `json:"usage"`
}

// ModelDeltaData is the payload of [ModelDelta].
type ModelDeltaData struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// ToolStartedData is the payload of [ToolStarted].
type ToolStartedData struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
}

// ToolFinishedData is the payload of [ToolFinished].
type ToolFinishedData struct {
	ToolStartedData
	IsError    bool   `json:"is_error"`
	Content    string `json:"content"`
	DurationMS int64  `json:"duration_ms"`
}

// MessageAppendedData is the payload of [MessageAppended].
type MessageAppendedData struct {
	ID         string              `json:"id"`
	Role       pipeline.Role       `json:"role"`
	Content    string              `json:"content"`
	ToolCalls  []pipeline.ToolCall `json:"tool_calls"`
	ToolCallID string              `json:"tool_call_id"`
	IsError    bool                `json:"is_error"`
}

// TurnInterruptedData is the payload of [TurnInterrupted].
type TurnInterruptedData struct {
	Calls []string `json:"calls"`
}

// LayerSkippedData is the payload of [LayerSkipped].
type LayerSkippedData struct {
	Extension string `json:"extension"`
	Hook      string `json:"hook"`
	Error     string `json:"error"`
}

// ModelRetryData is the payload of [ModelRetry].
type ModelRetryData struct {
	Step       int    `json:"step"`
	Attempt    int    `json:"attempt"`
	MaxRetries int    `json:"max_retries"`
	DelayMS    int64  `json:"delay_ms"`
	RetryAfter bool   `json:"retry_after"`
	Kind       string `json:"kind"`
	Error      string `json:"error"`
}

// ContextCondensedData is the payload of [ContextCondensed].
type ContextCondensedData struct {
	Before       int    `json:"before"`
	After        int    `json:"after"`
	Condensed    int    `json:"condensed"`
	SummaryID    string `json:"summary_id"`
	Summariser   string `json:"summariser"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
}

// ContextTruncatedData is the payload of [ContextTruncated].
type ContextTruncatedData struct {
	Reason string  `json:"reason"`
	Before int     `json:"before"`
	After  int     `json:"after"`
	Keep   float64 `json:"keep,omitempty"`
}

// TaskDelegatedData is the payload of [TaskDelegated].
type TaskDelegatedData struct {
	TaskID      string `json:"task_id"`
	ChildTaskID string `json:"child_task_id"`
	To          string `json:"to"`
	Team        string `json:"team"`
	Message     string `json:"message"`
	Pending     int    `json:"pending"`
	Root        bool   `json:"root"`
}

// TaskCompletedData is the payload of [TaskCompleted].
type TaskCompletedData struct {
	TaskID       string `json:"task_id"`
	ParentTaskID string `json:"parent_task_id"`
	Failed       bool   `json:"failed"`
	Response     string `json:"response"`
}

// TaskAnsweredData is the payload of [TaskAnswered].
type TaskAnsweredData struct {
	TaskID    string `json:"task_id"`
	Requester string `json:"requester"`
	Channel   string `json:"channel"`
	Response  string `json:"response"`
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}

// TaskBudgetSpentData is the payload of [TaskBudgetSpent].
type TaskBudgetSpentData struct {
	RootTaskID  string `json:"root_task_id"`
	RootAgent   string `json:"root_agent"`
	Budget      string `json:"budget"`
	Delegations int    `json:"delegations"`
	Turns       int    `json:"turns"`
	Tokens      int64  `json:"tokens"`
}

// TeamActivatedData is the payload of [TeamActivated].
type TeamActivatedData struct {
	Team   string   `json:"team"`
	Agents []string `json:"agents"`
}

// ExtensionFileWrittenData is [ExtensionFileWritten]'s payload, without
// the content.
type ExtensionFileWrittenData struct {
	Path   string `json:"path"` // relative to the workspace
	Bytes  int    `json:"bytes"`
	Append bool   `json:"append"` // else the file was replaced
}

// payloads makes, for each of the runtime's topics, a value of its payload
// type for UnmarshalJSON to decode into.
var payloads = map[string]func() any{
	TurnStarted:      func() any { return new(TurnStartedData) },
	TurnFinished:     func() any { return new(TurnFinishedData) },
	StepFinished:     func() any { return new(StepFinishedData) },
	ModelDelta:       func() any { return new(ModelDeltaData) },
	ToolStarted:      func() any { return new(ToolStartedData) },
	ToolFinished:     func() any { return new(ToolFinishedData) },
	MessageAppended:  func() any { return new(MessageAppendedData) },
	TurnInterrupted:  func() any { return new(TurnInterruptedData) },
	LayerSkipped:     func() any { return new(LayerSkippedData) },
	ModelRetry:       func() any { return new(ModelRetryData) },
	ContextCondensed: func() any { return new(ContextCondensedData) },
	ContextTruncated: func() any { return new(ContextTruncatedData) },
	TaskDelegated:    func() any { return new(TaskDelegatedData) },
	TaskCompleted:    func() any { return new(TaskCompletedData) },
	TaskAnswered:     func() any { return new(TaskAnsweredData) },
	TaskBudgetSpent:  func() any { return new(TaskBudgetSpentData) },
	TeamActivated:    func() any { return new(TeamActivatedData) },

	ExtensionFileWritten: func() any { return new(ExtensionFileWrittenData) },
}

// UnmarshalJSON decodes an event; Data becomes the payload type (not a
// pointer) of a runtime topic, what encoding/json makes of it otherwise.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var raw struct {
		plain
		Data json.RawMessage `json:"data,omitempty"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = Event(raw.plain)
	e.Data = nil
	if len(raw.Data) == 0 || string(raw.Data) == "null" {
		return nil
	}
	if mk, ok := payloads[e.Topic]; ok {
		p := mk()
		if err := json.Unmarshal(raw.Data, p); err != nil {
			return fmt.Errorf("event %s: data: %w", e.Topic, err)
		}
		e.Data = reflect.ValueOf(p).Elem().Interface()
		return nil
	}
	var v any
	if err := json.Unmarshal(raw.Data, &v); err != nil {
		return fmt.Errorf("event %s: data: %w", e.Topic, err)
	}
	e.Data = v
	return nil
}

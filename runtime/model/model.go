package model

import (
	"context"
	"fmt"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// ChunkKind is the kind of a streamed [Chunk].
type ChunkKind uint8

// The chunk kinds a provider streams.
const (
	// KindText carries a piece of the answer in Text.
	KindText ChunkKind = iota + 1
	// KindReasoning carries a piece of the model's reasoning in Text.
	KindReasoning
	// KindToolCallStart opens tool call ToolCallID named ToolName.
	KindToolCallStart
	// KindToolCallDelta appends ArgumentsDelta to the arguments of ToolCallID.
	KindToolCallDelta
	// KindToolCallEnd closes tool call ToolCallID.
	KindToolCallEnd
	// KindUsage reports token usage in Usage.
	KindUsage
	// KindError reports a failure of the stream in Err; it is the last chunk.
	KindError
)

var kindNames = [...]string{"", "text", "reasoning", "tool_call_start", "tool_call_delta", "tool_call_end", "usage", "error"}

// String returns the kind's name ("text", "tool_call_start", ...).
func (k ChunkKind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("ChunkKind(%d)", uint8(k))
}

// Chunk is one piece of a streamed model response.
type Chunk struct {
	Kind           ChunkKind
	Text           string
	ToolCallID     string
	ToolName       string
	ArgumentsDelta string
	Usage          pipeline.Usage
	Err            error
}

// Request is one model call.
//
// Messages and Tools are read-only views owned by the runtime; a provider
// must not change or keep them after its [Stream] has returned its last chunk.
type Request struct {
	Agent       string
	InstanceKey string
	TurnID      string
	// Turn is the instance's turn number, from 1; it survives restarts.
	Turn int
	// InputKind says what started the turn: a user message, an agent's
	// request, a delegation report, or the resume after a pause was
	// answered. The turn's input is in Messages; a provider may ignore it.
	InputKind pipeline.InputKind
	// Step is the step's number within the turn, from 1.
	Step int
	// Model is the provider's model name, from the agent's config.
	Model string
	// System is the agent's system prompt.
	System string
	// Messages is the history the model sees, oldest first. It is a view, so
	// a request costs nothing per message until a provider reads them.
	Messages pipeline.MessageList
	// Tools is the catalog offered for this step.
	Tools []pipeline.Tool
	// MaxOutputTokens bounds the answer; 0 means the provider's default.
	MaxOutputTokens int
	// Secret, if set, returns a secret provided to the instance by name (a
	// [DEPENDENCY_REQUEST] a human answered with ganglion provide).
	// Networked providers read their API key from it when the environment
	// variable the config names is empty. The value must never reach a
	// log, an event or an error.
	Secret func(name string) (string, bool)
}

// Stream yields the chunks of one response. Recv returns io.EOF after the last
// chunk. Close releases the stream and may be called at any time, also before
// the end. A Stream is used by one goroutine.
type Stream interface {
	Recv() (Chunk, error)
	Close() error
}

// Provider calls a model. Implementations must be safe for concurrent use:
// many instances stream at once.
type Provider interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

package engine

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// A Tracer traces the turns the loop runs: a span for each turn, each of
// its steps, and each model call and tool call of a step, every span the
// child of the one it runs in. Each Start returns the context that
// carries the new span, in which the loop runs what the span covers.
//
// A step and a tool call end through that context (EndStep, EndTool),
// which holds their span, so that they cost no value of their own; a turn
// and a model call end through the span their Start returns, which keeps
// what their end records (when they began, the first chunk).
//
// The loop holds no Tracer when nothing is traced or measured, and checks
// for nil before each Start: tracing off costs one nil check at each point.
// A Tracer is called from every turn at once, so it must be safe for
// concurrent use.
type Tracer interface {
	// StartTurn starts the span of a turn of agent's instance, with in its
	// input; links are the W3C traceparents of the spans the turn
	// continues (the paused turns a resume resumes), which it links to.
	// It returns the turn's context, its span and the span's traceparent
	// ("" when it has none), which what the turn leaves for later (a
	// task, a pending item) stores.
	StartTurn(ctx context.Context, agent, instance, turnID string, in pipeline.InputEvent, links []string) (context.Context, TurnSpan, string)
	// StartStep starts the span of step n of a turn; EndStep ends it,
	// given the context StartStep returned and the step's error.
	StartStep(ctx context.Context, n int) context.Context
	EndStep(ctx context.Context, err error)
	// StartModel starts the span of a call of agent's model, named model
	// (or by provider when the config names none), with the maxTokens
	// and the system prompt it was asked with and the messages it is
	// sent.
	StartModel(ctx context.Context, agent, provider, model string, maxTokens int, system string, msgs pipeline.MessageList) (context.Context, ModelSpan)
	// StartTool starts the span of tool call c; EndTool ends it, given
	// the context StartTool returned, the agent whose call it is and the
	// call's result, masked of the instance's secrets already.
	StartTool(ctx context.Context, c pipeline.ToolCall) context.Context
	EndTool(ctx context.Context, agent string, r *pipeline.ToolResult)
}

// A TurnSpan is the span of a turn, which End ends with the turn's result
// or its error.
type TurnSpan interface {
	End(res *pipeline.TurnResult, err error)
}

// A ModelSpan is the span of a model call. Chunk is called each time the
// model's stream answers (with a chunk, its end or an error), and End
// once, with the reply assembled and the call's usage, or its error. The
// reply is a copy: a pointer handed through an interface would move the
// loop's message to the heap at every step.
type ModelSpan interface {
	Chunk()
	End(reply pipeline.Message, usage pipeline.Usage, err error)
}

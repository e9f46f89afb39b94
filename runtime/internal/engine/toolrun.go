package engine

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// A ToolRunner runs the tools a turn calls, in place of the loop's own
// call of the tool's function: to record each call, or to answer for a
// tool that acts on the world with what it answered before. The loop
// holds no ToolRunner when nothing needs one, and then runs each tool
// itself, at the cost of a nil check. A ToolRunner is called from every
// turn and from a step's concurrent calls, so it must be safe for
// concurrent use.
type ToolRunner interface {
	// Tool runs one tool call: it calls c.Run, or answers for it.
	Tool(ctx context.Context, c ToolRun) (*pipeline.ToolResult, error)
}

// ToolRun is one tool call the loop hands a [ToolRunner].
type ToolRun struct {
	// Agent, Instance and TurnID name the turn, and Step its step, whose
	// model asked for the call.
	Agent, Instance, TurnID string
	Step                    int
	// Call is the call: its ID, its tool's name and the arguments.
	Call pipeline.ToolCall
	// Live marks a tool that is code under test, an extension's or one of
	// the runtime's own: a runner that answers for the tools acting on
	// the world still runs it.
	Live bool
	// Run runs the tool.
	Run func(context.Context) (*pipeline.ToolResult, error)
	// Mask masks the instance's secrets in a result's text.
	Mask func(string) string
}

// Package turnhost carries the runtime's own state for a turn through the
// pipeline's contexts, where no extension can reach it.
//
// Package pipeline keeps the state in an unexported field of
// pipeline.TurnContext and pipeline.ToolCallContext (a step reads its
// turn's) and installs Get and Set when it is initialised; package
// runtime stores its per-turn state with Set after it resets a context and
// reads it back with Get in its innermost handlers. Being internal, the
// package is importable by the module's own packages alone. Neither call
// allocates: the contexts are pointers, and so is the state.
package turnhost

// Get returns the state stored in c, a *pipeline.TurnContext,
// *pipeline.StepContext or *pipeline.ToolCallContext; nil for any other
// value, or when none was stored.
var Get func(c any) any

// Set stores v in c, a *pipeline.TurnContext or *pipeline.ToolCallContext,
// for Get to return until c is reset. It panics for any other value.
var Set func(c, v any)

// Package model defines how the runtime talks to a language model: a
// [Provider] streams [Chunk]s of these kinds (text, reasoning,
// tool_call_start / tool_call_delta / tool_call_end, usage, error).
//
// The embedded default provider is the scripted model, in package
// [github.com/ganglion-dev/ganglion/runtime/model/scripted]: it reads its
// responses from a YAML script keyed by agent, turn and step, so any scenario
// runs offline and deterministically. Real providers plug in behind the same
// interface.
package model

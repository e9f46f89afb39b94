// Package model defines how the runtime talks to a language model: a
// [Provider] streams [Chunk]s of these kinds (text, reasoning,
// tool_call_start / tool_call_delta / tool_call_end, usage, error).
//
// The embedded default provider is the scripted model, in package
// [github.com/ganglion-dev/ganglion/runtime/model/scripted]: it reads its
// responses from a YAML script keyed by agent, turn and step, so any scenario
// runs offline and deterministically. Real providers plug in behind the same
// interface.
//
// # Registration
//
// A config names its provider (provider: openai). A program offers the
// providers it imports: each registers a [Factory] under its name with
// [Register] in its init function, as database/sql drivers do, so a
// program links the SDK of no provider it does not import:
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/model/openai"
//
// The runtime looks the factories up ([Lookup], [Providers]) and names the
// import a config is missing ([ImportPath]). The scripted model is the
// runtime's own and is not registered.
package model

// Command brain is seed 004's use case: an agent with an "unconscious".
// Before the worker's model runs, a turn middleware asks the unconscious
// agent about the input through ctx.agents.request and injects its answer
// as a system message; after the turn, an observer middleware sends what
// happened to an observer agent through ctx.agents.send, which keeps a
// count in its state. The worker's model sees only the injected answer:
// neither call is in its conversation.
//
// Run it offline with the scripted model:
//
//	go run ./examples/brain
//
// The same unconscious written as a WebAssembly guest is
// examples/extensions/unconscious.
package main

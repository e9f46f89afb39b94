// Command brain is the runtime's founding use case: an agent with an "unconscious".
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
// Both halves also exist as WebAssembly guests, written with the Go SDK:
// examples/extensions/unconscious (agents_request) and
// examples/extensions/observer (agents_send). TestBrainWASM in
// examples/extensions runs this brain with the worker loading both.
package main

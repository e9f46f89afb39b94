// Command observer is the other WebAssembly half of the brain use case
// (examples/extensions/unconscious is the first): a turn middleware that,
// after the turn, tells an observer agent what the agent answered through
// ctx.agents.send, without waiting for it. The model never sees the call.
//
//	extensions:
//	  - wasm: observer.wasm
//	    agents: [observer]             # the agents it may call
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o observer.wasm .
package main

// Command unconscious is the WebAssembly half of the brain use case: a
// turn middleware that, before the model runs, asks another agent (the
// "unconscious") about the input through ctx.agents and injects its answer
// as a system message. The model never sees the call, only the answer.
//
//	extensions:
//	  - wasm: unconscious.wasm
//	    agents: [unconscious]          # the agents it may call
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o unconscious.wasm .
package main

// Command guardrail is a Ganglion extension in WebAssembly: a turn
// middleware that answers, without calling the model, any input that
// matches a blocked pattern. The patterns come from the extension's config:
//
//	extensions:
//	  - wasm: guardrail.wasm
//	    config: {block: ['(?i)\brm\s+-rf\b', '(?i)\bdrop\s+table\b']}
//
// A pattern that is not a valid regular expression fails the load.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o guardrail.wasm .
package main

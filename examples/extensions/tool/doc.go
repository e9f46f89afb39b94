// Command tool is a Ganglion extension in WebAssembly that implements a
// tool: word_count counts the words of a text. The host checks the model's
// arguments against the JSON Schema before the tool runs.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tool.wasm .
package main

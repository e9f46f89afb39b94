// Command redactor is a Ganglion extension in WebAssembly: a toolCall
// middleware that masks what looks like an API key ("sk-" and at least 16
// letters or digits) in every tool result, before the model or the history
// sees it.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o redactor.wasm .
package main

// Package extensions holds the example WebAssembly extensions, one Go guest
// per directory (guardrail, redactor, tool, counter, unconscious, observer;
// see README.md), and the tests that build each one with the standard Go
// toolchain (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared), load it in a
// runtime on the scripted model, and check what it does.
package extensions

// Package guesttest builds Go guest extensions for tests: each package
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, once per test binary,
// and their compiled code into a wazero compilation cache that the tests'
// runtimes use (runtime.WithWasmCache). The cache is filled by the warm
// command, built without -race: under the race detector wazero's compiler
// is about ten times slower, over ten seconds per Go guest.
package guesttest

// Package guesttest builds guest extensions for tests, once per test
// binary: Go packages with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared
// ([Set]), and Rust crates with Debian's rustc and cargo for
// wasm32-unknown-unknown, offline ([RustSet], which skips the test when
// that toolchain is not installed), and AssemblyScript packages with the
// compiler the SDK's npm ci installs ([AssemblyScriptSet], which skips the
// test when it is not installed). It compiles their code into a wazero
// compilation cache that the tests' runtimes use (runtime.WithWasmCache).
// The cache is filled by the warm command, built without -race: under the
// race detector wazero's compiler is about ten times slower, over ten
// seconds per Go guest.
package guesttest

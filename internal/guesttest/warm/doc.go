// Command warm compiles WebAssembly modules into a compilation cache
// directory, as a runtime's WASM engine does. Package guesttest builds it
// without -race (under which wazero's compiler is ten times slower) and
// runs it once, so that the tests' runtimes load their guests from the
// cache:
//
//	warm CACHE_DIR MODULE.wasm...
package main

// Command counter is a Ganglion extension in WebAssembly that keeps state:
// it counts the turns and the steps of each instance in the extension's
// state, which the host persists with the instance, and publishes
// counter.turn after each turn.
//
// Its step middleware runs while its turn middleware waits in Next, in the
// same instance of the module: the host re-enters it.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o counter.wasm .
package main

// Command goraw is a Go guest without the SDK, for a benchmark: the floor
// of a Go guest's hook call. Its turn hook calls next and returns.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o goraw.wasm .
package main

import "unsafe"

//go:wasmimport ganglion manifest
func manifest(ptr unsafe.Pointer, n int32) int32

//go:wasmimport ganglion register
func register(kind int32, ptr unsafe.Pointer, n int32) int32

//go:wasmimport ganglion next
func next(ctx int32) int32

var m = []byte(`{"name":"goraw","abi":1,"hooks":["turn"]}`)

//go:wasmexport ganglion_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport ganglion_init
func initExt() int32 {
	manifest(unsafe.Pointer(&m[0]), int32(len(m)))
	register(1, nil, 0)
	return 0
}

//go:wasmexport ganglion_turn
func turn(ctx, id int32) int32 {
	if next(ctx) != 0 {
		return 1
	}
	return 0
}

func main() {}

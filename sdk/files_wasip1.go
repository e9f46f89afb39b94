//go:build wasip1

package ganglion

import "unsafe"

// The file imports of module ganglion (sdk/ABI.md, "Files"; ABI version 2).

//go:wasmimport ganglion file_read
func importFileRead(ctx int32, path string, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion file_list
func importFileList(ctx int32, path string, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion file_write
func importFileWrite(ctx int32, path string, data unsafe.Pointer, n uint32, mode int32) int32

func (wasmHost) fileRead(h int32, path string, buf []byte) int32 {
	return importFileRead(h, path, ptr(buf), uint32(len(buf)))
}
func (wasmHost) fileList(h int32, path string, buf []byte) int32 {
	return importFileList(h, path, ptr(buf), uint32(len(buf)))
}
func (wasmHost) fileWrite(h int32, path string, data []byte, mode int32) int32 {
	return importFileWrite(h, path, ptr(data), uint32(len(data)), mode)
}

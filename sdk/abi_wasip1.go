//go:build wasip1

package ganglion

import "unsafe"

// The imports of module ganglion (sdk/ABI.md, "Host imports"). A Go
// string parameter is passed as (ptr, len).

//go:wasmimport ganglion manifest
func importManifest(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion register
func importRegister(kind int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion field
func importField(ctx, field int32, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion set_field
func importSetField(ctx, field int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion messages_len
func importMessagesLen(ctx int32) int32

//go:wasmimport ganglion message
func importMessage(ctx, index int32, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion emit
func importEmit(ctx int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion next
func importNext(ctx int32) int32

//go:wasmimport ganglion state_get
func importStateGet(ctx int32, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion state_set
func importStateSet(ctx int32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion publish
func importPublish(ctx int32, topic string, data unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion log
func importLog(level int32, msg string) int32

//go:wasmimport ganglion secret
func importSecret(ctx int32, name string, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion agents_request
func importAgentsRequest(ctx int32, req unsafe.Pointer, n uint32, buf unsafe.Pointer, bn uint32) int32

//go:wasmimport ganglion agents_send
func importAgentsSend(ctx int32, req unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion window
func importWindow(ctx int32, buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion window_apply
func importWindowApply(ctx int32, req unsafe.Pointer, n uint32, buf unsafe.Pointer, bn uint32) int32

//go:wasmimport ganglion complete
func importComplete(ctx int32, req unsafe.Pointer, n uint32, buf unsafe.Pointer, bn uint32) int32

//go:wasmimport ganglion http_request
func importHTTPRequest(ctx int32, req unsafe.Pointer, n uint32, buf unsafe.Pointer, bn uint32) int32

//go:wasmimport ganglion set_error
func importSetError(msg string) int32

//go:wasmimport ganglion last_error
func importLastError(buf unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion inbox
func importInbox(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport ganglion pause
func importPause(ctx int32, req unsafe.Pointer, n uint32, buf unsafe.Pointer, bn uint32) int32

// wasmHost calls the imports.
type wasmHost struct{}

// host is the module ganglion this guest talks to. In a guest it is the
// concrete wasmHost, not the abi interface: a method call through an
// interface is an indirect call in WebAssembly, which costs every host
// call of every hook.
var host wasmHost

var _ abi = host

// ptr is b's address in linear memory (nil for an empty b, which the host
// reads as nothing). Go's heap does not move, and a pointer argument keeps
// its object alive for the call.
func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

func (wasmHost) manifest(b []byte) int32 { return importManifest(ptr(b), uint32(len(b))) }
func (wasmHost) register(kind int32, spec []byte) int32 {
	return importRegister(kind, ptr(spec), uint32(len(spec)))
}
func (wasmHost) field(h, field int32, buf []byte) int32 {
	return importField(h, field, ptr(buf), uint32(len(buf)))
}
func (wasmHost) setField(h, field int32, v []byte) int32 {
	return importSetField(h, field, ptr(v), uint32(len(v)))
}
func (wasmHost) messagesLen(h int32) int32 { return importMessagesLen(h) }
func (wasmHost) message(h, index int32, buf []byte) int32 {
	return importMessage(h, index, ptr(buf), uint32(len(buf)))
}
func (wasmHost) emit(h int32, ev []byte) int32 { return importEmit(h, ptr(ev), uint32(len(ev))) }
func (wasmHost) next(h int32) int32            { return importNext(h) }
func (wasmHost) stateGet(h int32, buf []byte) int32 {
	return importStateGet(h, ptr(buf), uint32(len(buf)))
}
func (wasmHost) stateSet(h int32, v []byte) int32 { return importStateSet(h, ptr(v), uint32(len(v))) }
func (wasmHost) publish(h int32, topic string, data []byte) int32 {
	return importPublish(h, topic, ptr(data), uint32(len(data)))
}
func (wasmHost) log(level int32, msg string) int32 { return importLog(level, msg) }
func (wasmHost) secret(h int32, name string, buf []byte) int32 {
	return importSecret(h, name, ptr(buf), uint32(len(buf)))
}
func (wasmHost) setError(msg string) int32  { return importSetError(msg) }
func (wasmHost) lastError(buf []byte) int32 { return importLastError(ptr(buf), uint32(len(buf))) }
func (wasmHost) inbox(p *[3]uint64) int32   { return importInbox(unsafe.Pointer(p), 24) }

// The exports the host calls (sdk/ABI.md, "Guest exports"). They live in
// this package, so a module that imports it exports them all; the host
// calls only those for what setup registered. ganglion_turn, _step and
// _tool_call are in api.go, on the functions that run those hooks.

//go:wasmexport ganglion_abi_version
func exportABIVersion() int32 { return abiVersion }

//go:wasmexport ganglion_init
func exportInit() int32 { return runInit() }

//go:wasmexport ganglion_tool
func exportTool(ctx, id int32) int32 { return runHook(kindTool, ctx, id) }

//go:wasmexport ganglion_event
func exportEvent(ctx, id int32) int32 { return runHook(kindEvent, ctx, id) }

//go:wasmexport ganglion_pending
func exportPending(ctx, id int32) int32 { return runHook(kindPending, ctx, id) }

//go:wasmexport ganglion_reply
func exportReply(ctx, id int32) int32 { return runHook(kindReply, ctx, id) }

func (wasmHost) pause(h int32, req, buf []byte) int32 {
	return importPause(h, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
}

func (wasmHost) agentsRequest(h int32, req, buf []byte) int32 {
	return importAgentsRequest(h, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
}

func (wasmHost) agentsSend(h int32, req []byte) int32 {
	return importAgentsSend(h, ptr(req), uint32(len(req)))
}

func (wasmHost) window(h int32, buf []byte) int32 { return importWindow(h, ptr(buf), uint32(len(buf))) }

func (wasmHost) windowApply(h int32, req, buf []byte) int32 {
	return importWindowApply(h, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
}

func (wasmHost) complete(h int32, req, buf []byte) int32 {
	return importComplete(h, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
}

func (wasmHost) httpRequest(h int32, req, buf []byte) int32 {
	return importHTTPRequest(h, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
}

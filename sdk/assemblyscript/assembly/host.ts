// The imports of module "ganglion", one for one as sdk/ABI.md lists them.
// Every parameter and result is an i32; a (ptr, len) pair names bytes in the
// guest's exported memory. Use the wrappers of index.ts rather than these.

// @ts-ignore: decorator
@external("ganglion", "manifest")
export declare function manifest(ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "register")
export declare function register(kind: i32, specPtr: usize, specLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "field")
export declare function field(ctx: i32, field: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "set_field")
export declare function set_field(ctx: i32, field: i32, ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "messages_len")
export declare function messages_len(ctx: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "message")
export declare function message(ctx: i32, index: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "emit")
export declare function emit(ctx: i32, ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "next")
export declare function next(ctx: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "state_get")
export declare function state_get(ctx: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "state_set")
export declare function state_set(ctx: i32, ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "publish")
export declare function publish(ctx: i32, topicPtr: usize, topicLen: i32, dataPtr: usize, dataLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "log")
export declare function log(level: i32, ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "secret")
export declare function secret(ctx: i32, namePtr: usize, nameLen: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "set_error")
export declare function set_error(ptr: usize, len: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "last_error")
export declare function last_error(bufPtr: usize, bufLen: i32): i32;

// agents_request and agents_send answer DENIED until the host has the
// orchestrator (see sdk/ABI.md, "Calling other agents").
// @ts-ignore: decorator
@external("ganglion", "agents_request")
export declare function agents_request(ctx: i32, reqPtr: usize, reqLen: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "agents_send")
export declare function agents_send(ctx: i32, reqPtr: usize, reqLen: i32): i32;

// inbox registers 24 bytes where the host keeps the running hook's handle
// and the generations of its input text and tool name (sdk/ABI.md, "inbox").
// @ts-ignore: decorator
@external("ganglion", "inbox")
export declare function inbox(ptr: usize, len: i32): i32;

// pause opens a pending item (version 2): an import that acts, so a retry
// with the same request bytes gets the kept answer (sdk/ABI.md, "Imports
// that act").
// @ts-ignore: decorator
@external("ganglion", "pause")
export declare function pause(ctx: i32, reqPtr: usize, reqLen: i32, bufPtr: usize, bufLen: i32): i32;

// file_read, file_list and file_write reach the workspace's files the
// manifest's files name (version 2; sdk/ABI.md, "Files").
// @ts-ignore: decorator
@external("ganglion", "file_read")
export declare function file_read(ctx: i32, pathPtr: usize, pathLen: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "file_list")
export declare function file_list(ctx: i32, pathPtr: usize, pathLen: i32, bufPtr: usize, bufLen: i32): i32;

// @ts-ignore: decorator
@external("ganglion", "file_write")
export declare function file_write(ctx: i32, pathPtr: usize, pathLen: i32, dataPtr: usize, dataLen: i32, mode: i32): i32;

// http_request sends a request to an origin the manifest's http lists
// (version 2): an import that acts, so a retry with the same request bytes
// gets the kept answer (sdk/ABI.md, "HTTP").
// @ts-ignore: decorator
@external("ganglion", "http_request")
export declare function http_request(ctx: i32, reqPtr: usize, reqLen: i32, bufPtr: usize, bufLen: i32): i32;

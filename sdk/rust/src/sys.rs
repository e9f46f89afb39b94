//! The crate's only unsafe code: the imports of module `ganglion` (one for
//! one as ../ABI.md lists them), the guest exports the host calls, and the
//! inbox the host writes. Everything above this module is safe Rust.
//!
//! Every import here takes slices, so a `(ptr, len)` pair always names
//! memory the guest owns. Imports that return bytes are wrapped in
//! [`read`], which implements the ABI's rule: the import returns the full
//! length, writes only when the value fits, and is called again with a
//! buffer that long.
//!
//! Off wasm32 (the crate's own unit tests) the imports are stubs that
//! answer FAILED: no host is there to call.
#![allow(unsafe_code)]

use crate::api::{dispatch, Kind};

#[cfg(target_arch = "wasm32")]
mod imports {
    #[link(wasm_import_module = "ganglion")]
    extern "C" {
        pub fn manifest(ptr: *const u8, len: i32) -> i32;
        pub fn register(kind: i32, spec_ptr: *const u8, spec_len: i32) -> i32;
        pub fn field(ctx: i32, field: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn set_field(ctx: i32, field: i32, ptr: *const u8, len: i32) -> i32;
        pub fn messages_len(ctx: i32) -> i32;
        pub fn message(ctx: i32, index: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn emit(ctx: i32, ptr: *const u8, len: i32) -> i32;
        pub fn next(ctx: i32) -> i32;
        pub fn state_get(ctx: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn state_set(ctx: i32, ptr: *const u8, len: i32) -> i32;
        pub fn publish(ctx: i32, topic_ptr: *const u8, topic_len: i32, data_ptr: *const u8, data_len: i32) -> i32;
        pub fn log(level: i32, ptr: *const u8, len: i32) -> i32;
        pub fn secret(ctx: i32, name_ptr: *const u8, name_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn agents_request(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn agents_send(ctx: i32, req_ptr: *const u8, req_len: i32) -> i32;
        pub fn window(ctx: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn window_apply(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn complete(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn set_error(ptr: *const u8, len: i32) -> i32;
        pub fn last_error(buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn inbox(ptr: *mut u8, len: i32) -> i32;
        pub fn pause(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn file_read(ctx: i32, path_ptr: *const u8, path_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn file_list(ctx: i32, path_ptr: *const u8, path_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
        pub fn file_write(ctx: i32, path_ptr: *const u8, path_len: i32, data_ptr: *const u8, data_len: i32, mode: i32) -> i32;
        pub fn http_request(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32;
    }
}

#[cfg(not(target_arch = "wasm32"))]
#[allow(unused_variables, clippy::missing_safety_doc)]
mod imports {
    //! Stubs for a build off wasm32: each answers FAILED (-4).
    const FAILED: i32 = -4;
    pub unsafe fn manifest(ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn register(kind: i32, spec_ptr: *const u8, spec_len: i32) -> i32 { FAILED }
    pub unsafe fn field(ctx: i32, field: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn set_field(ctx: i32, field: i32, ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn messages_len(ctx: i32) -> i32 { FAILED }
    pub unsafe fn message(ctx: i32, index: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn emit(ctx: i32, ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn next(ctx: i32) -> i32 { FAILED }
    pub unsafe fn state_get(ctx: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn state_set(ctx: i32, ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn publish(ctx: i32, topic_ptr: *const u8, topic_len: i32, data_ptr: *const u8, data_len: i32) -> i32 { FAILED }
    pub unsafe fn log(level: i32, ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn secret(ctx: i32, name_ptr: *const u8, name_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn agents_request(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn agents_send(ctx: i32, req_ptr: *const u8, req_len: i32) -> i32 { FAILED }
    pub unsafe fn window(ctx: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn window_apply(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn complete(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn set_error(ptr: *const u8, len: i32) -> i32 { FAILED }
    pub unsafe fn last_error(buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn inbox(ptr: *mut u8, len: i32) -> i32 { FAILED }
    pub unsafe fn pause(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn file_read(ctx: i32, path_ptr: *const u8, path_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn file_list(ctx: i32, path_ptr: *const u8, path_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
    pub unsafe fn file_write(ctx: i32, path_ptr: *const u8, path_len: i32, data_ptr: *const u8, data_len: i32, mode: i32) -> i32 { FAILED }
    pub unsafe fn http_request(ctx: i32, req_ptr: *const u8, req_len: i32, buf_ptr: *mut u8, buf_len: i32) -> i32 { FAILED }
}

/// len32 is a slice's length as the ABI's i32; a longer slice cannot be in
/// a 32-bit memory, and is clamped so the host answers BOUNDS.
fn len32(b: &[u8]) -> i32 {
    if b.len() > i32::MAX as usize {
        i32::MAX
    } else {
        b.len() as i32
    }
}

/// SCRATCH is the first buffer [`read`] offers: most values fit.
const SCRATCH: usize = 256;

/// read calls `f(ptr, cap)`, an import that writes a value into the guest
/// buffer `(ptr, cap)` and returns its full length, until the value fits;
/// it returns the value's bytes, or the import's negative code. The length
/// may change between two calls (state, for one): hence the loop. An import
/// that acts (window_apply, complete) gets the same request bytes each time,
/// so the host answers a retry with the answer it kept.
fn read(mut f: impl FnMut(*mut u8, i32) -> i32) -> Result<Vec<u8>, i32> {
    let mut buf: Vec<u8> = Vec::with_capacity(SCRATCH);
    loop {
        let cap = buf.capacity();
        let n = f(buf.as_mut_ptr(), cap.min(i32::MAX as usize) as i32);
        if n < 0 {
            return Err(n);
        }
        let n = n as usize;
        if n <= cap {
            // SAFETY: the host wrote n bytes at buf's pointer, within its
            // capacity; u8 needs no other initialisation.
            unsafe { buf.set_len(n) };
            return Ok(buf);
        }
        buf = Vec::with_capacity(n);
    }
}

// The safe wrappers, one per import. A negative result is the import's code.

pub(crate) fn manifest(b: &[u8]) -> i32 {
    unsafe { imports::manifest(b.as_ptr(), len32(b)) }
}

pub(crate) fn register(kind: i32, spec: &[u8]) -> i32 {
    unsafe { imports::register(kind, spec.as_ptr(), len32(spec)) }
}

pub(crate) fn field(ctx: i32, field: i32) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::field(ctx, field, p, n) })
}

pub(crate) fn set_field(ctx: i32, field: i32, b: &[u8]) -> i32 {
    unsafe { imports::set_field(ctx, field, b.as_ptr(), len32(b)) }
}

pub(crate) fn messages_len(ctx: i32) -> i32 {
    unsafe { imports::messages_len(ctx) }
}

pub(crate) fn message(ctx: i32, index: i32) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::message(ctx, index, p, n) })
}

pub(crate) fn emit(ctx: i32, b: &[u8]) -> i32 {
    unsafe { imports::emit(ctx, b.as_ptr(), len32(b)) }
}

pub(crate) fn next(ctx: i32) -> i32 {
    unsafe { imports::next(ctx) }
}

pub(crate) fn state_get(ctx: i32) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::state_get(ctx, p, n) })
}

pub(crate) fn state_set(ctx: i32, b: &[u8]) -> i32 {
    unsafe { imports::state_set(ctx, b.as_ptr(), len32(b)) }
}

pub(crate) fn publish(ctx: i32, topic: &[u8], data: &[u8]) -> i32 {
    unsafe { imports::publish(ctx, topic.as_ptr(), len32(topic), data.as_ptr(), len32(data)) }
}

pub(crate) fn log(level: i32, b: &[u8]) -> i32 {
    unsafe { imports::log(level, b.as_ptr(), len32(b)) }
}

/// secret reads a secret; the caller wipes the bytes once it has the text.
pub(crate) fn secret(ctx: i32, name: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::secret(ctx, name.as_ptr(), len32(name), p, n) })
}

pub(crate) fn agents_request(ctx: i32, req: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::agents_request(ctx, req.as_ptr(), len32(req), p, n) })
}

pub(crate) fn agents_send(ctx: i32, req: &[u8]) -> i32 {
    unsafe { imports::agents_send(ctx, req.as_ptr(), len32(req)) }
}

pub(crate) fn window(ctx: i32) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::window(ctx, p, n) })
}

pub(crate) fn window_apply(ctx: i32, req: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::window_apply(ctx, req.as_ptr(), len32(req), p, n) })
}

pub(crate) fn complete(ctx: i32, req: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::complete(ctx, req.as_ptr(), len32(req), p, n) })
}

pub(crate) fn pause(ctx: i32, req: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::pause(ctx, req.as_ptr(), len32(req), p, n) })
}

pub(crate) fn set_error(b: &[u8]) -> i32 {
    unsafe { imports::set_error(b.as_ptr(), len32(b)) }
}

pub(crate) fn last_error() -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::last_error(p, n) })
}

pub(crate) fn file_read(ctx: i32, path: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::file_read(ctx, path.as_ptr(), len32(path), p, n) })
}

pub(crate) fn file_list(ctx: i32, path: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::file_list(ctx, path.as_ptr(), len32(path), p, n) })
}

pub(crate) fn file_write(ctx: i32, path: &[u8], data: &[u8], mode: i32) -> i32 {
    unsafe { imports::file_write(ctx, path.as_ptr(), len32(path), data.as_ptr(), len32(data), mode) }
}

/// wipe overwrites b with zeros in a way the compiler keeps (a secret's
/// bytes once decoded).
pub(crate) fn wipe(b: &mut [u8]) {
    for x in b.iter_mut() {
        // SAFETY: x is a valid, aligned &mut u8.
        unsafe { core::ptr::write_volatile(x, 0) };
    }
}

// The inbox: 24 bytes where the host keeps, for the hook whose code runs,
// its handle (bytes 0-7) and the generations of its INPUT_TEXT (8-15) and
// TOOL_NAME (16-23). The host writes it behind the compiler's back (in every
// import that may run a hook, and as each hook starts), so it is read with
// volatile loads.

#[repr(C, align(8))]
struct Inbox([u64; 3]);

static mut INBOX: Inbox = Inbox([0; 3]);
static mut INBOX_ON: bool = false;

/// inbox_slot returns slot i (0 handle, 1 input text's generation, 2 tool
/// name's) after registering the inbox at the first call. A refused
/// registration leaves the slots zero: every read then goes to the host.
pub(crate) fn inbox_slot(i: usize) -> u64 {
    // SAFETY: a wasm32 guest runs one thread, and the host writes the inbox
    // only while the guest is in an import or before a hook starts, never
    // during these loads.
    unsafe {
        if !INBOX_ON {
            INBOX_ON = true;
            imports::inbox(core::ptr::addr_of_mut!(INBOX) as *mut u8, 24);
        }
        core::ptr::read_volatile(core::ptr::addr_of!(INBOX.0[i]))
    }
}

// The guest exports (../ABI.md, "Guest exports"). ganglion_init is the
// guest's own, made by the extension! macro: it names the setup function.

/// ganglion_abi_version returns the ABI version this crate implements.
#[no_mangle]
pub extern "C" fn ganglion_abi_version() -> i32 {
    crate::ABI_VERSION
}

/// ganglion_turn runs the turn middleware registered as id.
#[no_mangle]
pub extern "C" fn ganglion_turn(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Turn, ctx, id)
}

/// ganglion_step runs the step middleware registered as id.
#[no_mangle]
pub extern "C" fn ganglion_step(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Step, ctx, id)
}

/// ganglion_tool_call runs the toolCall middleware registered as id.
#[no_mangle]
pub extern "C" fn ganglion_tool_call(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::ToolCall, ctx, id)
}

/// ganglion_tool runs the tool registered as id.
#[no_mangle]
pub extern "C" fn ganglion_tool(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Tool, ctx, id)
}

/// ganglion_event runs the event subscription registered as id.
#[no_mangle]
pub extern "C" fn ganglion_event(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Event, ctx, id)
}

/// ganglion_pending runs the pending kind registered as id (version 2).
#[no_mangle]
pub extern "C" fn ganglion_pending(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Pending, ctx, id)
}

/// ganglion_reply runs the reply hook registered as id (version 2).
#[no_mangle]
pub extern "C" fn ganglion_reply(ctx: i32, id: i32) -> i32 {
    dispatch(Kind::Reply, ctx, id)
}

pub(crate) fn http_request(ctx: i32, req: &[u8]) -> Result<Vec<u8>, i32> {
    read(|p, n| unsafe { imports::http_request(ctx, req.as_ptr(), len32(req), p, n) })
}

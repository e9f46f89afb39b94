//! Ganglion guest SDK for Rust: the guest ABI, version 2 (`sdk/ABI.md` in
//! the Ganglion repository), with safe types, for extensions compiled to
//! WebAssembly (`wasm32-unknown-unknown`; see README.md for the toolchain).
//!
//! A guest is a `cdylib` crate that names its manifest and its setup
//! function with [`extension!`]. Setup reads the extension's config and
//! registers middleware (turn, step, toolCall), tools and event
//! subscriptions through [`Api`]; each runs later with its hook's context:
//!
//! ```no_run
//! use ganglion::{Api, Manifest, Result};
//!
//! ganglion::extension!(Manifest::new("hello", "1.0.0"), setup);
//!
//! fn setup(api: &Api) -> Result<()> {
//!     api.turn(|t| {
//!         ganglion::log::info(&format!("turn: {}", t.input_text()?));
//!         t.next()
//!     });
//!     Ok(())
//! }
//! ```
//!
//! # The modules
//!
//! - [`api`]: the manifest, the config, registering, and running hooks;
//! - [`context`]: what a hook reads and writes: fields, messages, state,
//!   events, secrets, other agents;
//! - [`window`]: a step's context window and model calls;
//! - [`pending`]: pausing a turn for a human, with kinds of item of the
//!   extension's own;
//! - [`files`]: the agent's workspace files the config grants;
//! - [`types`]: the ABI's structured values; [`json`]: the JSON they travel
//!   as;
//! - [`log`]: the host's log;
//! - `sys` (private): the imports and exports, the crate's only unsafe code.
//!
//! A capability the ABI adds gets a module of its own beside these, and a
//! context method where a hook uses it.
//!
//! # Errors
//!
//! Every call into the host returns a [`Result`]; an [`Error`] is a host
//! refusal (with its [`Code`] and the host's message) or a failure of the
//! guest's own. A hook that returns an error fails (the extension's
//! `on_error` decides what that does to the turn), except that returning
//! the failure its `next` reported passes that failure on unchanged, not
//! blamed on the extension, as the host reported it; a tool's error becomes
//! an error result the model reads. A panic traps: the hook fails with the
//! panic's message and the host starts a fresh instance for the next call.
//!
//! # Concurrency
//!
//! A guest runs one hook at a time, but a hook's `next` may run another
//! hook of the same instance (an inner layer of the same extension), so
//! handlers are `Fn` and keep mutable data in a `Cell` or `RefCell` they do
//! not hold borrowed across `next`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod context;
pub mod http;
mod error;
pub mod files;
pub mod json;
pub mod log;
pub mod pending;
mod sys;
pub mod types;
pub mod window;

pub use api::{Api, Config, Manifest};
pub use context::{AgentOptions, AgentReply, Agents, Context, Event, Step, ToolCall, Turn};
pub use error::{Code, Error, Result};
pub use files::{FileAccess, FileEntry, Files};
pub use json::Value;
pub use types::{InputEvent, Message, MessageEvent, Source, StepResult, ToolResult, ToolSpec, TurnResult};
pub use window::{Completion, CompletionRequest, Window, WindowMessage};

/// ABI_VERSION is the guest ABI version this crate implements.
pub const ABI_VERSION: i32 = 2;

/// extension! declares the extension: the export `ganglion_init`, which
/// runs `setup` (a `fn(&Api) -> Result<()>`) and declares `manifest` with
/// the hooks, tools and subscriptions setup registered. Use it once, in the
/// guest's crate root.
#[macro_export]
macro_rules! extension {
    ($manifest:expr, $setup:expr) => {
        /// ganglion_init is the guest export the host calls once per instance.
        #[no_mangle]
        pub extern "C" fn ganglion_init() -> i32 {
            $crate::api::init($manifest, $setup)
        }
    };
}

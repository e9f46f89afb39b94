//! Logging to the host's log, which adds the agent and the extension's
//! name; usable anywhere, also outside hooks. Logging is rate-limited by
//! the host: a record past the limit is dropped, and these functions do
//! not report it.

use crate::sys;

/// Level is a log record's level: the host's slog levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// -4.
    Debug = -4,
    /// 0.
    Info = 0,
    /// 4.
    Warn = 4,
    /// 8.
    Error = 8,
}

/// log writes msg at level.
pub fn log(level: Level, msg: &str) {
    sys::log(level as i32, msg.as_bytes());
}

/// debug writes msg at debug level.
pub fn debug(msg: &str) {
    log(Level::Debug, msg);
}

/// info writes msg at info level.
pub fn info(msg: &str) {
    log(Level::Info, msg);
}

/// warn writes msg at warn level.
pub fn warn(msg: &str) {
    log(Level::Warn, msg);
}

/// error writes msg at error level.
pub fn error(msg: &str) {
    log(Level::Error, msg);
}

/// install_panic_hook makes a panic log its message and location at error
/// level and give the message to the host as the hook's error. A panic
/// then aborts, which traps: wasm32 has no unwinding, so the hook cannot
/// return as a failure, and the host throws the instance away.
pub(crate) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "(a panic without a message)".to_string()
        };
        let at = match info.location() {
            Some(l) => format!(" at {}:{}:{}", l.file(), l.line(), l.column()),
            None => String::new(),
        };
        error(&format!("panic: {}{}", msg, at));
        sys::set_error(msg.as_bytes());
    }));
}

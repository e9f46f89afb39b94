//! Errors: a host import's refusal, a hook's own failure, a config problem.

use std::fmt;

/// Code is a host import's negative result (../ABI.md, "Results and error
/// codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// -1: a bad argument: unknown field or kind, malformed JSON, invalid UTF-8.
    Invalid,
    /// -2: no such message index, state, secret.
    NotFound,
    /// -3: not declared in the manifest, or not granted by the config.
    Denied,
    /// -4: the operation failed; the message says why.
    Failed,
    /// -5: a (ptr, len) outside the guest's memory.
    Bounds,
    /// -6: a value over the extension's max_payload, or over a bound of one hook call.
    TooLarge,
    /// -7: a handle whose hook call has ended.
    Stale,
    /// -8: an import used where it is not allowed.
    Phase,
    /// A negative result this crate does not know (a newer host's).
    Other(i32),
}

impl Code {
    /// from_result returns the code of a negative import result.
    pub fn from_result(n: i32) -> Code {
        match n {
            -1 => Code::Invalid,
            -2 => Code::NotFound,
            -3 => Code::Denied,
            -4 => Code::Failed,
            -5 => Code::Bounds,
            -6 => Code::TooLarge,
            -7 => Code::Stale,
            -8 => Code::Phase,
            n => Code::Other(n),
        }
    }

    /// name returns the code's name as ../ABI.md spells it: `NOT_FOUND`.
    pub fn name(self) -> String {
        match self {
            Code::Invalid => "INVALID".into(),
            Code::NotFound => "NOT_FOUND".into(),
            Code::Denied => "DENIED".into(),
            Code::Failed => "FAILED".into(),
            Code::Bounds => "BOUNDS".into(),
            Code::TooLarge => "TOO_LARGE".into(),
            Code::Stale => "STALE".into(),
            Code::Phase => "PHASE".into(),
            Code::Other(n) => format!("code {}", n),
        }
    }
}

/// Error is why something failed: a host import's refusal (with its
/// [`Code`] and the host's message), or a failure of the guest's own.
/// Returned from a hook, its text becomes the hook's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    op: String,
    code: Option<Code>,
    msg: String,
    next: bool,
}

impl Error {
    /// new returns a failure of the guest's own; its text is `msg`.
    pub fn new(msg: impl Into<String>) -> Error {
        Error { op: String::new(), code: None, msg: msg.into(), next: false }
    }

    /// config returns a problem with the extension's config: section at
    /// `path` (written from `$`: `$.block`, `$.rules[2].name`). Its text,
    /// `config: PATH: MSG`, makes the host report it at that value of the
    /// agent's config file, with file, line and column.
    pub fn config(path: &str, msg: impl Into<String>) -> Error {
        Error::new(format!("config: {}: {}", path, msg.into()))
    }

    /// host returns a refusal of import `op` with result `n`, reading the
    /// host's message with last_error.
    pub(crate) fn host(op: &str, n: i32) -> Error {
        let msg = match crate::sys::last_error() {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(_) => String::new(),
        };
        Error { op: op.to_string(), code: Some(Code::from_result(n)), msg, next: false }
    }

    /// next_failed returns the failure of the rest of the chain that a
    /// hook's next reported (FAILED).
    pub(crate) fn next_failed(n: i32) -> Error {
        Error { next: n == -4, ..Error::host("next", n) }
    }

    /// is_next_failure reports whether the error is the failure of the rest
    /// of the chain that next returned. A hook that returns it passes that
    /// failure on as the host reported it, not blamed on the extension.
    pub fn is_next_failure(&self) -> bool {
        self.next
    }

    /// code returns the host's code, or None for a failure of the guest's own.
    pub fn code(&self) -> Option<Code> {
        self.code
    }

    /// is_not_found reports whether the host answered NOT_FOUND.
    pub fn is_not_found(&self) -> bool {
        self.code == Some(Code::NotFound)
    }

    /// message returns the host's message, or the guest's own text.
    pub fn message(&self) -> &str {
        &self.msg
    }
}

/// A host refusal reads `ganglion: OP: MESSAGE` (`ganglion: OP: CODE` when
/// the host gave no message); a guest's own failure reads as its text.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            None => f.write_str(&self.msg),
            Some(c) if self.msg.is_empty() => write!(f, "ganglion: {}: {}", self.op, c.name()),
            Some(_) => write!(f, "ganglion: {}: {}", self.op, self.msg),
        }
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(msg: String) -> Error {
        Error::new(msg)
    }
}

impl From<&str> for Error {
    fn from(msg: &str) -> Error {
        Error::new(msg)
    }
}

impl From<crate::json::ParseError> for Error {
    fn from(e: crate::json::ParseError) -> Error {
        Error::new(e.to_string())
    }
}

/// Result is a result whose error is an [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// check turns an import's result into Ok(n) or the host's refusal.
pub(crate) fn check(op: &str, n: i32) -> Result<i32> {
    if n < 0 {
        Err(Error::host(op, n))
    } else {
        Ok(n)
    }
}

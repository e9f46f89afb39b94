//! Files of the agent's workspace (ABI version 2): a hook reads, lists and
//! writes the paths its manifest's [`Files`] name, which the agent's config
//! must grant (`files: read:`, `write:`), or the module does not load.
//!
//! Paths are relative to the workspace. A path out of the manifest's files,
//! up with `..`, absolute, or through a symbolic link that leads out of its
//! grant is refused with `Code::Denied`; a missing file is
//! `Code::NotFound`. Every context has these methods through
//! [`FileAccess`]:
//!
//! ```no_run
//! use ganglion::{Api, FileAccess, Files, Manifest, Result};
//!
//! ganglion::extension!(
//!     Manifest { files: Files { read: vec!["CODEOWNERS".into()], write: vec![] }, ..Manifest::new("owners", "1.0.0") },
//!     setup
//! );
//!
//! fn setup(api: &Api) -> Result<()> {
//!     api.turn(|t| {
//!         let owners = t.read_file("CODEOWNERS")?;
//!         ganglion::log::info(&format!("CODEOWNERS has {} bytes", owners.len()));
//!         t.next()
//!     });
//!     Ok(())
//! }
//! ```

use crate::context::Context;
use crate::error::{check, Error, Result};
use crate::json::Value;
use crate::sys;

/// Files are paths of the agent's workspace, relative to it and clean (no
/// empty, `.` or `..` part): a file (`CODEOWNERS`), a directory and all
/// under it (`docs/`), or `.` for the whole workspace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Files {
    /// The paths the extension reads.
    pub read: Vec<String>,
    /// The paths the extension writes, and reads.
    pub write: Vec<String>,
}

impl Files {
    pub(crate) fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty()
    }

    pub(crate) fn to_json(&self) -> Value {
        Value::object().with("read", self.read.clone()).with("write", self.write.clone())
    }
}

/// FileEntry is one entry of a directory [`FileAccess::list_files`] lists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileEntry {
    /// The entry's name in the directory.
    pub name: String,
    /// Whether it is a directory (or a symbolic link to one in the grant).
    pub dir: bool,
    /// A file's size in bytes; 0 for a directory.
    pub size: i64,
}

/// file_write's modes.
const REPLACE: i32 = 0;
const APPEND: i32 = 1;

/// FileAccess reads and writes the workspace's files from any hook's
/// context: `use ganglion::FileAccess` to call its methods.
pub trait FileAccess: Context {
    /// read_file returns the whole file at `path`, at most the extension's
    /// `max_payload` (1 MiB by default). The path must be one of the
    /// manifest's files, or under one.
    fn read_file(&self, path: &str) -> Result<Vec<u8>> {
        sys::file_read(self.handle(), path.as_bytes()).map_err(|n| Error::host("file_read", n))
    }

    /// list_files returns the entries of the directory at `path`, sorted by
    /// name.
    fn list_files(&self, path: &str) -> Result<Vec<FileEntry>> {
        let b = sys::file_list(self.handle(), path.as_bytes()).map_err(|n| Error::host("file_list", n))?;
        let v = Value::parse(&String::from_utf8_lossy(&b)).map_err(|e| Error::new(format!("file_list: {}", e)))?;
        let entries = v.as_array().unwrap_or(&[]);
        Ok(entries
            .iter()
            .map(|e| FileEntry {
                name: e.str_or_empty("name"),
                dir: e.get("dir").and_then(Value::as_bool).unwrap_or(false),
                size: e.get("size").and_then(Value::as_i64).unwrap_or(0),
            })
            .collect())
    }

    /// write_file replaces the file at `path` with `data` (readers see the
    /// old content or the new, never a mix), creating it and its missing
    /// directories. The path must be one of the manifest's `files.write`,
    /// or under one.
    fn write_file(&self, path: &str, data: &[u8]) -> Result<()> {
        check("file_write", sys::file_write(self.handle(), path.as_bytes(), data, REPLACE)).map(|_| ())
    }

    /// append_file adds `data` at the end of the file at `path`, creating
    /// it as write_file does.
    fn append_file(&self, path: &str, data: &[u8]) -> Result<()> {
        check("file_write", sys::file_write(self.handle(), path.as_bytes(), data, APPEND)).map(|_| ())
    }
}

impl<T: Context + ?Sized> FileAccess for T {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_files() {
        let f = Files { read: vec!["CODEOWNERS".into(), "docs/".into()], write: vec!["out/".into()] };
        assert!(!f.is_empty());
        assert!(Files::default().is_empty());
        assert_eq!(f.to_json().to_string(), r#"{"read":["CODEOWNERS","docs/"],"write":["out/"]}"#);
    }
}

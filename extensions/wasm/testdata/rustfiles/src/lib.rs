//! A Rust guest that reads, lists and writes workspace files through the
//! SDK's FileAccess, for the host's tests (extensions/wasm/files_test.go).
//! Its turn hook answers the turn itself, as testdata/gofiles does:
//!
//! - "owners": with the content of CODEOWNERS;
//! - "docs": with the names in docs/, a "/" after a directory's;
//! - "note TEXT": appends TEXT and a newline to out/notes.txt, and answers
//!   with the file's new content;
//! - "steal": reads ../outside/secret.txt, and answers with the error.
//!
//! Any other input goes on to next.

use ganglion::{Api, FileAccess, Files, Manifest, Result, Turn, TurnResult};

ganglion::extension!(
    Manifest {
        files: Files { read: vec!["CODEOWNERS".to_string(), "docs/".to_string()], write: vec!["out/".to_string()] },
        ..Manifest::new("rustfiles", "1.0.0")
    },
    setup
);

fn setup(api: &Api) -> Result<()> {
    api.turn(turn);
    Ok(())
}

fn turn(t: &Turn) -> Result<()> {
    let input = t.input_text()?;
    let answer = if input == "owners" {
        String::from_utf8_lossy(&t.read_file("CODEOWNERS")?).into_owned()
    } else if input == "docs" {
        let names: Vec<String> = t
            .list_files("docs")?
            .into_iter()
            .map(|e| if e.dir { e.name + "/" } else { e.name })
            .collect();
        names.join(" ")
    } else if let Some(text) = input.strip_prefix("note ") {
        t.append_file("out/notes.txt", format!("{}\n", text).as_bytes())?;
        String::from_utf8_lossy(&t.read_file("out/notes.txt")?).into_owned()
    } else if input == "steal" {
        match t.read_file("../outside/secret.txt") {
            Ok(_) => "read it".to_string(),
            Err(e) => format!("refused: {}", e),
        }
    } else {
        return t.next();
    };
    t.set_result(&TurnResult::text(answer))
}

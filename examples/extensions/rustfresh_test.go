package extensions_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRustQuestionFresh rebuilds rust-question.wasm from its source with
// the command its README gives (Debian's toolchain, offline, the
// repository's path remapped so that the module holds none) and compares
// it byte for byte with the committed module, which ganglion ext test
// replays without a toolchain. It skips when the toolchain is not
// installed (apt-get install rustc cargo libstd-rust-dev-wasm32).
func TestRustQuestionFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Rust guest with cargo")
	}
	for _, p := range []string{"/usr/bin/rustc", "/usr/bin/cargo", "/usr/lib/rustlib/wasm32-unknown-unknown"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Debian's Rust toolchain for wasm32 is not installed (%s is missing): apt-get install rustc cargo libstd-rust-dev-wasm32", p)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "/usr/bin/cargo", "build", "--offline", "--locked", "--release", "--quiet",
		"--target", "wasm32-unknown-unknown", "--target-dir", target)
	cmd.Dir = "rust-question"
	cmd.Env = append(os.Environ(), "RUSTC=/usr/bin/rustc", "RUSTFLAGS=--remap-path-prefix="+root+"=ganglion", "CARGO_TARGET_DIR=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo build: %v\n%s", err, b)
	}
	built, err := os.ReadFile(filepath.Join(target, "wasm32-unknown-unknown", "release", "rust_question.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("rust-question", "rust-question.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		t.Errorf("rust-question/rust-question.wasm is stale: the source builds a different module (%d bytes, committed %d); rebuild it with the command in rust-question/README.md", len(built), len(committed))
	}
}

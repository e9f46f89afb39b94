package guesttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The Rust toolchain that builds wasm32 guests offline: Debian's rustc and
// cargo with its wasm32 standard library. A rustc installed by rustup
// usually lacks the wasm32 target and cannot fetch it offline, so the build
// names these paths rather than what PATH finds.
const (
	rustc       = "/usr/bin/rustc"
	cargo       = "/usr/bin/cargo"
	rustTarget  = "wasm32-unknown-unknown"
	rustStdDir  = "/usr/lib/rustlib/" + rustTarget + "/lib"
	rustPackage = "rustc cargo libstd-rust-dev-wasm32"
)

// RustSet is the Rust guests of one test binary. The zero value is ready;
// Build builds them on its first call.
type RustSet struct {
	once    sync.Once
	dir     string
	paths   map[string]string
	missing string // why the toolchain cannot build, if it cannot
	err     error
}

// Build builds the Rust crates in dirs (relative to the test's directory,
// each a cdylib whose Cargo.lock is committed) with Debian's toolchain,
// offline, the first time it is called, and returns the modules by the base
// name of their directory and the compilation cache that holds their code.
// It skips the test under -short, and when the toolchain is not installed,
// naming the Debian packages to install.
func (s *RustSet) Build(tb testing.TB, dirs ...string) (modules map[string]string, cache string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds Rust guests with cargo")
	}
	s.once.Do(func() { s.err = s.build(dirs) })
	if s.missing != "" {
		tb.Skip(s.missing)
	}
	if s.err != nil {
		tb.Fatal(s.err)
	}
	checkBuilt(tb, s.paths, dirs)
	return s.paths, filepath.Join(s.dir, "wasm-cache")
}

// Close removes what Build made; call it from TestMain.
func (s *RustSet) Close() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *RustSet) build(dirs []string) error {
	for _, p := range []string{rustc, cargo, rustStdDir} {
		if _, err := os.Stat(p); err != nil {
			s.missing = fmt.Sprintf("builds Rust guests with Debian's toolchain, and %s is missing: apt-get install %s", p, rustPackage)
			return nil
		}
	}
	dir, err := os.MkdirTemp("", "ganglion-rust-guests-")
	if err != nil {
		return err
	}
	s.dir, s.paths = dir, map[string]string{}
	var warm string
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() { warm, werr = buildWarm(dir) })
	// One target directory for all crates, so that the SDK compiles once.
	target := filepath.Join(dir, "target")
	var errs []error
	for _, d := range dirs {
		name := filepath.Base(d)
		out := filepath.Join(dir, name+".wasm")
		s.paths[name] = out
		if err := cargoBuild(d, target, out); err != nil {
			errs = append(errs, err)
		}
	}
	wg.Wait()
	if err := errors.Join(append(errs, werr)...); err != nil {
		return err
	}
	return runWarm(warm, dir, dirs, s.paths)
}

// cargoBuild builds the cdylib crate in dir for wasm32, in release, and
// copies its module to out.
func cargoBuild(dir, target, out string) error {
	cmd := exec.Command(cargo, "build", "--offline", "--locked", "--release", "--quiet", "--target", rustTarget, "--target-dir", target)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUSTC="+rustc, "RUSTFLAGS=", "CARGO_TARGET_DIR=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cargo build %s: %v\n%s", dir, err, b)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The module is named after the package, which is the directory's
	// name, with cargo's "-" made "_" (rust-question: rust_question.wasm).
	built := filepath.Join(target, rustTarget, "release", strings.ReplaceAll(filepath.Base(abs), "-", "_")+".wasm")
	b, err := os.ReadFile(built)
	if err != nil {
		return fmt.Errorf("cargo build %s: %w", dir, err)
	}
	return os.WriteFile(out, b, 0o644)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// guestLang says the language of the guest in dir from the file that marks
// it: Cargo.toml (Rust), package.json (AssemblyScript) or go.mod (Go); ""
// when it has none. One with more than one is an error that asks for
// --lang.
func guestLang(dir string) (string, error) {
	var found, marks []string
	for _, l := range langs {
		if m := langMarker(l); exists(filepath.Join(dir, m)) {
			found, marks = append(found, l), append(marks, m)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", usageError("%s holds %s: name the guest's language with --lang", dir, strings.Join(marks, " and "))
}

// buildGo compiles the Go package in dir into out.
func buildGo(ctx context.Context, dir, out string, stderr io.Writer) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building a Go guest needs the go command on PATH: %w", err)
	}
	build := exec.CommandContext(ctx, goBin, append(append([]string{}, guestBuildArgs...), "-o", out, ".")...)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	return nil
}

// The Rust toolchain that builds wasm32 guests offline: Debian's rustc and
// cargo with its standard library for wasm32 (package
// libstd-rust-dev-wasm32). A rustc installed by rustup has no wasm32
// target unless "rustup target add" fetched one, which needs the network.
const (
	debianCargo = "/usr/bin/cargo"
	debianRustc = "/usr/bin/rustc"
	rustTarget  = "wasm32-unknown-unknown"
	rustInstall = "install Debian's Rust for wasm32: apt-get install rustc cargo libstd-rust-dev-wasm32 " +
		"(a rustup toolchain needs rustup target add " + rustTarget + ", which needs the network)"
)

// rustToolchain finds the cargo and rustc that build a guest: those that
// $CARGO and $RUSTC name, else Debian's when it is installed, else the
// cargo on PATH and the rustc beside it. The rustc must have the standard
// library for wasm32-unknown-unknown.
func rustToolchain(ctx context.Context) (cargo, rustc string, err error) {
	cargo, rustc = os.Getenv("CARGO"), os.Getenv("RUSTC")
	switch {
	case cargo != "":
		if _, err := exec.LookPath(cargo); err != nil {
			return "", "", fmt.Errorf("building a Rust guest needs cargo, and $CARGO names %s, which is not a program: %s", cargo, rustInstall)
		}
	case exists(debianCargo) && (rustc != "" || exists(debianRustc)):
		cargo = debianCargo
	default:
		p, err := exec.LookPath("cargo")
		if err != nil {
			return "", "", fmt.Errorf("building a Rust guest needs cargo, and there is none (not %s, not on PATH): %s", debianCargo, rustInstall)
		}
		cargo = p
	}
	if rustc == "" {
		rustc = filepath.Join(filepath.Dir(cargo), "rustc")
		if cargo == debianCargo {
			rustc = debianRustc
		}
		if !exists(rustc) {
			if rustc, err = exec.LookPath("rustc"); err != nil {
				return "", "", fmt.Errorf("building a Rust guest needs rustc, and there is none (not beside %s, not on PATH): %s", cargo, rustInstall)
			}
		}
	}
	out, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return "", "", fmt.Errorf("building a Rust guest needs rustc, and %s --print sysroot failed (%v): %s", rustc, err, rustInstall)
	}
	std := filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", rustTarget, "lib")
	if !exists(std) {
		return "", "", fmt.Errorf("building a Rust guest needs the standard library for %s, and the rustc at %s has none (no %s): %s",
			rustTarget, rustc, std, rustInstall)
	}
	return cargo, rustc, nil
}

// buildRust compiles the cdylib crate in dir for wasm32-unknown-unknown,
// in release, and copies its module to out. cargo runs without --offline,
// so that a guest may depend on crates.io; the scaffold's crate needs no
// network.
func buildRust(ctx context.Context, dir, out string, stderr io.Writer) error {
	cargo, rustc, err := rustToolchain(ctx)
	if err != nil {
		return err
	}
	build := exec.CommandContext(ctx, cargo, "build", "--release", "--target", rustTarget, "--message-format=json-render-diagnostics")
	build.Dir = dir
	build.Env = append(os.Environ(), "RUSTC="+rustc)
	var msgs bytes.Buffer
	build.Stdout, build.Stderr = &msgs, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("cargo build in %s: %w", dir, err)
	}
	// The module is the .wasm of the cdylib artifact cargo reports.
	var modules []string
	sc := bufio.NewScanner(&msgs)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			Reason    string   `json:"reason"`
			Filenames []string `json:"filenames"`
			Target    struct {
				Kind []string `json:"kind"`
			} `json:"target"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Reason != "compiler-artifact" {
			continue
		}
		for _, f := range m.Filenames {
			if strings.HasSuffix(f, ".wasm") {
				modules = append(modules, f)
			}
		}
	}
	switch len(modules) {
	case 0:
		return fmt.Errorf("cargo build in %s built no .wasm module: the crate's Cargo.toml needs [lib] crate-type = [\"cdylib\"]", dir)
	case 1:
	default:
		return fmt.Errorf("cargo build in %s built %d modules (%s): build the guest's own crate, not a workspace", dir, len(modules), strings.Join(modules, ", "))
	}
	return copyFile(modules[0], out)
}

// buildAssemblyScript compiles the AssemblyScript guest in dir into out
// with the compiler its npm install put in node_modules.
func buildAssemblyScript(ctx context.Context, dir, out string, stderr io.Writer) error {
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("building an AssemblyScript guest needs Node.js, and node is not on PATH: install it (apt-get install nodejs npm), then run npm install in %s", dir)
	}
	asc := filepath.Join(dir, "node_modules", "assemblyscript", "bin", "asc.js")
	if !exists(asc) {
		return fmt.Errorf("building an AssemblyScript guest needs its compiler, and %s has none (no node_modules/assemblyscript): "+
			"run npm install in %s, which fetches the npm package assemblyscript", dir, dir)
	}
	build := exec.CommandContext(ctx, node, asc, "--config", "asconfig.json", "-o", out)
	build.Dir = dir
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("asc in %s: %w", dir, err)
	}
	return nil
}

// copyFile copies the file from to to.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

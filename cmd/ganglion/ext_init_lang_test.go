package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The toolchains the Rust and AssemblyScript guests build with, and what
// the tests that need them tell when they skip.
const (
	rustStd     = "/usr/lib/rustlib/" + rustTarget + "/lib"
	rustMissing = "apt-get install rustc cargo libstd-rust-dev-wasm32"
	npmMissing  = "apt-get install nodejs npm"
)

// needRust skips t unless Debian's Rust for wasm32 is installed.
func needRust(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Rust guest with cargo")
	}
	for _, p := range []string{debianRustc, debianCargo, rustStd} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("builds a Rust guest with Debian's toolchain, and %s is missing: %s", p, rustMissing)
		}
	}
}

// needNPM skips t unless node and npm are on PATH.
func needNPM(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("installs the AssemblyScript compiler with npm")
	}
	for _, p := range []string{"node", "npm"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("builds an AssemblyScript guest with Node.js, and %s is not on PATH: %s", p, npmMissing)
		}
	}
}

// npmInstall runs npm install args in dir, from npm's cache when it holds
// the compiler (CI's npm ci of sdk/assemblyscript put it there). It skips
// the test when npm cannot reach its registry.
func npmInstall(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "npm", append([]string{"install", "--prefer-offline", "--no-audit", "--no-fund"}, args...)...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		for _, net := range []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH"} {
			if bytes.Contains(b, []byte(net)) {
				t.Skipf("npm install cannot reach npm's registry to fetch assemblyscript (%s):\n%s", net, b)
			}
		}
		t.Fatalf("npm install %s in %s: %v\n%s", strings.Join(args, " "), dir, err, b)
	}
}

// TestExtInitLangs follows an extension author outside the repository in
// Rust and in AssemblyScript, as TestExtInit does in Go: ext init writes
// the guest, ext build compiles it (cargo offline; asc after npm install
// fetched only the compiler), run talks to an agent that loads it, the
// README's test loop records and replays a session, and inspect shows the
// same manifest, hooks and tools as the Go guest's. Then the SDK copy is
// replaced with --sdk-only, which finds the language from the directory.
func TestExtInitLangs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang    string
		need    func(*testing.T)
		src     string   // the SDK the copy is of
		env     []string // ext build's environment: no network for cargo
		install bool     // npm install before ext build
		main    string   // the extension's source
	}{
		{langRust, needRust, filepath.Join("..", "..", "sdk", "rust"), []string{"CARGO_NET_OFFLINE=true"}, false, "src/lib.rs"},
		{langAssemblyScript, needNPM, filepath.Join("..", "..", "sdk", "assemblyscript"), nil, true, "assembly/index.ts"},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			tt.need(t)
			t.Parallel()
			parent := t.TempDir()
			dir := filepath.Join(parent, "hello")

			r := exe(t, parent, "", "ext", "init", "--lang", tt.lang, "hello")
			check(t, "ext init", r, exitOK, nil, ptr(""), "")
			golden(t, "ext_init_"+tt.lang, "", strings.ReplaceAll(r.stdout, cliVersion(t), "$VERSION"))
			checkLangSDKCopy(t, tt.src, dir)
			src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tt.main)))
			must(t, err)
			if !bytes.Contains(src, []byte(`"hello"`)) {
				t.Errorf("%s does not name the extension hello:\n%s", tt.main, src)
			}

			if tt.install {
				npmInstall(t, dir)
			}
			r = exeEnv(t, parent, tt.env, "ext", "build", "hello")
			wasm := filepath.Join(dir, "hello.wasm")
			if r.code != exitOK || !strings.HasPrefix(r.stdout, "built "+wasm+" (") ||
				!strings.HasSuffix(r.stdout, " bytes): hello 0.1.0, hooks turn, tools greet\n") {
				t.Fatalf("ext build: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}

			r = exe(t, parent, "", "run", "hello", "--log-level", "info", "hello")
			check(t, "run", r, exitOK, ptr("Let me ask the hello extension.\n"+
				"[tool] greet {\"name\":\"world\"}\n"+
				"[tool] greet -> Hello, world!\n"+
				"The extension says: Hello, world!\n"), nil, "")
			for _, want := range []string{`msg="turn starts input=hello" agent=assistant extension=hello`,
				`msg="turn ends finish_reason=text_response" agent=assistant extension=hello`} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("run's log lacks the middleware's line %q:\n%s", want, r.stderr)
				}
			}

			r = exe(t, dir, "", "record", filepath.Join("cassettes", "hello.cassette"), ".", "hello")
			check(t, "record", r, exitOK, nil, nil, "")
			r = exe(t, dir, "", "ext", "test", ".")
			check(t, "ext test", r, exitOK, ptr("ok   hello.cassette (wrote hello.golden)\nok: 1 cassettes\n"), nil, "")

			r = exe(t, parent, "", "ext", "inspect", "--json", filepath.Join("hello", "hello.wasm"))
			var info struct {
				Manifest struct{ Name, Version string }
				Hooks    []string
				Tools    []string
			}
			if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Manifest.Name != "hello" || info.Manifest.Version != "0.1.0" ||
				!slices.Equal(info.Hooks, []string{"turn"}) || !slices.Equal(info.Tools, []string{"greet"}) {
				t.Errorf("ext inspect: %v\n%s%s", err, r.stdout, r.stderr)
			}

			must(t, os.RemoveAll(filepath.Join(dir, sdkDir)))
			r = exe(t, parent, "", "ext", "init", "--sdk-only", "hello")
			check(t, "ext init --sdk-only", r, exitOK, ptr("Wrote hello/ganglion-sdk: the "+langTitle(tt.lang)+" guest SDK of this ganglion ("+cliVersion(t)+").\n"+
				"Next, rebuild the extension with it:\n  ganglion ext build hello\n"), ptr(""), "")
			checkLangSDKCopy(t, tt.src, dir)
			r = exeEnv(t, parent, tt.env, "ext", "build", "hello")
			check(t, "ext build with the new copy", r, exitOK, nil, nil, "")
		})
	}
}

// checkLangSDKCopy checks that dir/ganglion-sdk holds the files of the SDK
// at src that the guest needs, byte for byte, and ABI.md.
func checkLangSDKCopy(t *testing.T, src, dir string) {
	t.Helper()
	copyDir := filepath.Join(dir, sdkDir)
	var got []string
	must(t, filepath.WalkDir(copyDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(copyDir, p)
		got = append(got, filepath.ToSlash(rel))
		return err
	}))
	var want []string
	must(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir() && (rel == "node_modules" || rel == "target" || rel == "test" || rel == "build"):
			return fs.SkipDir
		case d.IsDir(), strings.HasSuffix(rel, ".go"), rel == "package-lock.json", rel == "Cargo.lock", rel == ".gitignore":
			return nil
		}
		want = append(want, rel)
		a, err := os.ReadFile(p)
		must(t, err)
		b, err := os.ReadFile(filepath.Join(copyDir, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("the SDK copy's %s differs from %s (%v)", rel, p, err)
		}
		return nil
	}))
	want = append(want, "ABI.md")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the SDK copy holds %v, want %v", got, want)
	}
}

// TestAssemblyScriptSDKPack installs the AssemblyScript SDK as an npm
// package, from the tarball npm pack makes of sdk/assemblyscript, into a
// project outside the repository, and builds a guest with it: the package
// holds what a guest needs (the API, the hook exports, the JSON module and
// the compiler options), and npm installs the compiler it needs beside it.
func TestAssemblyScriptSDKPack(t *testing.T) {
	needNPM(t)
	t.Parallel()
	tmp := t.TempDir()
	pack := exec.CommandContext(t.Context(), "npm", "pack", "--pack-destination", tmp)
	pack.Dir = filepath.Join("..", "..", "sdk", "assemblyscript")
	b, err := pack.Output()
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, b)
	}
	tgz := filepath.Join(tmp, strings.TrimSpace(string(b)))
	if filepath.Base(tgz) != "ganglion-assemblyscript-0.1.0.tgz" {
		t.Errorf("npm pack wrote %q, want ganglion-assemblyscript-0.1.0.tgz", filepath.Base(tgz))
	}

	dir := filepath.Join(tmp, "guard")
	for name, text := range map[string]string{
		"package.json":  `{"name": "guard", "version": "1.0.0", "private": true}`,
		"asconfig.json": `{"extends": "./node_modules/@ganglion/assemblyscript/asconfig.json", "entries": ["assembly/index.ts"]}`,
		"assembly/index.ts": `import { Field, Hook, failed, manifest, registerToolCall } from "@ganglion/assemblyscript/assembly";
import * as json from "@ganglion/assemblyscript/assembly/json";
export { ganglion_abi_version, ganglion_tool_call } from "@ganglion/assemblyscript/assembly/exports";

export function ganglion_init(): i32 {
  if (manifest(json.object().set("name", "guard").set("version", "1.0.0").set("abi", 1).set("hooks", ["tool_call"]).toString()) < 0) return failed("manifest");
  if (registerToolCall(guard) < 0) return failed("register");
  return 0;
}

// guard refuses the tool delete, and lets any other call run.
function guard(h: Hook): i32 {
  const tool = h.field(Field.TOOL_NAME);
  if (tool === null) return failed("read the tool's name");
  if (tool == "delete") {
    return h.setResult(json.object().set("content", "refused by guard").set("is_error", true).toString()) < 0 ? failed("set the result") : 0;
  }
  h.next(); // a failure goes on unchanged
  return 0;
}
`,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(text), 0o644))
	}
	npmInstall(t, dir, tgz)
	for _, p := range []string{"@ganglion/assemblyscript/assembly/json.ts", "@ganglion/assemblyscript/asconfig.json", "assemblyscript/bin/asc.js"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p))); err != nil {
			t.Errorf("npm install of the tarball: %v", err)
		}
	}
	r := exeEnv(t, tmp, nil, "ext", "build", "guard")
	if want := " bytes): guard 1.0.0, hooks tool_call, tools (none)\n"; r.code != exitOK || !strings.HasSuffix(r.stdout, want) {
		t.Fatalf("ext build: exit %d, want a module that ends %q\nstdout:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
}

// TestExtLangRefuses: an unknown --lang, a directory of two languages and
// a missing toolchain are refused with what to do.
func TestExtLangRefuses(t *testing.T) {
	t.Parallel()
	fakeRustc := func(t *testing.T, dir string) string {
		// A rustc whose sysroot has no wasm32 standard library, as a rustup
		// toolchain without the target.
		p := filepath.Join(dir, "rustc")
		must(t, os.WriteFile(p, []byte("#!/bin/sh\necho "+dir+"/sysroot\n"), 0o755))
		return p
	}
	tests := []struct {
		name  string
		files []string                                   // files to create under $DIR/x
		env   func(t *testing.T, parent string) []string // the CLI's environment
		args  []string
		code  int
		want  string // stderr; $DIR is the parent directory
	}{
		{"ext init, unknown --lang", nil, nil, []string{"ext", "init", "--lang", "cobol", "x"}, exitUsage,
			"ganglion: --lang: unknown language \"cobol\" (want go, rust or assemblyscript)\n"},
		{"ext init --sdk-only, unknown --lang", []string{"go.mod"}, nil, []string{"ext", "init", "--sdk-only", "--lang", "Rust", "x"}, exitUsage,
			"ganglion: --lang: unknown language \"Rust\" (want go, rust or assemblyscript)\n"},
		{"ext build, unknown --lang", nil, nil, []string{"ext", "build", "--lang", "zig", "x"}, exitUsage,
			"ganglion: --lang: unknown language \"zig\" (want go, rust or assemblyscript)\n"},
		{"ext build, two languages", []string{"go.mod", "Cargo.toml"}, nil, []string{"ext", "build", "x"}, exitUsage,
			"ganglion: $DIR/x holds go.mod and Cargo.toml: name the guest's language with --lang\n"},
		{"ext init --sdk-only, two languages", []string{"package.json", "Cargo.toml"}, nil, []string{"ext", "init", "--sdk-only", "x"}, exitUsage,
			"ganglion: x holds Cargo.toml and package.json: name the guest's language with --lang\n"},
		{"ext init --sdk-only --lang rust without Cargo.toml", []string{"go.mod"}, nil, []string{"ext", "init", "--sdk-only", "--lang", "rust", "x"}, exitError,
			"ganglion: x has no Cargo.toml: --sdk-only writes the SDK copy of a Rust guest, in its directory\n"},
		{"no cargo", []string{"Cargo.toml"}, func(t *testing.T, parent string) []string {
			return []string{"CARGO=" + parent + "/bin/cargo"}
		}, []string{"ext", "build", "x"}, exitError,
			"ganglion: building a Rust guest needs cargo, and $CARGO names $DIR/bin/cargo, which is not a program: " + rustInstall + "\n"},
		{"a rustc without wasm32", []string{"Cargo.toml"}, func(t *testing.T, parent string) []string {
			return []string{"CARGO=/bin/true", "RUSTC=" + fakeRustc(t, parent)}
		}, []string{"ext", "build", "x"}, exitError,
			"ganglion: building a Rust guest needs the standard library for wasm32-unknown-unknown, and the rustc at $DIR/rustc has none " +
				"(no $DIR/sysroot/lib/rustlib/wasm32-unknown-unknown/lib): " + rustInstall + "\n"},
		{"no node", []string{"package.json"}, func(t *testing.T, parent string) []string {
			return []string{"PATH=" + parent + "/bin"}
		}, []string{"ext", "build", "x"}, exitError,
			"ganglion: building an AssemblyScript guest needs Node.js, and node is not on PATH: install it (apt-get install nodejs npm), then run npm install in $DIR/x\n"},
		{"no npm install", []string{"package.json"}, nil, []string{"ext", "build", "--lang", "assemblyscript", "x"}, exitError,
			"ganglion: building an AssemblyScript guest needs its compiler, and $DIR/x has none (no node_modules/assemblyscript): " +
				"run npm install in $DIR/x, which fetches the npm package assemblyscript\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(parent, "x", f)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, nil, 0o644))
			}
			var env []string
			if tt.env != nil {
				env = tt.env(t, parent)
			}
			r := exeEnv(t, parent, env, tt.args...)
			check(t, strings.Join(tt.args, " "), r, tt.code, ptr(""), ptr(strings.ReplaceAll(tt.want, "$DIR", parent)), "")
		})
	}
}

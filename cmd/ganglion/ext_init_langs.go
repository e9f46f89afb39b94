package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ganglion-dev/ganglion/sdk/assemblyscript"
)

// crateName makes an extension name a Cargo package name: lower case (a
// crate name in upper case draws a warning), '.' as '-' (Cargo refuses a
// dot), and a leading digit (Cargo refuses one) behind "guest-".
func crateName(name string) string {
	n := strings.ReplaceAll(strings.ToLower(name), ".", "-")
	if n != "" && '0' <= n[0] && n[0] <= '9' {
		n = "guest-" + n
	}
	return n
}

// asCompilerVersion is the AssemblyScript compiler the SDK pins (its
// package.json's devDependencies), which an AssemblyScript guest pins too:
// asc's output depends on its version.
func asCompilerVersion() (string, error) {
	b, err := fs.ReadFile(assemblyscript.SourceFiles, "package.json")
	if err != nil {
		return "", err
	}
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("the AssemblyScript SDK's package.json: %w", err)
	}
	v := pkg.DevDependencies["assemblyscript"]
	if v == "" {
		return "", fmt.Errorf("the AssemblyScript SDK's package.json pins no assemblyscript")
	}
	return v, nil
}

// jsonQuote writes s as a JSON string.
func jsonQuote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// The files of a Rust guest. CRATE is the Cargo package's name (see
// crateName); the other names are those of the Go guest's files.

const rustCargoToml = `# The crate of the NAME extension, a Ganglion guest compiled to
# WebAssembly. ganglion ext build compiles it with Debian's Rust, offline:
#
#   RUSTC=/usr/bin/rustc /usr/bin/cargo build --offline --release --target wasm32-unknown-unknown
#
# and copies target/wasm32-unknown-unknown/release/*.wasm to WASM.
[package]
name = "CRATE"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
# The SDK is not on crates.io: SDKDIR is a copy of the one the ganglion
# that wrote this crate was built with (see README.md). It needs nothing
# outside the standard library, so the guest builds offline.
ganglion = { path = "SDKDIR" }

# A small module: about 100 KB smaller than the default release build.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
panic = "abort"
strip = true
`

const rustLib = `//! The NAME extension, compiled to WebAssembly: a turn middleware that
//! logs each turn, and a tool, greet, that the agent's model can call.
//! ganglion ext build compiles it with Debian's Rust, offline:
//!
//! ` + "```" + `text
//! RUSTC=/usr/bin/rustc /usr/bin/cargo build --offline --release --target wasm32-unknown-unknown
//! ` + "```" + `
//!
//! The SDK's documentation: SDKDIR/README.md, and ` + "`cargo doc --open`" + `.

use ganglion::types::category;
use ganglion::{Api, Manifest, Result, ToolCall, ToolResult, ToolSpec};

// The extension: its manifest, to which the hooks and tools that setup
// registers are added, and setup.
ganglion::extension!(Manifest::new("NAME", "0.1.0"), setup);

/// setup registers what the extension does. It runs in every instance of
/// the module and must register the same things each time.
fn setup(api: &Api) -> Result<()> {
    // A turn middleware runs around each turn of the agent: before next it
    // sees the input, after next the answer.
    api.turn(|t| {
        ganglion::log::info(&format!("turn starts input={}", t.input_text()?));
        t.next()?; // the rest of the turn failed: ? passes its failure on
        let res = t.result()?;
        ganglion::log::info(&format!("turn ends finish_reason={}", res.finish_reason));
        Ok(())
    });
    // A tool the agent offers its model. The host checks the model's
    // arguments against parameters before greet runs.
    api.tool(
        &ToolSpec {
            name: "greet".to_string(),
            description: "Greets someone by name.".to_string(),
            parameters: r#"{
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Who to greet."}},
                "required": ["name"]
            }"#
            .to_string(),
            category: category::READ.to_string(),
        },
        greet,
    );
    Ok(())
}

/// greet answers the tool call: its result, or its error, is what the
/// model reads.
fn greet(c: &ToolCall) -> Result<ToolResult> {
    let args = c.args_json()?;
    let name = args.get("name").and_then(|v| v.as_str()).unwrap_or_default();
    Ok(ToolResult::text(format!("Hello, {}!", name)))
}
`

const rustReadme = "# NAME\n\n" +
	"A Ganglion extension in Rust, compiled to WebAssembly. `src/lib.rs` registers a\n" +
	"turn middleware that logs each turn and a tool, `greet`; grow it from there.\n\n" +
	"## Toolchain\n\n" +
	"Debian's Rust, with its standard library for wasm32:\n\n" +
	"```sh\n" +
	"apt-get install rustc cargo libstd-rust-dev-wasm32\n" +
	"```\n\n" +
	"A `rustc` installed by rustup has no wasm32 target unless\n" +
	"`rustup target add wasm32-unknown-unknown` fetched it, which needs the network\n" +
	"(cargo then fails with ``can't find crate for `std` ``). `ganglion ext build`\n" +
	"therefore uses `/usr/bin/cargo` and `/usr/bin/rustc` when they are installed,\n" +
	"and otherwise the `cargo` on `PATH`; `CARGO` and `RUSTC` name others.\n\n" +
	"## Build, run, inspect\n\n" +
	"From this directory:\n\n" +
	"```sh\n" +
	"ganglion ext build .\n" +
	"ganglion run . \"hello\"\n" +
	"ganglion ext inspect WASMSH\n" +
	"```\n\n" +
	"- `ext build` compiles the crate for `wasm32-unknown-unknown` in release, as\n" +
	"  `RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --target wasm32-unknown-unknown`\n" +
	"  does, copies the module to `WASM` and loads it once, to check it;\n" +
	"- `run` sends a message to the agent of `ganglion.yaml`, which lists `WASM` in its\n" +
	"  `extensions:` and runs on the offline scripted model of `script.yaml` (to use a\n" +
	"  real model, replace its `model:` line); `--log-level info` shows the middleware's\n" +
	"  log lines;\n" +
	"- `ext inspect` shows the extension's manifest, hooks, tools, imports and exports.\n\n" +
	"Another config loads the extension with an entry of its own: `- wasm: path/to/WASM`.\n\n" +
	"## Test\n\n" +
	"Record a session once, then replay it after every change:\n\n" +
	"```sh\n" +
	"ganglion record cassettes/hello.cassette . \"hello\"\n" +
	"ganglion ext test .\n" +
	"```\n\n" +
	"`ext test` replays every cassette of `cassettes/` offline against the extension as\n" +
	"it is now, and checks what happens against `cassettes/NAME.golden` (written the first\n" +
	"time); `--update` accepts a change.\n\n" +
	"## The SDK\n\n" +
	"`src/lib.rs` uses the Rust guest SDK, the crate `ganglion`, which is not on\n" +
	"crates.io. `SDKDIR/` is a copy of it, written by `ganglion ext init` from the\n" +
	"SDK that ganglion was built with, and `Cargo.toml` depends on it by path: the\n" +
	"extension builds offline, against the SDK of the host that loads it. Its\n" +
	"documentation: `SDKDIR/README.md`, `cargo doc --open`, and the ABI in\n" +
	"`SDKDIR/ABI.md`.\n\n" +
	"Do not edit `SDKDIR/`. To move to the SDK of another ganglion, replace the copy\n" +
	"with that ganglion:\n\n" +
	"```sh\n" +
	"rm -r SDKDIR && ganglion ext init --sdk-only . && ganglion ext build .\n" +
	"```\n"

const rustGitignore = `# The built module, cargo's output and the agent's data (ganglion run).
/*.wasm
/target/
/.ganglion/
`

// The files of an AssemblyScript guest. NPMNAME is the package's name (npm
// wants it in lower case), ASVERSION the compiler's version, ASOUT the
// module as a JSON string.

const asPackageJSON = `{
  "name": "NPMNAME",
  "version": "0.1.0",
  "private": true,
  "description": "The NAME extension: a Ganglion guest in AssemblyScript",
  "scripts": {
    "build": "asc --config asconfig.json"
  },
  "devDependencies": {
    "@ganglion/assemblyscript": "file:SDKDIR",
    "assemblyscript": "ASVERSION"
  }
}
`

const asConfig = `{
  "extends": "./node_modules/@ganglion/assemblyscript/asconfig.json",
  "entries": ["assembly/index.ts"],
  "options": {
    "outFile": ASOUT
  }
}
`

const asIndex = `// The NAME extension, compiled to WebAssembly: a turn middleware that
// logs each turn, and a tool, greet, that the agent's model can call.
// ganglion ext build compiles it with
//
//   node node_modules/assemblyscript/bin/asc.js --config asconfig.json -o WASMSH
//
// The SDK's documentation: SDKDIR/README.md.

import { Field, Hook, Level, fail, failed, log, manifest, registerTool, registerTurn } from "@ganglion/assemblyscript/assembly";
import * as json from "@ganglion/assemblyscript/assembly/json";

// The hook exports of the kinds the extension registers.
export { ganglion_abi_version, ganglion_tool, ganglion_turn } from "@ganglion/assemblyscript/assembly/exports";

// ganglion_init declares the extension and registers what it does. The
// host calls it in every instance of the module, which must register the
// same things each time. It returns 0, or 1 to fail the load.
export function ganglion_init(): i32 {
  // The manifest lists the hooks and the tools the extension registers.
  const m = json.object().set("name", "NAME").set("version", "0.1.0").set("abi", 1)
    .set("hooks", ["turn"]).set("tools", ["greet"]);
  if (manifest(m.toString()) < 0) return failed("manifest");
  if (registerTurn(logTurn) < 0) return failed("register the turn middleware");
  // A tool the agent offers its model. The host checks the model's
  // arguments against parameters before greet runs.
  const name = json.object().set("type", "string").set("description", "Who to greet.");
  const spec = json.object()
    .set("name", "greet")
    .set("description", "Greets someone by name.")
    .set("parameters", json.object()
      .set("type", "object")
      .set("properties", json.object().set("name", name))
      .set("required", ["name"]))
    .set("category", "read");
  if (registerTool(spec.toString(), greet) < 0) return failed("register greet");
  return 0;
}

// logTurn is a turn middleware: it runs around each turn of the agent,
// and sees the input before next and the answer after. It returns 0 for
// success, 1 for failure.
function logTurn(h: Hook): i32 {
  const input = h.inputText();
  if (input === null) return failed("read the input");
  log(Level.INFO, "turn starts input=" + input);
  // The rest of the turn failed: returning 0 without a result passes its
  // failure on unchanged.
  if (h.next() < 0) return 0;
  const res = h.field(Field.RESULT);
  if (res === null) return failed("read the result");
  const v = json.parse(res);
  if (v === null) return fail("the result: " + json.parseError());
  let reason = v.getString("finish_reason");
  if (reason === null) reason = "";
  log(Level.INFO, "turn ends finish_reason=" + reason);
  return 0;
}

// greet answers the tool call: its result, or its failure, is what the
// model reads.
function greet(h: Hook): i32 {
  const text = h.field(Field.TOOL_ARGS);
  if (text === null) return failed("read the arguments");
  const args = json.parse(text);
  if (args === null) return fail("the arguments: " + json.parseError());
  let who = args.getString("name");
  if (who === null) who = "";
  const result = json.object().set("content", "Hello, " + who + "!");
  if (h.setResult(result.toString()) < 0) return failed("set the result");
  return 0;
}
`

const asReadme = "# NAME\n\n" +
	"A Ganglion extension in AssemblyScript, compiled to WebAssembly.\n" +
	"`assembly/index.ts` registers a turn middleware that logs each turn and a tool,\n" +
	"`greet`; grow it from there.\n\n" +
	"## Install\n\n" +
	"Node.js 20 or later and npm (`apt-get install nodejs npm`). From this directory:\n\n" +
	"```sh\n" +
	"npm install\n" +
	"```\n\n" +
	"installs the SDK from `SDKDIR/` and fetches the AssemblyScript compiler,\n" +
	"`assemblyscript` ASVERSION, the version the SDK is built and tested with, from npm's\n" +
	"registry (once: `node_modules/` keeps it).\n\n" +
	"## Build, run, inspect\n\n" +
	"```sh\n" +
	"ganglion ext build .\n" +
	"ganglion run . \"hello\"\n" +
	"ganglion ext inspect WASMSH\n" +
	"```\n\n" +
	"- `ext build` compiles `WASM` with the compiler in `node_modules/` (as\n" +
	"  `npm run build` does) and loads it once, to check it;\n" +
	"- `run` sends a message to the agent of `ganglion.yaml`, which lists `WASM` in its\n" +
	"  `extensions:` and runs on the offline scripted model of `script.yaml` (to use a\n" +
	"  real model, replace its `model:` line); `--log-level info` shows the middleware's\n" +
	"  log lines;\n" +
	"- `ext inspect` shows the extension's manifest, hooks, tools, imports and exports.\n\n" +
	"Another config loads the extension with an entry of its own: `- wasm: path/to/WASM`.\n\n" +
	"## Test\n\n" +
	"Record a session once, then replay it after every change:\n\n" +
	"```sh\n" +
	"ganglion record cassettes/hello.cassette . \"hello\"\n" +
	"ganglion ext test .\n" +
	"```\n\n" +
	"`ext test` replays every cassette of `cassettes/` offline against the extension as\n" +
	"it is now, and checks what happens against `cassettes/NAME.golden` (written the first\n" +
	"time); `--update` accepts a change.\n\n" +
	"## The SDK\n\n" +
	"`assembly/index.ts` imports the AssemblyScript guest SDK,\n" +
	"`@ganglion/assemblyscript`, which is not on npm's registry. `SDKDIR/` is a copy of\n" +
	"it, written by `ganglion ext init` from the SDK that ganglion was built with, and\n" +
	"`package.json` installs it from there (`file:SDKDIR`): the extension builds against\n" +
	"the SDK of the host that loads it. `asconfig.json` extends the SDK's, whose options\n" +
	"the host needs. Its documentation: `SDKDIR/README.md`, and the ABI in\n" +
	"`SDKDIR/ABI.md`; `SDKDIR/assembly/json.ts` reads and writes the JSON the host\n" +
	"takes and gives.\n\n" +
	"Do not edit `SDKDIR/`. To move to the SDK of another ganglion, replace the copy\n" +
	"with that ganglion:\n\n" +
	"```sh\n" +
	"rm -r SDKDIR && ganglion ext init --sdk-only . && ganglion ext build .\n" +
	"```\n"

const asGitignore = `# The built module, npm's packages and the agent's data (ganglion run).
/*.wasm
/node_modules/
/.ganglion/
`

// Package conformance holds the conformance suite of the Extension API:
// one table of behavioural tests that a native Go extension and
// WebAssembly extensions in Go, Rust and AssemblyScript must pass alike,
// since an extension behaves the same whatever language it is written in. The package has
// no code of its own; its test is the suite.
//
// # What the suite guarantees
//
// The suite runs every case four times, in a runtime on the scripted
// model: once with a native extension registered through
// [github.com/ganglion-dev/ganglion/extensions.API]
// (runtime.WithExtension), once with its Go twin, a guest built with the
// SDK in sdk/ (GOOS=wasip1, -buildmode=c-shared, from testdata/twin), once
// with its Rust twin, a guest built with the crate in sdk/rust
// (wasm32-unknown-unknown, from testdata/rusttwin), and once with its
// AssemblyScript twin, a guest built with the package in
// sdk/assemblyscript (from testdata/astwin); the guests are loaded from
// the config (wasm: twin.wasm). All read the same config: section.
// Each case checks what all must do, then the suite checks that each guest
// observed exactly what the native twin did: turn results and
// errors, the stored history, the events on the bus, the extension's
// state and every model call (the tools offered and the messages seen).
//
// The behaviours covered:
//
//   - onion order: layers run outermost first by priority, then in config
//     order, and unwind in reverse; a turn layer changes the result after
//     next;
//   - short-circuit: a turn middleware answers without next and the model
//     is not called;
//   - message edits: append, replace and remove before next, seen by the
//     model and stored; the turn's input changed before next;
//   - the step result: a step middleware makes the turn go on after a text
//     answer, or stops it after a step that called tools;
//   - the tool catalog: a step middleware hides a tool, and the model's
//     call to it gets the runtime's "unknown tool" result;
//   - tool calls: a toolCall middleware changes the arguments before next
//     and replaces the result after it;
//   - a tool the extension provides, its error result, and the host's
//     check of its arguments;
//   - state: kept per instance and persisted across a restart of the
//     runtime on the same badger data directory;
//   - events: published by the extension (a WASM extension declares the
//     topics in its manifest), and a runtime event it subscribes to;
//   - errors: an error of a hook fails the turn naming the extension and
//     the hook (fail_closed), or skips the layer and publishes
//     middleware.skipped (fail_open); an error of next passes through a
//     layer unblamed; a panic, and a second call of next, fail the turn;
//   - config: a missing or unknown setting fails the load, naming the
//     extension;
//   - pending items: a step pauses the turn with a question, a toolCall
//     middleware pauses a call for approval; the extension refuses an
//     answer with its own message (the item stays open), the item survives
//     a restart, and the answer resumes the turn: the approved call runs
//     (through the extension's own middleware, which lets it through), a
//     denied one gets the extension's result. A guest's kinds are granted
//     under pending: in the config.
//
// Where the twins differ because of a bug not fixed yet, the case says so
// and is skipped for the implementation at fault, but only while it shows
// exactly the difference described; any other outcome fails.
//
// # The twins
//
// The twins (twin_test.go, testdata/twin/main.go,
// testdata/rusttwin/src/lib.rs and testdata/astwin/assembly/index.ts) do
// the same. Config:
// tag (required) names the configured instance in answers, events and
// errors; trace: true publishes twin.order {tag, hook, at} as each hook
// enters and leaves and wraps the turn's response as tag(response); hide
// lists tools to hide; echo: true registers the tool twin_echo. State per
// instance: {"turns": n, "tools": [...]}, the turns counted and the
// tool.finished events of the agent seen. After each turn the twin
// publishes twin.turn {tag, turns}.
//
// The first word of a turn's input selects a behaviour: "stop" answers
// without next; "rewrite" changes the input to "rewritten: ..."; "edit"
// appends a system note (turn) and, in step 1, replaces the input message
// with "edited: ..." and removes the first message; "hide" hides the
// configured tools; "more" sets continue on step 1, "halt" sets stop
// (max_steps) on every step; "twice" calls next twice; "fail turn", "fail
// turn-after" and "fail step" fail that hook (before or after next);
// "panic turn" panics; "ask" opens a twin_question item after step 1
// (any answer but an empty one). A toolCall middleware reads the call's
// "mode" argument: "fail" fails, "args" replaces the arguments, "replace"
// replaces the result, "ask" pauses the call with a twin_ask item (yes
// runs it, no denies it).
//
// # Running
//
//	go test -race ./extensions/conformance/
//
// The WASM cases build the Go twin with the Go toolchain, the Rust twin
// with Debian's rustc and cargo (packages rustc, cargo and
// libstd-rust-dev-wasm32; the Rust cases skip, naming them, when they are
// not installed), and the AssemblyScript twin with Node.js and the
// compiler that cd sdk/assemblyscript && npm ci installs (the
// AssemblyScript cases skip, naming that command, without it), and
// compile each once into a cache with
// internal/guesttest/warm, built without -race; -short skips them.
package conformance

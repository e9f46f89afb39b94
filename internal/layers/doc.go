// Package layers holds no code: its test keeps Ganglion's import
// direction. From the bottom up:
//
//	pipeline, internal/...           the middleware pipeline; helpers
//	store, events, ledger            persistence, the event bus, the pause ledger
//	extensions, extensions/...       the Extension API and the built-in extensions
//	runtime, runtime/...             the runtime: turns, agents, models, tools, config
//	cmd/..., examples/...            programs
//
// A package may import its own layer and the layers below it, never one
// above: see RATIONALE.md, "Layers: the folders show the import direction".
// sdk, the guest side of the WASM ABI, imports none of the host's packages.
//
// Its tests also measure what a newcomer reads: no exported name without a
// user, and a ceiling of names for the packages opened first (see
// RATIONALE.md, "The public surface: measured by what a newcomer reads").
package layers

// Package eino is a comparison benchmark, kept out of the main module: the
// turn of Ganglion's BenchmarkTurn/memory (internal/benchturn) run by
// CloudWeGo Eino's ReAct agent (flow/agent/react), with a fake chat model
// and a real Eino tool, so the two runtimes can be measured on the same
// machine. BenchmarkGanglionTurn runs Ganglion's own loop
// (internal/benchturn, the repository itself through a replace directive)
// in the same process, so one run prints both. BenchmarkPlainLoop is the
// same three calls in a plain Go loop, with no framework at all.
// BenchmarkKeptFloor is the floor of Ganglion's turn: the plain loop plus
// what that turn keeps beyond it (the history kept and committed, the
// arguments checked, three pass-through middlewares per level), each
// written the plainest way over the same store and types, so that it shows
// how far a redesign of the runtime's turn could go.
//
// It is a module of its own so that the runtime never depends on Eino:
//
//	cd bench/eino && go test -run '^$' -bench . -benchmem
package eino

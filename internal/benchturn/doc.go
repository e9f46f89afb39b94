// Package benchturn is the turn the turn benchmarks share: the question
// "What is the answer?", the scripted model asking for the tool lookup and
// then answering, and three pass-through extensions with a layer on each of
// turn, step and toolCall.
//
// BenchmarkTurn (package runtime), the scale and WASM benchmarks, and the
// Eino comparison in bench/eino (a module of its own) run it, so that
// each measures the same work.
package benchturn

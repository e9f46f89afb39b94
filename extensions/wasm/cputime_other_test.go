//go:build !linux

package wasm_test

// cpuTime is not measured here: the benchmarks report no cpu-ns/op.
func cpuTime() (int64, bool) { return 0, false }

//go:build race

package wasm_test

const raceEnabled = true

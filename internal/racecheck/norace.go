//go:build !race

package racecheck

// Enabled is true when the binary was built with -race.
const Enabled = false

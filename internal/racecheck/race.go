//go:build race

package racecheck

const enabled = true

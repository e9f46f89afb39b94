//go:build !linux

package tool

import (
	"errors"
	"syscall"
)

// recordsSupported is false: without /proc nothing tells a process from a
// later one with the same PID, so no process records are kept.
const recordsSupported = false

var errNoProc = errors.New("process identity needs /proc")

func processStart(int) (uint64, error) { return 0, errNoProc }

func bootID() (string, error) { return "", errNoProc }

// setDeathSignal does nothing: only Linux has a parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}

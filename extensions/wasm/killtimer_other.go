//go:build !linux

package wasm

import "time"

// killTimer is the backstop's last resort on Linux (killtimer_linux.go);
// elsewhere the backstop has only its panic.
type killTimer struct{}

func (*killTimer) arm(time.Duration) {}
func (*killTimer) close()            {}

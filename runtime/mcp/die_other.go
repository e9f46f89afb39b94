//go:build !linux

package mcp

import "os/exec"

// dieWithParent does nothing here: the process is stopped on Close, but
// outlives a runtime that is killed.
func dieWithParent(*exec.Cmd) {}

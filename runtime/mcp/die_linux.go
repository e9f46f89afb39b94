//go:build linux

package mcp

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill an MCP server's process when the
// runtime's dies, however it dies.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

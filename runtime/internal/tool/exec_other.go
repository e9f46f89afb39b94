//go:build !unix

package tool

import (
	"errors"
	"os/exec"
)

// group stands for a process group where there are none: killing it kills
// the shell, and its children may survive, as may the shell when the
// runtime dies.
type group struct{ cmd *exec.Cmd }

func (w *Workspace) startGroup() (*group, error) { return &group{}, nil }

func (g *group) join(cmd *exec.Cmd) { g.cmd = cmd }

func (g *group) kill() error {
	if g.cmd == nil || g.cmd.Process == nil {
		return nil
	}
	return g.cmd.Process.Kill()
}

func (g *group) end() { _ = g.kill() }

func killProcessGroup(int) error { return errors.ErrUnsupported }

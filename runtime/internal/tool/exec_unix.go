//go:build unix

package tool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// watcherScript is what a group's watcher runs: it waits for the end of
// its standard input, the pipe whose only write end the runtime holds, and
// kills its own process group. read and kill are built into sh.
const watcherScript = "read x; kill -9 0"

// outliveRuntime is a test seam: true leaves a group running when the
// runtime dies (no watcher kill, no death signal), as a failed mechanism
// would, for the process records to find.
var outliveRuntime atomic.Bool

// group is the process group of one command: a watcher process leads it,
// the command's shell joins it, and the group dies with the runtime.
//
// Killing the group on timeout or when the shell exits is not enough when
// the runtime itself dies (SIGKILL, a crash): then nobody is left to kill
// it. Two things do it instead:
//
//   - The watcher, started first as the group's leader, reads a pipe whose
//     write end only the runtime holds. The kernel closes that end when the
//     runtime dies, however it dies; the watcher reads end-of-file and kills
//     the group, grandchildren included, and itself.
//   - The shell gets a parent-death signal (Linux), so it dies even if the
//     command killed the watcher. The kernel sends it when the thread that
//     forked the shell ends, not the process, and Go ends a thread when a
//     goroutine locked to it returns; so executeCommand locks its goroutine
//     to its thread from before the start of the shell until it is reaped,
//     and no other goroutine can run there and end it.
//
// A parent-death signal alone reaches only the shell, not what it started.
// The watcher leads, rather than joining the shell's group, because then the
// group, its watcher and its process record all exist before the shell
// starts: nothing the command starts is ever outside a watched, recorded
// group. The group's ID also stays taken until the runtime kills the group
// and reaps the watcher, so that kill cannot hit a later group that reuses
// the ID, and a record names the group by a leader that lives as long as the
// group does. The price is one short-lived sh per command.
type group struct {
	watcher *exec.Cmd
	hold    *os.File // the pipe's write end
	pgid    int
	record  string // the process record's path, "" if none
	procs   procDir
}

// startGroup starts the watcher, records the group if the workspace keeps
// process records, and returns the group for the shell to join.
func (w *Workspace) startGroup() (*group, error) {
	r, hold, err := os.Pipe() // both ends close-on-exec: no other child inherits them
	if err != nil {
		return nil, err
	}
	script := watcherScript
	if outliveRuntime.Load() {
		script = "exec sleep 86400"
	}
	wc := exec.Command("sh", "-c", script)
	wc.Stdin = r
	wc.Env = []string{} // nothing of the runtime's environment
	wc.Dir = "/"
	wc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = wc.Start()
	r.Close()
	if err != nil {
		hold.Close()
		return nil, fmt.Errorf("start the process group's watcher: %w", err)
	}
	g := &group{watcher: wc, hold: hold, pgid: wc.Process.Pid, procs: w.procs}
	if g.procs != "" {
		if g.record, err = g.procs.add(g.pgid); err != nil {
			g.end()
			return nil, fmt.Errorf("record the process group: %w", err)
		}
	}
	return g, nil
}

// join makes cmd start in the group.
func (g *group) join(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.pgid}
	if !outliveRuntime.Load() {
		setDeathSignal(cmd.SysProcAttr)
	}
}

// kill kills every process of the group.
func (g *group) kill() error { return killProcessGroup(g.pgid) }

// end kills the group, reaps the watcher and removes the record. The
// watcher is reaped after the kill, so the kill cannot reach a later group
// that reuses the ID.
func (g *group) end() {
	_ = g.kill()
	g.hold.Close()
	_ = g.watcher.Wait() // killed: "signal: killed"
	if g.record != "" {
		g.procs.remove(g.record)
	}
}

// killProcessGroup kills every process of group pgid.
func killProcessGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

//go:build linux

package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

// The helper process: a runtime stand-in that opens a workspace and runs one
// command, which never ends, until the test kills it.
const (
	helperEnv      = "GANGLION_TOOL_TEST_HELPER" // "run", or "leak" to disable the kill with the runtime
	helperDirEnv   = "GANGLION_TOOL_TEST_DIR"
	helperProcsEnv = "GANGLION_TOOL_TEST_PROCS"
	helperCmdEnv   = "GANGLION_TOOL_TEST_COMMAND"
)

// TestExecuteCommandHelperProcess is not a test: it is the helper process of
// the tests that kill a runtime, and does nothing unless helperEnv is set.
func TestExecuteCommandHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the helper process of TestExecuteCommandDiesWithRuntime")
	}
	if mode == "leak" {
		tool.DisableKillWithRuntime()
	}
	opts := []tool.WorkspaceOption{tool.WithCommandTimeout(time.Hour)}
	if p := os.Getenv(helperProcsEnv); p != "" {
		opts = append(opts, tool.WithProcessDir(p))
	}
	ws, err := tool.OpenWorkspace(os.Getenv(helperDirEnv), opts...)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": os.Getenv(helperCmdEnv)})
	res := callTool(t, context.Background(), ws.Tools()[3], string(args))
	t.Fatalf("the command ended: %s", res.Content) // it must be killed first
}

// crash starts the helper process running command in a new workspace and
// waits until command has written want PIDs, one a line, to the file
// "pids". It then kills the helper with SIGKILL and returns the PIDs and the
// workspace. Every PID is killed when the test ends.
func crash(t *testing.T, mode, procs, command string, want int) (pids []int, dir string) {
	t.Helper()
	dir = t.TempDir()
	h := exec.Command(os.Args[0], "-test.run=^TestExecuteCommandHelperProcess$")
	h.Env = append(os.Environ(), helperEnv+"="+mode, helperDirEnv+"="+dir, helperProcsEnv+"="+procs, helperCmdEnv+"="+command)
	var out strings.Builder
	h.Stdout, h.Stderr = &out, &out
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = h.Wait(); close(exited) }()
	type ident struct{ start, pgrp string }
	seen := map[int]ident{}
	t.Cleanup(func() {
		_ = h.Process.Kill()
		<-exited
		// Kill what a failed test left, and only that: a PID may have
		// been reused since.
		for pid, id := range seen {
			if start, pgrp := stat(pid); start == id.start && pgrp == id.pgrp {
				n, _ := strconv.Atoi(pgrp)
				_ = syscall.Kill(-n, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "pids"))
		if lines := strings.Fields(string(b)); len(lines) >= want {
			pids = pids[:0]
			for _, l := range lines {
				pid, err := strconv.Atoi(l)
				if err != nil {
					t.Fatalf("pids: %q", b)
				}
				pids = append(pids, pid)
			}
			if len(pids) > want {
				t.Fatalf("got %d PIDs, want %d: %v", len(pids), want, pids)
			}
			break
		}
		select {
		case <-exited:
			t.Fatalf("the helper process ended early:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command wrote %q, want %d PIDs", b, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, pid := range pids {
		start, pgrp := stat(pid)
		if !alive(pid) || start == "" {
			t.Fatalf("process %d ended before the runtime was killed", pid)
		}
		seen[pid] = ident{start, pgrp}
	}
	if err := h.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	return pids, dir
}

// stat returns the start time and the process group of process pid, or
// empty strings if it is gone.
func stat(pid int) (start, pgrp string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields 3 on
	if len(f) < 20 {
		return "", ""
	}
	return f[22-3], f[5-3]
}

// waitGone fails unless every process of pids ends within 10 seconds.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of %v still runs", pid, pids)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// records returns the names in the process directory.
func records(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestExecuteCommandDiesWithRuntime kills a runtime with SIGKILL while its
// command runs, and checks that every process the command started dies too,
// however it was started.
func TestExecuteCommandDiesWithRuntime(t *testing.T) {
	// Each line of pids is a process that must die: the shell ($$), and
	// what it starts, which write their own PIDs ($$ of an inner sh, or its
	// $PPID for a subshell).
	const inner = `sh -c 'echo $$ >>pids; exec sleep 1000'`
	tests := []struct {
		name    string
		command string
		pids    int
	}{
		{name: "background jobs", command: `sleep 1000 & echo $! >>pids; sleep 1000 & echo $! >>pids; echo $$ >>pids; wait`, pids: 3},
		{name: "pipeline", command: `echo $$ >>pids; ` + inner + ` | ` + inner, pids: 3},
		{name: "subshell", command: `echo $$ >>pids; (sh -c 'echo $PPID >>pids; echo $$ >>pids; exec sleep 1000'; :)`, pids: 3},
		{name: "orphan of an ended subshell", command: `echo $$ >>pids; (` + inner + ` &); sleep 1000`, pids: 2},
		{name: "grandchild of an inner shell", command: `echo $$ >>pids; sh -c '` + `sleep 1000 & echo $! >>pids; wait'`, pids: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			procs := t.TempDir()
			pids, _ := crash(t, "run", procs, tt.command, tt.pids)
			waitGone(t, pids)
			// The call's record is left; the next start finds nothing to
			// kill and clears it.
			if got := records(t, procs); len(got) != 1 {
				t.Errorf("records after the crash: %q, want one", got)
			}
			ws, err := tool.OpenWorkspace(t.TempDir(), tool.WithProcessDir(procs))
			if err != nil {
				t.Fatal(err)
			}
			ws.Close()
			if got := records(t, procs); len(got) != 0 {
				t.Errorf("records after the next start: %q, want none", got)
			}
		})
	}
}

// TestOpenWorkspaceKillsLeftGroups leaves a command's group running when its
// runtime dies (the kill with the runtime disabled), and checks that the
// next OpenWorkspace on the same process directory kills it.
func TestOpenWorkspaceKillsLeftGroups(t *testing.T) {
	procs := t.TempDir()
	pids, _ := crash(t, "leak", procs, `sleep 1000 & echo $! >>pids; echo $$ >>pids; sh -c 'sleep 1000 & echo $! >>pids; wait'`, 3)
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d died with the runtime: the test seam did not hold", pid)
		}
	}
	if got := records(t, procs); len(got) != 1 {
		t.Fatalf("records after the crash: %q, want one", got)
	}
	ws, err := tool.OpenWorkspace(t.TempDir(), tool.WithProcessDir(procs))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	waitGone(t, pids)
	if got := records(t, procs); len(got) != 0 {
		t.Errorf("records after the next start: %q, want none", got)
	}
}

// TestExecuteCommandRecords checks that a running command's group is
// recorded, under the group's ID, and that the record goes with the call.
func TestExecuteCommandRecords(t *testing.T) {
	procs := filepath.Join(t.TempDir(), "data.procs") // created by OpenWorkspace
	f := newFixture(t, tool.WithProcessDir(procs), tool.WithEnv([]string{"PROCS=" + procs}))
	// The shell prints its process group (field 5 of its stat) and the records.
	res := f.call(t, "execute_command", `{"command":"read -r s </proc/$$/stat; set -- $s; echo $5; ls \"$PROCS\""}`)
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	if res.IsError || len(lines) != 2 {
		t.Fatalf("got %q, want the group and one record", res.Content)
	}
	if pgid, _, _ := strings.Cut(lines[1], "."); pgid != lines[0] {
		t.Errorf("record %q is not of group %s", lines[1], lines[0])
	}
	if got := records(t, procs); len(got) != 0 {
		t.Errorf("records after the call: %q, want none", got)
	}
	fi, err := os.Stat(procs)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("process directory: %v, %v; want mode 0700", fi, err)
	}
}

// TestWithProcessDir checks the option's errors.
func TestWithProcessDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, dir, wantErr string }{
		{name: "empty", dir: "", wantErr: "open workspace: process directory is empty"},
		{name: "a file", dir: file, wantErr: "open workspace: process records: mkdir " + file + ": not a directory"},
		{name: "below a file", dir: filepath.Join(file, "procs"), wantErr: "open workspace: process records: mkdir " + file + ": not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := tool.OpenWorkspace(t.TempDir(), tool.WithProcessDir(tt.dir))
			if err == nil {
				ws.Close()
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
	var pe *os.PathError
	_, err := tool.OpenWorkspace(t.TempDir(), tool.WithProcessDir(file))
	if !errors.As(err, &pe) {
		t.Errorf("%v does not wrap the *os.PathError", err)
	}
}

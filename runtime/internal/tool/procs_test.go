//go:build linux

package tool

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestParseProcRecord(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
		want procRecord
	}{
		{name: "12.345.6.78.baba1943-112c", ok: true, want: procRecord{pgid: 12, leaderStart: 345, ownerPID: 6, ownerStart: 78, boot: "baba1943-112c"}},
		{name: "12.345.6.78.boot.with.dots", ok: true, want: procRecord{pgid: 12, leaderStart: 345, ownerPID: 6, ownerStart: 78, boot: "boot.with.dots"}},
		{name: "12.345.6.78."},
		{name: "12.345.6.78"},
		{name: "1.345.6.78.b"}, // init is never a command's group
		{name: "-12.345.6.78.b"},
		{name: "12.-345.6.78.b"},
		{name: "12.345.0.78.b"},
		{name: "x.345.6.78.b"},
		{name: "notes.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseProcRecord(tt.name)
			if ok != tt.ok || got != tt.want {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if ok && got.name() != tt.name {
				t.Errorf("name() = %q, want %q", got.name(), tt.name)
			}
		})
	}
}

// TestSweep crafts records for live processes and checks which ones
// OpenWorkspace kills: only a group whose leader is the very process
// recorded, left by an owner that no longer runs.
func TestSweep(t *testing.T) {
	me, err := self()
	if err != nil {
		t.Fatal(err)
	}
	gone := me
	gone.ownerStart++ // this PID, another start: a process that ended
	tests := []struct {
		name       string
		record     func(leader procRecord) string // the record for the live group leader
		wantKilled bool
		wantKept   bool // the record stays
	}{
		{name: "left by a dead owner", record: func(l procRecord) string { return l.name() }, wantKilled: true},
		{name: "PID reused: another start", record: func(l procRecord) string { l.leaderStart--; return l.name() }},
		{name: "another boot", record: func(l procRecord) string { l.boot = "0-other-boot"; return l.name() }},
		{name: "owner still runs", record: func(l procRecord) string { l.ownerStart = me.ownerStart; return l.name() }, wantKept: true},
		{name: "not a record", record: func(procRecord) string { return "notes.txt" }, wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startSleep(t)
			start, err := processStart(p.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			l := gone
			l.pgid, l.leaderStart = p.Process.Pid, start
			name := tt.record(l)
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			ws, err := OpenWorkspace(t.TempDir(), WithProcessDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			ws.Close()
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if kept := len(entries) == 1; kept != tt.wantKept {
				t.Errorf("record kept: %v, want %v", kept, tt.wantKept)
			}
			// A survivor is ended with SIGTERM: its status tells it from a
			// process the sweep killed.
			_ = p.Process.Signal(syscall.SIGTERM)
			want := syscall.SIGTERM
			if tt.wantKilled {
				want = syscall.SIGKILL
			}
			if got := waitSignal(t, p); got != want {
				t.Errorf("the recorded process ended by %v, want %v", got, want)
			}
		})
	}
}

// TestSweepLeaderGone checks that a record whose leader has ended is removed.
func TestSweepLeaderGone(t *testing.T) {
	dir := t.TempDir()
	p := startSleep(t)
	start, err := processStart(p.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Process.Kill()
	waitSignal(t, p)
	r, _ := self()
	r.ownerStart++
	r.pgid, r.leaderStart = p.Process.Pid, start
	if err := os.WriteFile(filepath.Join(dir, r.name()), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := OpenWorkspace(t.TempDir(), WithProcessDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("records left: %v", entries)
	}
}

// startSleep starts a sleep that leads a new process group. It is killed
// when the test ends.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "1000")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		if c.ProcessState == nil { // not reaped by waitSignal
			_ = c.Wait()
		}
	})
	return c
}

// waitSignal reaps p, which must end within 10 seconds, and returns the
// signal that ended it.
func waitSignal(t *testing.T, p *exec.Cmd) syscall.Signal {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		_ = p.Process.Kill()
		<-ch
		t.Fatalf("process %d still runs", p.Process.Pid)
	}
	ws, ok := p.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("process %d ended with %v", p.Process.Pid, p.ProcessState)
	}
	return ws.Signal()
}

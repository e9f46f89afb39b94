//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunInterruptedEndsItsMCPServer: ganglion run, interrupted while an
// MCP call waits, ends the turn and exits, and its server's process ends
// with it.
func TestRunInterruptedEndsItsMCPServer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, marks := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
mcp_servers:
  - name: slow
    command: [`+strconv.Quote(exe)+`]
    env: {GANGLION_TEST_MCP_SERVER: "1", GANGLION_TEST_MCP_MARKS: `+strconv.Quote(marks)+`}
agents:
  - name: assistant
    mcp_servers: [{server: slow}]
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  assistant:
    fallback:
      steps:
        - tool_calls: [{name: slow__wait, id: c1}]
        - text: "{{ .LastMessage }}"
`), 0o644))
	cmd := exec.Command(cliBinary(t), "run", dir, "wait for it")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pid int
	deadline := time.Now().Add(60 * time.Second) // the first run may build nothing, but loads badger
	for pid == 0 {
		if b, err := os.ReadFile(filepath.Join(marks, "began")); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the MCP call never began; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := cmd.ProcessState.ExitCode(); code != exitError || !strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("ganglion run, interrupted: %v (exit %d), stderr:\n%s", err, code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ganglion run did not exit on an interrupt; stderr:\n%s", stderr.String())
	}
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the MCP server %d outlived ganglion run", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

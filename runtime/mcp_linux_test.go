//go:build linux

package runtime_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPServerDiesWithItsHost: a stdio server's process dies with the
// runtime's process, however it dies (here: kill -9).
func TestMCPServerDiesWithItsHost(t *testing.T) {
	dir := t.TempDir()
	started := dir + "/started"
	writeFile(t, dir+"/script.yaml", mcpScript)
	writeFile(t, dir+"/ganglion.yaml", modelLine+strings.Replace(mcpConfig(t), `env: {GANGLION_TEST_MCP_SERVER: "1"}`,
		`env: {GANGLION_TEST_MCP_SERVER: "1", GANGLION_TEST_MCP_STARTED: `+strconv.Quote(started)+`}
    start: eager`, 1))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(exe)
	host.Env = append(os.Environ(), "GANGLION_TEST_MCP_HOST="+dir+"/ganglion.yaml")
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(started); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("the host's MCP server never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the MCP server %d outlived its host", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether process pid runs: it exists and is no zombie (a
// dead process whose new parent has not reaped it yet).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

//go:build unix

package runtime_test

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime"
)

// TestMCPProcessEndsWithTheRuntime: Close stops a stdio server's process.
func TestMCPProcessEndsWithTheRuntime(t *testing.T) {
	dir := t.TempDir()
	cfg := parseConfig(t, dir, modelLine+mcpConfig(t))
	writeFile(t, dir+"/script.yaml", mcpScript)
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("define it"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(res.Response.Content)
	if m == nil {
		t.Fatalf("answer %q", res.Response.Content)
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server %d is not running: %v", pid, err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server %d outlived the runtime", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

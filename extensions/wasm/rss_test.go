package wasm_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

// rssFactor bounds what a misbehaving module makes the host hold: the
// peak resident memory of a process running its calls, above the same
// process's peak after loading it, is at most rssFactor times the
// module's memory cap (BENCHMARKS.md has the measurements).
const rssFactor = 5

// rssCases are the modules of testdata that loop, bomb or flood, with the
// input that makes them misbehave.
var rssCases = []struct{ module, input string }{
	{"hostile_membomb", "bomb"},
	{"hostile_recurse", "recurse"},
	{"hostile_loop", "loop"},
	{"hostile_bulk", "fill"},
	{"hostile_flood", "emit"},
	{"hostile_flood", "publish"},
	{"hostile_flood", "log"},
}

// TestRSS runs 20 misbehaving calls of each module of rssCases, with the
// default memory cap (64 MiB), in a child process each, and checks the
// growth of the child's peak resident memory (VmHWM) against rssFactor.
// Under the race detector, whose shadow memory the factor does not cover,
// it only logs the figures.
func TestRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per module")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, c := range rssCases {
		t.Run(c.module+"/"+c.input, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRSSChild$", "-test.v")
			cmd.Env = append(os.Environ(), "GANGLION_RSS_CHILD="+c.module+":"+c.input)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var base, peak int64
			for line := range strings.Lines(string(out)) {
				if _, err := fmt.Sscanf(strings.TrimSpace(line), "RSS %d %d", &base, &peak); err == nil {
					break
				}
			}
			if peak == 0 {
				t.Fatalf("the child reported no RSS:\n%s", out)
			}
			factor := float64(peak-base) / float64(wasm.DefaultMemoryLimit)
			t.Logf("peak RSS %d MiB, %d MiB after loading: %.2f × the 64 MiB cap", peak>>20, base>>20, factor)
			if factor > rssFactor && !raceEnabled {
				t.Errorf("the peak RSS grew by %.2f × the memory cap, want at most %d ×", factor, rssFactor)
			}
		})
	}
}

// TestRSSChild is TestRSS's child process: it prints "RSS <after loading>
// <peak>" in bytes.
func TestRSSChild(t *testing.T) {
	spec := os.Getenv("GANGLION_RSS_CHILD")
	if spec == "" {
		t.Skip("run by TestRSS")
	}
	module, input, _ := strings.Cut(spec, ":")
	e := newEngine(t, "")
	x, err := e.Load(context.Background(), module, filepath.Join("testdata", module+".wasm"), wasm.Limits{Timeout: 200 * time.Millisecond}, wasm.Grants{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := turn(t, x, "hello"); err != nil {
		t.Fatal(err)
	}
	base := vmHWM(t)
	for range 20 {
		if err := turn(t, x, input); err == nil {
			t.Fatalf("turn(%q) succeeded", input)
		}
		if err := turn(t, x, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("RSS %d %d\n", base, vmHWM(t))
}

// vmHWM is the process's peak resident set size, in bytes.
func vmHWM(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

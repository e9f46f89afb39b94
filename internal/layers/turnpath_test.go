package layers

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPlainTurnPath measures what one quick start Send runs, with Go's
// coverage counters (the program is internal/layers/turnpath, built with
// coverage on and run on the quick start's config): the files
// it enters, by package. A turn of an agent that uses no optional feature
// must not enter that feature's code, though the program links it as the
// CLI does: not MCP's packages, not the cluster's; nor more than 10 files
// of the turn engine.
// It logs the files it entered, the figure BENCHMARKS.md records.
func TestPlainTurnPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the runtime with coverage")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const module = "github.com/ganglion-dev/ganglion"
	dir := t.TempDir()
	bin, covDir, goCover := filepath.Join(dir, "turnpath"), filepath.Join(dir, "counters"), filepath.Join(dir, "gocoverdir")
	for _, d := range []string{covDir, goCover} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command(goCmd, "build", "-cover", "-covermode=atomic", "-coverpkg="+module+"/...", "-o", bin, "./turnpath")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./turnpath: %v\n%s", err, out)
	}
	example, err := filepath.Abs("../../examples/quickstart/ganglion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, example, covDir)
	run.Env = append(os.Environ(), "GOCOVERDIR="+goCover) // where it writes its counters at exit, which are not these
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("turnpath: %v\n%s", err, out)
	}
	text := filepath.Join(dir, "cover.txt")
	if out, err := exec.Command(goCmd, "tool", "covdata", "textfmt", "-i="+covDir, "-o="+text).CombinedOutput(); err != nil {
		t.Fatalf("go tool covdata: %v\n%s", err, out)
	}
	counts, err := blockCounts(text)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for block, n := range counts {
		if n > 0 && !strings.Contains(block, "/internal/layers/turnpath/") {
			seen[block[:strings.LastIndex(block, ":")]] = true
		}
	}
	entered := slices.Sorted(mapsKeys(seen))
	if len(entered) == 0 {
		t.Fatal("the Send entered no file: the coverage data is empty")
	}
	byPkg := map[string][]string{}
	for _, f := range entered {
		rel := strings.TrimPrefix(f, module+"/")
		byPkg[path.Dir(rel)] = append(byPkg[path.Dir(rel)], path.Base(rel))
	}
	var report strings.Builder
	pkgs := slices.Sorted(mapsKeys(byPkg))
	for _, p := range pkgs {
		fmt.Fprintf(&report, "\n  %s (%d): %s", p, len(byPkg[p]), strings.Join(byPkg[p], " "))
	}
	t.Logf("one quick start Send enters %d files in %d packages:%s", len(entered), len(pkgs), report.String())
	// The engine's files a plain turn walks through: a turn that names
	// no feature reads no more of the engine than this.
	const maxEngineFiles = 10
	if n := len(byPkg["runtime/internal/engine"]); n > maxEngineFiles {
		t.Errorf("a plain turn entered %d files of the engine, past %d: %s", n, maxEngineFiles, strings.Join(byPkg["runtime/internal/engine"], " "))
	}
	for _, p := range pkgs {
		if p == "runtime/mcp" || strings.HasPrefix(p, "runtime/internal/mcpsrc") || p == "runtime/cluster" || strings.HasPrefix(p, "runtime/internal/coord") {
			t.Errorf("a plain turn entered package %s, which only a config with MCP servers or a cluster uses", p)
		}
	}
}

// blockCounts reads a coverage profile in text form: the count of each
// block, "file:start,end", summed over the profile's lines.
func blockCounts(profile string) (map[string]int64, error) {
	f, err := os.Open(profile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		// file:start,end statements count
		fields := strings.Fields(line)
		if len(fields) != 3 || !strings.Contains(fields[0], ":") {
			return nil, fmt.Errorf("%s: unexpected line %q", profile, line)
		}
		n, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", profile, line, err)
		}
		counts[fields[0]] += n
	}
	return counts, sc.Err()
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

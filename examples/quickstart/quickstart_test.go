package quickstart_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/shlex"

	"github.com/ganglion-dev/ganglion/runtime"
	_ "github.com/ganglion-dev/ganglion/runtime/model/anthropic" // the README's recipes name both
	_ "github.com/ganglion-dev/ganglion/runtime/model/openai"
)

// readmeCommand returns the quick start command of the README.
func readmeCommand(t *testing.T, root string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("go run ./cmd/ganglion run examples/quickstart[^`\n]*").Find(readme)
	if m == nil {
		t.Fatal("README.md shows no `go run ./cmd/ganglion run examples/quickstart ...` command")
	}
	args, err := shlex.Split(string(m))
	if err != nil {
		t.Fatalf("README command %q: %v", m, err)
	}
	return args
}

// TestQuickStart builds the CLI and runs the README's command in a fresh
// directory holding only the example, twice: the second run must find the
// first run's conversation in the data directory and answer again.
func TestQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	args := readmeCommand(t, root)
	if len(args) < 4 || args[0] != "go" || args[1] != "run" || args[2] != "./cmd/ganglion" {
		t.Fatalf("unexpected README command %q", args)
	}
	bin := filepath.Join(t.TempDir(), "ganglion")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ganglion")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A fresh working directory with the example at the same relative path;
	// the default data directory (.ganglion/data) lands next to its config.
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "examples", "quickstart"), os.DirFS(filepath.Join(root, "examples", "quickstart"))); err != nil {
		t.Fatal(err)
	}
	// Not the data a run of the quick start left in the repository (its
	// key file would be copied without its mode 0600): a new user's first run.
	if err := os.RemoveAll(filepath.Join(work, "examples", "quickstart", ".ganglion")); err != nil {
		t.Fatal(err)
	}
	const want = `Let me read the notes first.
[tool] read_file {"path":"notes.txt"}
[tool] read_file -> 4 lines
Now let me count the words.
[tool] execute_command {"command":"wc -w < notes.txt"}
[tool] execute_command -> 13
notes.txt is the team's launch checklist, with three open items: write the README, record the benchmarks and tag v0.1. Word count: 13
`
	for run := 1; run <= 2; run++ {
		cmd := exec.Command(bin, args[3:]...)
		cmd.Dir = work
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d: %v\nstderr:\n%s", run, err, stderr.String())
		}
		if got := normalise(stdout.String()); got != want {
			t.Errorf("run %d stdout:\n%s\nwant:\n%s", run, got, want)
		}
		if stderr.Len() != 0 {
			t.Errorf("run %d stderr is not empty:\n%s", run, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(work, "examples", "quickstart", ".ganglion", "data")); err != nil {
		t.Errorf("the data directory was not created where the README says: %v", err)
	}
}

// normalise removes the padding some wc implementations put before the count.
func normalise(s string) string {
	return regexp.MustCompile(`-> +(\d+)`).ReplaceAllString(strings.ReplaceAll(s, "\r\n", "\n"), "-> $1")
}

// TestREADMEProviderRecipe: every model line the README offers for real
// providers, put in place of the quick start's model line, makes a config
// that validates and a runtime that starts (no request is sent).
func TestREADMEProviderRecipe(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("ganglion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	modelLine := regexp.MustCompile(`(?m)^model: \{provider: scripted[^\n]*$`)
	if !modelLine.Match(cfg) {
		t.Fatal("the quick start's config has no one-line model: to swap")
	}
	lines := regexp.MustCompile("model: \\{provider: (?:openai|anthropic)[^}`]*\\}").FindAll(readme, -1)
	if len(lines) < 4 {
		t.Fatalf("README offers %d provider lines, want the recipe's and the table's", len(lines))
	}
	for _, line := range lines {
		t.Run(string(line), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
				t.Fatal(err)
			}
			swapped := modelLine.ReplaceAll(cfg, line)
			if err := os.WriteFile(filepath.Join(dir, "ganglion.yaml"), swapped, 0o644); err != nil {
				t.Fatal(err)
			}
			rt, err := runtime.New(context.Background(), runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")), runtime.WithMemoryStore())
			if err != nil {
				t.Fatalf("%s:\n%v", line, err)
			}
			rt.Close()
		})
	}
}

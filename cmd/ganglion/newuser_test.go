package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the built binary, from where a new user stands: often
// not the config's directory.

// TestDataDirFollowsConfig: the same config run from two directories has
// one history, kept next to the config, and the working directories stay
// clean.
func TestDataDirFollowsConfig(t *testing.T) {
	t.Parallel()
	proj := project(t, testConfig)
	here, there := t.TempDir(), t.TempDir()

	r := exe(t, here, "", "run", proj, "first")
	check(t, "run from one directory", r, exitOK, ptr("echo first\n"), nil, "")
	r = exe(t, there, "", "run", proj, "second")
	check(t, "run from another", r, exitOK, ptr("echo second\n"), nil, "")

	r = exe(t, there, "", "history", proj)
	if !strings.Contains(r.stdout, "first") || !strings.Contains(r.stdout, "second") {
		t.Errorf("history from the second directory lacks a turn:\n%s", r.stdout)
	}
	for _, d := range []string{here, there} {
		if _, err := os.Stat(filepath.Join(d, ".ganglion")); !os.IsNotExist(err) {
			t.Errorf("%s/.ganglion exists (%v): the data followed the working directory", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, ".ganglion", "data")); err != nil {
		t.Errorf("no data next to the config: %v", err)
	}
	r = exe(t, here, "", "run", "--help")
	if !strings.Contains(r.stdout, ".ganglion/data next to ganglion.yaml") {
		t.Errorf("run --help does not say where the data lives:\n%s", r.stdout)
	}
}

// hintLine returns the command of stderr's "answer it:"-style hint that
// starts with prefix ("ganglion answer"), up to the ", or" before the
// next command or the end of the line.
func hintLine(t *testing.T, stderr, prefix string) string {
	t.Helper()
	i := strings.Index(stderr, prefix)
	if i < 0 {
		t.Fatalf("no %q hint in:\n%s", prefix, stderr)
	}
	line := stderr[i:]
	line, _, _ = strings.Cut(line, "\n")
	line, _, _ = strings.Cut(line, ", or")
	line, _, _ = strings.Cut(line, " (or ")
	return line
}

// runHint runs a hinted command line as printed, through a POSIX shell in
// dir, with "ganglion" the binary under test.
func runHint(t *testing.T, dir, line string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "PATH="+filepath.Dir(cliBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// TestPauseHintWorksFromHere: the command a pause prints works, pasted as
// printed, from where the user ran the first one: a config elsewhere, a
// path with a space, a --data of its own.
func TestPauseHintWorksFromHere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sub     string // the config's directory under a fresh parent
		cwd     string // "parent", "config" or "elsewhere"
		data    bool   // pass --data
		wantDir bool   // the hint names the directory
	}{
		{"from the parent, a relative path", "proj", "parent", false, true},
		{"a path with a space", "my proj", "parent", false, true},
		{"from the config's directory", "proj", "config", false, false},
		{"from elsewhere, with --data", "proj", "elsewhere", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			proj := filepath.Join(parent, tt.sub)
			must(t, os.MkdirAll(proj, 0o755))
			must(t, os.WriteFile(filepath.Join(proj, "ganglion.yaml"), []byte(pendingConfig), 0o644))
			must(t, os.WriteFile(filepath.Join(proj, "script.yaml"), []byte(pendingScript), 0o644))
			cwd, dirArg := parent, tt.sub
			switch tt.cwd {
			case "config":
				cwd, dirArg = proj, "."
			case "elsewhere":
				cwd, dirArg = t.TempDir(), proj
			}
			args := []string{"run", dirArg, "What pricing should we use?"}
			if tt.data {
				args = append(args, "--data", filepath.Join(parent, "store"))
			}
			r := exe(t, cwd, "", args...)
			check(t, "run", r, exitPaused, nil, nil, "")
			hint := hintLine(t, r.stderr, "ganglion answer")
			if got := strings.Contains(hint, shellQuote(dirArg)); got != tt.wantDir || tt.data && !strings.Contains(hint, "--data") {
				t.Errorf("hint %q: names the directory %v, want %v (--data wanted: %v)", hint, got, tt.wantDir, tt.data)
			}
			r = runHint(t, cwd, strings.Replace(hint, "ANSWER", "freemium", 1))
			id := regexp.MustCompile(`p-[0-9a-f]{12}`).FindString(hint)
			check(t, "the hinted answer, as printed", r, exitOK, ptr(askResumed), ptr("$ID of asker/default answered: Freemium\n"), id)
		})
	}
}

// TestRejectExitsZero: rejecting a required dependency does what was
// asked: the item is rejected and, as the help says, the agent's task
// fails. The command succeeded, so it exits 0, saying what became of the
// task.
func TestRejectExitsZero(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	r := exe(t, dir, "", "run", dir, "--agent", "keeper", "go")
	check(t, "run", r, exitPaused, nil, nil, "")
	it := onlyItem(t, dir)
	r = exe(t, dir, "", "reject", dir, it.ID, "--reason", "no key here")
	check(t, "reject", r, exitOK, ptr(""), ptr(it.ID+" of keeper/default rejected: the dependency OPENAI_API_KEY was required, so the agent's task failed: "+
		"required dependency OPENAI_API_KEY was rejected: no key here\n"), "")
	r = exe(t, dir, "", "pending", dir, "--all", "--json")
	if items := parsePending(t, r.stdout); len(items) != 1 || items[0].Status != "rejected" || items[0].Open {
		t.Errorf("after reject: %+v", items)
	}
}

// TestPendingApprovalReadable: an approval shows the tool, its arguments
// as a person reads them (no \u003e escapes), the matched rule and why,
// and says the answer is approve or deny; answering approve runs the call.
func TestPendingApprovalReadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(`default: approve
rules:
  - name: commands need a human
    when: tool.name == "execute_command"
    decision: ask
    reason: it runs a shell
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`workspace: workspace
model: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    tools: [execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  ops:
    turns:
      - steps:
          - tool_calls: [{name: execute_command, args: {command: "echo hi > out.txt && cat out.txt"}}]
      - steps:
          - text: "Ran: {{ .LastMessage }}"
`), 0o644))
	r := exe(t, dir, "", "run", dir, "write the file")
	check(t, "run", r, exitPaused, nil, nil, "")
	it := onlyItem(t, dir)
	wantWhat := `execute_command {"command":"echo hi > out.txt && cat out.txt"}; rules: commands need a human (ask: it runs a shell); why: `
	if !strings.Contains(r.stderr, "[paused] $ID approval: "+wantWhat) && !strings.Contains(r.stderr, "[paused] "+it.ID+" approval: "+wantWhat) {
		t.Errorf("run's pause line does not show the call readably:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "approve it: ganglion answer "+it.ID+" approve, or deny it: ganglion answer "+it.ID+" deny") {
		t.Errorf("run's hint does not say approve or deny:\n%s", r.stderr)
	}
	r = exe(t, dir, "", "pending", dir)
	if strings.Contains(r.stdout, `\u003e`) || !strings.Contains(r.stdout, wantWhat) {
		t.Errorf("pending:\n%s\nwant the call as %q", r.stdout, wantWhat)
	}
	r = exe(t, dir, "", "pending", "--help")
	if !strings.Contains(r.stdout, "approve or deny") {
		t.Errorf("pending --help does not say how to answer an approval:\n%s", r.stdout)
	}
	r = exe(t, dir, "", "answer", dir, it.ID, "approve")
	check(t, "answer approve", r, exitOK, nil, ptr(it.ID+" of ops/default approved: execute_command runs\n"), "")
	if !strings.Contains(r.stdout, "[tool] execute_command -> hi\n") {
		t.Errorf("the approved call did not run:\n%s", r.stdout)
	}
}

var (
	guardOnce sync.Once
	guardWasm string
)

// guardrail builds the repository's guardrail example once.
func guardrail(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	guardOnce.Do(func() {
		out := filepath.Join(filepath.Dir(cliBinary(t)), "guardrail.wasm")
		if r := exe(t, ".", "", "ext", "build", filepath.Join("..", "..", "examples", "extensions", "guardrail"), "-o", out,
			"--config", `{block: ["(?i)rm -rf"]}`); r.code != exitOK {
			t.Fatalf("ext build guardrail: %s", r.stderr)
		}
		guardWasm = out
	})
	if guardWasm == "" {
		t.Fatal("the guardrail did not build")
	}
	return guardWasm
}

// TestRunPrintsMiddlewareAnswer: when a middleware answers the turn
// itself, nothing streams; run prints the answer anyway, once, in text and
// interactive modes, and a streamed answer is not printed twice.
func TestRunPrintsMiddlewareAnswer(t *testing.T) {
	t.Parallel()
	wasm := guardrail(t)
	dir := project(t, `workspace: workspace
model: {provider: scripted, script: script.yaml}
agents:
  - name: helper
    extensions:
      - wasm: `+wasm+`
        config: {block: ['(?i)\brm\s+-rf\b']}
`)
	r := exe(t, dir, "", "run", dir, "please rm -rf /")
	check(t, "refused turn", r, exitOK, nil, nil, "")
	if !strings.Contains(r.stdout, "rm -rf") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("run printed %q, want the guardrail's one-line answer", r.stdout)
	}
	r = exe(t, dir, "", "run", dir, "hello")
	check(t, "streamed turn", r, exitOK, ptr("echo hello\n"), nil, "")
	// The history holds what the user saw: the refused request and the
	// guardrail's answer, as the guardrail's, then the next exchange.
	r = exe(t, dir, "", "history", dir, "--json")
	type stored struct {
		Role, Content string
		Source        struct{ Type, Extension string }
	}
	var hist []stored
	for line := range strings.Lines(r.stdout) {
		var m stored
		must(t, json.Unmarshal([]byte(line), &m))
		hist = append(hist, m)
	}
	if len(hist) != 4 || hist[0].Content != "please rm -rf /" || !strings.Contains(hist[1].Content, "rm -rf") ||
		hist[1].Source.Type != "extension" || hist[1].Source.Extension != "guardrail" || hist[2].Content != "hello" || hist[3].Content != "echo hello" {
		t.Errorf("history after a refused turn:\n%s", r.stdout)
	}
	r = exe(t, dir, "please rm -rf /\nhello\n", "run", dir)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != exitOK || len(lines) != 2 || !strings.Contains(lines[0], "rm -rf") || lines[1] != "echo hello" {
		t.Errorf("interactive run: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestPendingListsWithoutRunning: a listing runs no turn, not even the
// resume of an item whose deadline has passed; run and resume do that.
func TestPendingListsWithoutRunning(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	cfg := strings.Replace(pendingConfig, "  - name: asker\n    tools: [execute_command]\n    extensions: [{name: protocol}]",
		"  - name: asker\n    tools: [execute_command]\n    extensions: [{name: protocol, config: {timeout: 1500ms}}]", 1)
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(cfg), 0o644))
	r := exe(t, dir, "", "run", dir, "What pricing should we use?")
	check(t, "run", r, exitPaused, nil, nil, "")
	before := exe(t, dir, "", "history", dir, "--agent", "asker", "--json").stdout
	time.Sleep(1600 * time.Millisecond) // past the deadline
	for _, args := range [][]string{{"pending", dir}, {"pending", dir, "--all", "--json"}} {
		if r := exe(t, dir, "", args...); r.code != exitOK || strings.Contains(r.stdout, "Resumed") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	if after := exe(t, dir, "", "history", dir, "--agent", "asker", "--json").stdout; after != before {
		t.Errorf("pending ran a turn:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if it := onlyItem(t, dir); it.Status != "pending" {
		t.Errorf("after listing, the item is %s; want it pending until run or resume expires it", it.Status)
	}
	r = exe(t, dir, "", "resume", dir)
	if h := exe(t, dir, "", "history", dir, "--agent", "asker").stdout; r.code != exitOK || !strings.Contains(h, "Resumed with:") {
		t.Errorf("resume did not expire and resume the item: exit %d\n%s%s\nhistory:\n%s", r.code, r.stdout, r.stderr, h)
	}
}

// TestExtInspectWithoutConfig: a guest that refuses to start without its
// config is still inspectable: its manifest shows, and stderr says how to
// see the rest.
func TestExtInspectWithoutConfig(t *testing.T) {
	t.Parallel()
	wasm := guardrail(t)
	r := exe(t, ".", "", "ext", "inspect", wasm)
	if r.code != exitOK || !strings.Contains(r.stdout, "name:          guardrail\n") || !strings.Contains(r.stderr, "give its config with --config") ||
		!strings.Contains(r.stderr, "config: $.block: lists no pattern") {
		t.Errorf("inspect without config: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = exe(t, ".", "", "ext", "inspect", wasm, "--json", "--config", `{block: ["x"]}`)
	if r.code != exitOK || !strings.Contains(r.stdout, `"turn"`) {
		t.Errorf("inspect with config: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

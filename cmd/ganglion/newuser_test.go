package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
			check(t, "the hinted answer, as printed", r, exitOK, ptr(askResumed), ptr(""), "")
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

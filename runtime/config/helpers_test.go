package config_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name.golden, or rewrites the file
// with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("%s differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// errorList asserts that err is a non-empty config.ErrorList whose errors
// are all positioned, and returns it.
func errorList(t *testing.T, err error) config.ErrorList {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want one")
	}
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %T %v, want a config.ErrorList", err, err)
	}
	if len(list) == 0 {
		t.Fatal("got an empty ErrorList")
	}
	for _, e := range list {
		if e.Line < 1 || e.Column < 1 {
			t.Errorf("error without a position: %q at %d:%d", e.Msg, e.Line, e.Column)
		}
	}
	return list
}

// firstLines returns the header line of every error in list.
func firstLines(list config.ErrorList) []string {
	var lines []string
	for _, e := range list {
		h, _, _ := strings.Cut(e.Error(), "\n")
		lines = append(lines, h)
	}
	return lines
}

// known is what the tests' runtime knows.
var known = config.Known{
	ToolNames:      func() []string { return []string{"write_file", "read_file", "list_files", "execute_command"} },
	ExtensionNames: func() []string { return []string{"audit", "approval"} },
	ProviderNames:  func() []string { return []string{"scripted", "openai"} },
}

// mustParse parses src as ganglion.yaml and fails the test on error.
func mustParse(t *testing.T, src string) *config.File {
	t.Helper()
	f, err := config.Parse("ganglion.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

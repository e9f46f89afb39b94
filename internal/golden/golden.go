package golden

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// UpdateEnv is the environment variable that, set to 1, makes golden files
// that differ be rewritten, as a test binary's -update flag does.
const UpdateEnv = "GANGLION_UPDATE"

// Updating reports whether golden files are to be rewritten: the test
// binary's -update flag (if its package defines one) or GANGLION_UPDATE=1.
func Updating() bool {
	if os.Getenv(UpdateEnv) == "1" {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		return f.Value.String() == "true"
	}
	return false
}

// Compare compares got with the golden file at path. It writes the file
// when it is missing or, with update, when it differs; otherwise it
// returns how they differ ("" when they match): "PATH differs:" and a
// unified diff. Its error is a failure to read or write the file.
func Compare(path, got string, update bool) (msg string, wrote bool, err error) {
	want, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", true, os.WriteFile(path, []byte(got), 0o644)
	case err != nil:
		return "", false, err
	case string(want) == got:
		return "", false, nil
	case update:
		return "", true, os.WriteFile(path, []byte(got), 0o644)
	}
	return fmt.Sprintf("%s differs:\n%s", path, Diff(path, "now", string(want), got)), false, nil
}

// Diff returns the unified diff from want (named from) to got (named to),
// with two lines of context.
func Diff(from, to, want, got string) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(want), B: lines(got),
		FromFile: from, ToFile: to, Context: 2})
	if err != nil {
		return err.Error()
	}
	return d
}

// lines splits s after each newline; a last line without one is a line too.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

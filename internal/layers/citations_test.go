package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// outsideDoc matches a citation of a document that is not in the
// repository: the design notes the project was planned from. A comment
// states its rule in place, or links a heading of RATIONALE.md, so that a
// reader of the repository alone can check it.
var outsideDoc = regexp.MustCompile(`\b(DESIGN|STYLE)\.md\b|shared/seeds|\bseed 00[0-9]\b`)

// TestNoOutsideCitations: no Go file cites a document outside the
// repository.
func TestNoOutsideCitations(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "DESIGN.md")); err == nil {
		t.Skip("DESIGN.md is in the repository: citing it is fine")
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "citations_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outsideDoc.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel+":"+strconv.Itoa(i+1)+": "+m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: cites a document outside the repository; state the rule in place, or link a RATIONALE.md heading", f)
	}
}

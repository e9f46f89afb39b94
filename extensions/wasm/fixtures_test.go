package wasm_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFixtures rebuilds every testdata/*.wat with the command its header
// gives ("Rebuild: wat2wasm x.wat -o x.wasm") and checks that the result is
// the committed .wasm byte for byte, so that no fixture drifts from its
// source. It skips when wat2wasm (wabt) is not on PATH.
func TestFixtures(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm (wabt) is not on PATH: the .wasm fixtures are not checked against their .wat sources")
	}
	version, _ := exec.Command(wat2wasm, "--version").Output()
	sources, err := filepath.Glob(filepath.Join("testdata", "*.wat"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) == 0 {
		t.Fatal("no testdata/*.wat")
	}
	tmp := t.TempDir()
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			args, err := rebuildCommand(string(text), name)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			out := filepath.Join(tmp, name+".wasm")
			i := slices.Index(args, "-o")
			args[i+1] = out
			cmd := exec.CommandContext(t.Context(), wat2wasm, args[1:]...)
			cmd.Dir = "testdata"
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
			}
			built, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			committed, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
			if err != nil {
				t.Fatalf("%s has no committed module: %v", src, err)
			}
			if !bytes.Equal(built, committed) {
				t.Errorf("testdata/%s.wasm is stale: %s builds %d bytes that differ from the committed %d "+
					"(wat2wasm %s); rebuild it: cd testdata && wat2wasm %s.wat -o %s.wasm",
					name, src, len(built), len(committed), strings.TrimSpace(string(version)), name, name)
			}
		})
	}
}

// rebuildCommand returns the arguments of the "Rebuild:" command in the
// leading comment of a .wat file, checking that it runs wat2wasm on the
// file into its committed module.
func rebuildCommand(text, name string) ([]string, error) {
	for line := range strings.Lines(text) {
		comment, ok := strings.CutPrefix(strings.TrimSpace(line), ";;")
		if !ok {
			break // the header ends at the first line that is not a comment
		}
		_, cmd, ok := strings.Cut(comment, "Rebuild:")
		if !ok {
			continue
		}
		args := strings.Fields(cmd)
		i := slices.Index(args, "-o")
		switch {
		case len(args) == 0 || args[0] != "wat2wasm":
			return nil, fmt.Errorf("the Rebuild command %q does not run wat2wasm", cmd)
		case !slices.Contains(args, name+".wat"):
			return nil, fmt.Errorf("the Rebuild command %q does not build %s.wat", cmd, name)
		case i < 0 || i+1 >= len(args) || args[i+1] != name+".wasm":
			return nil, fmt.Errorf("the Rebuild command %q does not write %s.wasm (-o %s.wasm)", cmd, name, name)
		}
		return args, nil
	}
	return nil, fmt.Errorf(`its header comment has no "Rebuild: wat2wasm %s.wat -o %s.wasm" line`, name, name)
}

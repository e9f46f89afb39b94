package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ganglion-dev/ganglion"

// layer returns the layer of a module package path (relative to the
// module), and whether the rule covers it. Test-only harness packages
// (internal/guesttest, internal/benchturn, internal/layers/turnpath,
// extensions/conformance) stand above what they test.
func layer(rel string) (int, bool) {
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case strings.HasPrefix(rel, "internal/guesttest"), rel == "internal/benchturn", rel == "internal/layers/turnpath":
		return 4, true
	case rel == "extensions/conformance":
		return 4, true
	case top == "pipeline" || top == "internal":
		return 0, true
	case top == "store" || top == "events" || top == "ledger":
		return 1, true
	case top == "extensions":
		return 2, true
	case top == "runtime":
		return 3, true
	case top == "cmd" || top == "examples":
		return 4, true
	case top == "sdk":
		return -1, true // imports no host package at all
	}
	return 0, false
}

var layerNames = []string{"pipeline/internal", "store/events/ledger", "extensions", "runtime", "programs"}

// TestImportDirection fails if a package imports, directly or through
// another, a package of a higher layer.
func TestImportDirection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module+"/")
		from, ok := layer(pkg)
		if !ok {
			t.Errorf("package %s is in no layer: add it to layer()", pkg)
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			rel, ours := strings.CutPrefix(dep, module+"/")
			if !ours {
				continue
			}
			to, ok := layer(rel)
			if !ok {
				continue // reported as a package of its own
			}
			switch {
			case from == -1:
				t.Errorf("%s (the guest SDK) imports the host's package %s", pkg, rel)
			case to > from:
				t.Errorf("%s (%s) imports %s (%s), a higher layer", pkg, layerNames[from], rel, layerNames[to])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; go list found too few", checked)
	}
}

// TestLayerRule checks the classification itself.
func TestLayerRule(t *testing.T) {
	for _, tt := range []struct {
		pkg  string
		want int
	}{
		{"pipeline", 0}, {"internal/secret", 0}, {"store", 1}, {"ledger", 1}, {"events", 1},
		{"extensions", 2}, {"extensions/wasm", 2}, {"extensions/conformance", 4},
		{"runtime", 3}, {"runtime/model/openai", 3}, {"cmd/ganglion", 4}, {"examples/embed", 4},
		{"internal/guesttest/warm", 4}, {"sdk", -1},
	} {
		if got, ok := layer(tt.pkg); !ok || got != tt.want {
			t.Errorf("layer(%q) = %d, %v; want %d", tt.pkg, got, ok, tt.want)
		}
	}
}

//go:build !wasip1

package assemblyscript_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestJSON compiles the SDK's checks, test/json.ts (the JSON module),
// test/pending.ts (the JSON of pending items) and test/caps.ts (the JSON
// of files and HTTP), with the pinned compiler and runs them with Node.js,
// as npm test does. It skips when the compiler is
// not installed (cd sdk/assemblyscript && npm ci).
func TestJSON(t *testing.T) {
	asc := filepath.Join("node_modules", "assemblyscript", "bin", "asc.js")
	if _, err := os.Stat(asc); err != nil {
		t.Skipf("the AssemblyScript compiler is not installed (run: cd sdk/assemblyscript && npm ci): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed (apt-get install nodejs npm): %v", err)
	}
	out := filepath.Join(t.TempDir(), "test.wasm")
	if b, err := exec.CommandContext(t.Context(), node, asc, "--config", "test/asconfig.json", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("asc test/asconfig.json: %v\n%s", err, b)
	}
	// asc writes the bindings beside the module, named after it.
	b, err := exec.CommandContext(t.Context(), node, "test/run.mjs", filepath.Join(filepath.Dir(out), "test.js")).CombinedOutput()
	if err != nil {
		t.Fatalf("test/run.mjs: %v\n%s", err, b)
	}
}

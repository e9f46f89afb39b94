package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// The AssemblyScript guest: the SDK of sdk/assemblyscript and the example
// built with it, whose as-guard.wasm is committed so that these tests need
// no npm.
const (
	asRoot     = "../.."
	asSDK      = "sdk/assemblyscript"
	asGuardDir = "examples/extensions/as-guard"
	asGuard    = asGuardDir + "/as-guard.wasm"
	// asBuild is the build command of as-guard.wasm, run at the repository's
	// root (asc's output depends on the directory it runs in).
	asBuild = asSDK + "/node_modules/.bin/asc --config " + asGuardDir + "/asconfig.json"
)

// asCountingModel counts the model calls.
type asCountingModel struct {
	model.Provider
	calls atomic.Int64
}

func (m *asCountingModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	m.calls.Add(1)
	return m.Provider.Stream(ctx, req)
}

// TestAssemblyScriptGuard runs the committed as-guard.wasm in a runtime: an
// input starting with "!" is refused by the guest without a model call;
// any other reaches the model, whether the guest read the text from the
// host or kept it from the turn before.
func TestAssemblyScriptGuard(t *testing.T) {
	const script = `
agents:
  a:
    fallback:
      steps:
        - text: "model saw {{ .Input }}"
`
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	m := &asCountingModel{Provider: sc}
	path, err := filepath.Abs(filepath.Join(asRoot, asGuard))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := start(t, "[{wasm: "+path+"}]", script, runtime.WithModel(m), runtime.WithLogger(logger))

	tests := []struct {
		name, input, want string
		calls             int64 // model calls the turn makes
	}{
		{"refused", "!x", "refused by as-guard", 0},
		{"passed", "hello", "model saw hello", 1},
		// The same text again: the guest keeps the text it read (the
		// inbox), and must decide as it did.
		{"passed again", "hello", "model saw hello", 1},
		{"refused after", "!x", "refused by as-guard", 0},
		{"refused again", "!x", "refused by as-guard", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := m.calls.Load()
			res, err := rt.Send(context.Background(), "a", "k-"+tt.name, runtime.UserMessage(tt.input))
			if err != nil {
				t.Fatalf("Send(%q): %v", tt.input, err)
			}
			if res.FinishReason != pipeline.FinishText || res.Response.Content != tt.want {
				t.Errorf("Send(%q) = %s %q, want %s %q", tt.input, res.FinishReason, res.Response.Content, pipeline.FinishText, tt.want)
			}
			if got := m.calls.Load() - before; got != tt.calls {
				t.Errorf("Send(%q) called the model %d times, want %d", tt.input, got, tt.calls)
			}
		})
	}
	if n := strings.Count(logs.String(), "as-guard saw a turn"); n != len(tests) {
		t.Errorf("as-guard logged %d turns, want %d:\n%s", n, len(tests), logs.String())
	}
	if !strings.Contains(logs.String(), "extension=as-guard") {
		t.Errorf("the guest's logs lack the extension name:\n%s", logs.String())
	}
}

// TestAssemblyScriptGuardFresh rebuilds as-guard.wasm with the pinned
// AssemblyScript compiler and compares it byte for byte with the committed
// module: asc's output is deterministic for a given version, options and
// working directory. It skips when the compiler is not installed
// (cd sdk/assemblyscript && npm ci).
func TestAssemblyScriptGuardFresh(t *testing.T) {
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	asReadJSON(t, filepath.Join(asRoot, asSDK, "package.json"), &pkg)
	pinned := pkg.DevDependencies["assemblyscript"]
	if pinned == "" {
		t.Fatalf("%s/package.json does not pin assemblyscript", asSDK)
	}
	installedPkg := filepath.Join(asRoot, asSDK, "node_modules", "assemblyscript", "package.json")
	if _, err := os.Stat(installedPkg); err != nil {
		t.Skipf("AssemblyScript %s is not installed (run: cd %s && npm ci): %v", pinned, asSDK, err)
	}
	var installed struct {
		Version string `json:"version"`
	}
	asReadJSON(t, installedPkg, &installed)
	if installed.Version != pinned {
		t.Skipf("AssemblyScript %s is installed, %s/package.json pins %s (run: cd %s && npm ci)", installed.Version, asSDK, pinned, asSDK)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed: %v", err)
	}

	out := filepath.Join(t.TempDir(), "as-guard.wasm")
	asc := filepath.Join(asSDK, "node_modules", "assemblyscript", "bin", "asc.js")
	cmd := exec.CommandContext(t.Context(), node, asc, "--config", asGuardDir+"/asconfig.json", "-o", out)
	cmd.Dir = asRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("asc: %v\n%s", err, b)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(asRoot, asGuard))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		t.Errorf("%s is stale: the sources build a different module (%d bytes, committed %d); rebuild it at the repository's root with\n\t%s",
			asGuard, len(built), len(committed), asBuild)
	}
}

func asReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

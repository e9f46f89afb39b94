package extensions_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// The hand-written minimal extension of sdk/ABI.md ("Minimal module").
const (
	minimalWAT  = "minimal-wat/minimal.wat"
	minimalWasm = "minimal-wat/minimal.wasm"
	abiDoc      = "../../sdk/ABI.md"
)

// TestMinimalWAT loads the committed minimal.wasm in a runtime and runs
// turns through it: its turn middleware logs a line and passes each turn
// on to the model.
func TestMinimalWAT(t *testing.T) {
	path, err := filepath.Abs(minimalWasm)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string]string{
		"ganglion.yaml": "model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: [{wasm: " + path + "}]\n",
		"script.yaml":   "agents:\n  a:\n    fallback:\n      steps:\n        - text: \"model saw {{ .Input }}\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs logtest.Buffer
	rt, err := runtime.New(context.Background(), runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")), runtime.WithMemoryStore(),
		runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	inputs := []string{"hello", "again"}
	for _, in := range inputs {
		res := send(t, rt, "k", in)
		if res.FinishReason != pipeline.FinishText || res.Response.Content != "model saw "+in {
			t.Errorf("Send(%q) = %s %q, want %s %q", in, res.FinishReason, res.Response.Content, pipeline.FinishText, "model saw "+in)
		}
	}
	if n := strings.Count(logs.String(), `msg="minimal saw a turn"`); n != len(inputs) {
		t.Errorf("the middleware logged %d turns, want %d:\n%s", n, len(inputs), logs.String())
	}
	if !strings.Contains(logs.String(), "extension=minimal") {
		t.Errorf("the guest's log lacks the extension's name:\n%s", logs.String())
	}
}

// TestMinimalWATManifest: the module declares what sdk/ABI.md says, and
// imports and exports only what a turn middleware needs.
func TestMinimalWATManifest(t *testing.T) {
	code, err := os.ReadFile(minimalWasm)
	if err != nil {
		t.Fatal(err)
	}
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	x, err := e.LoadBytes(context.Background(), "minimal", minimalWasm, code, wasm.Limits{}, wasm.Grants{})
	if err != nil {
		t.Fatal(err)
	}
	info := x.Info()
	m := info.Manifest
	slices.Sort(info.Imports)
	slices.Sort(info.Exports)
	if m.Name != "minimal" || m.Version != "1.0.0" || m.ABI != 1 || !slices.Equal(m.Hooks, []string{"turn"}) ||
		!slices.Equal(info.Hooks, []string{"turn"}) || len(info.Tools) != 0 ||
		!slices.Equal(info.Imports, []string{"ganglion.log", "ganglion.manifest", "ganglion.next", "ganglion.register"}) ||
		!slices.Equal(info.Exports, []string{"ganglion_abi_version", "ganglion_init", "ganglion_turn"}) {
		t.Errorf("Info() = %+v", info)
	}
}

// TestMinimalWATInABI: sdk/ABI.md shows minimal.wat as it is, in its
// "Minimal module" section.
func TestMinimalWATInABI(t *testing.T) {
	src, err := os.ReadFile(minimalWAT)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(abiDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(doc, []byte("\n## Minimal module\n"))
	if !ok {
		t.Fatalf("%s has no \"## Minimal module\" section", abiDoc)
	}
	if !bytes.Contains(section, []byte("```wat\n"+string(src)+"```\n")) {
		t.Errorf("%s's \"Minimal module\" section does not show %s as it is, in a ```wat block", abiDoc, minimalWAT)
	}
}

// TestMinimalWATFresh rebuilds minimal.wasm with the command its header
// gives and compares it byte for byte with the committed module. It skips
// when wat2wasm (Debian's wabt) is not on PATH.
func TestMinimalWATFresh(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm (wabt) is not on PATH: minimal.wasm is not checked against minimal.wat")
	}
	src, err := os.ReadFile(minimalWAT)
	if err != nil {
		t.Fatal(err)
	}
	const rebuild = ";; Rebuild: wat2wasm minimal.wat -o minimal.wasm\n"
	if !bytes.Contains(src, []byte(rebuild)) {
		t.Fatalf("%s's header lacks %q", minimalWAT, rebuild)
	}
	out := filepath.Join(t.TempDir(), "minimal.wasm")
	cmd := exec.CommandContext(t.Context(), wat2wasm, "minimal.wat", "-o", out)
	cmd.Dir = filepath.Dir(minimalWAT)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(minimalWasm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, committed) {
		version, _ := exec.Command(wat2wasm, "--version").Output()
		t.Errorf("%s is stale: wat2wasm %s builds %d bytes that differ from the committed %d; rebuild it: cd %s && wat2wasm minimal.wat -o minimal.wasm",
			minimalWasm, strings.TrimSpace(string(version)), len(built), len(committed), filepath.Dir(minimalWAT))
	}
}

package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestLoadFailureLeavesConfigUsable: a module that fails to load (here
// invalid) fails the turns of the agent that lists it, and nothing else:
// another agent answers, and both histories read.
func TestLoadFailureLeavesConfigUsable(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	script := "agents:\n  a: {fallback: {steps: [{text: ok}]}}\n  b: {fallback: {steps: [{text: ok}]}}\n"
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "model: {provider: scripted, script: script.yaml}\nagents:\n" +
		"  - name: a\n    extensions: [{wasm: " + filepath.Join(wd, "testdata", "refuse_fuel.wasm") + "}]\n" +
		"  - name: b\n"
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithMemoryStore())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer rt.Close()
	ctx := context.Background()
	_, err = rt.Send(ctx, "a", "k", runtime.UserMessage("hi"))
	if err == nil || !strings.Contains(err.Error(), `extension "refuse_fuel": turn middleware: not loaded: wasm `) ||
		!strings.HasSuffix(err.Error(), `refuse_fuel.wasm: invalid module: invalid function[1] export["ganglion_init"]: invalid global index`) {
		t.Errorf("Send to a: %v, want the load error", err)
	}
	res, err := rt.Send(ctx, "b", "k", runtime.UserMessage("hi"))
	if err != nil || res.FinishReason != pipeline.FinishText || res.Response.Content != "ok" {
		t.Errorf("Send to b = %+v, %v, want %q", res, err, "ok")
	}
	for _, agent := range []string{"a", "b"} {
		if _, err := rt.History(ctx, agent, "k"); err != nil {
			t.Errorf("History(%s): %v", agent, err)
		}
	}
}

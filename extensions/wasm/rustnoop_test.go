package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// TestRustNoop checks testdata/rustnoop, the Rust guest of the benchmarks:
// it registers a turn, a step and a toolCall layer, refuses a setting it
// does not know, and three of them, reading their field or not, pass the
// benchmarks' turn (a tool call, then the answer) through unchanged.
func TestRustNoop(t *testing.T) {
	code := rustNoop(t)
	e := newEngine(t, "")
	x := loadBytes(t, e, "rustnoop", code, wasm.Grants{})
	if got, want := x.Info().Hooks, []string{"turn", "step", "tool_call"}; !slices.Equal(got, want) {
		t.Errorf("hooks %q, want %q", got, want)
	}
	_, err := e.LoadBytes(context.Background(), "rustnoop", "rustnoop.wasm", code, wasm.Limits{}, wasm.Grants{Config: []byte(`{"colour": "red"}`)})
	if err == nil || !strings.Contains(err.Error(), "config: $.colour: unknown setting") {
		t.Errorf("loading with an unknown setting: %v, want the setting refused", err)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rustnoop.wasm"), code, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := scripted.Parse("bench.yaml", []byte(benchturn.Script))
	if err != nil {
		t.Fatal(err)
	}
	for _, read := range []string{"false", "true"} {
		t.Run("read="+read, func(t *testing.T) {
			exts := strings.ReplaceAll("[{wasm: rustnoop.wasm, name: s1, config: {read: R}}, {wasm: rustnoop.wasm, name: s2, config: {read: R}}, {wasm: rustnoop.wasm, name: s3, config: {read: R}}]", "R", read)
			cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("agents:\n  - name: bench\n    tools: [lookup]\n    extensions: "+exts+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(script),
				runtime.WithTool(benchturn.Lookup), runtime.WithWasmCache(filepath.Join(dir, "cache")))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ctx := context.Background()
			// Two turns: the second's reads may be the values kept from the first.
			for range 2 {
				res, err := rt.Send(ctx, benchturn.Agent, "k", runtime.UserMessage(benchturn.Question))
				if err != nil {
					t.Fatal(err)
				}
				if res.FinishReason != pipeline.FinishText || res.Response.Content != benchturn.Answer {
					t.Fatalf("the turn finished %q with %q, want %q with %q", res.FinishReason, res.Response.Content, pipeline.FinishText, benchturn.Answer)
				}
			}
			hist, err := rt.History(ctx, benchturn.Agent, "k")
			if err != nil {
				t.Fatal(err)
			}
			var tools []string
			for _, m := range hist {
				if m.Role == pipeline.RoleTool {
					tools = append(tools, m.Content)
				}
			}
			if want := []string{"42", "42"}; !slices.Equal(tools, want) {
				t.Errorf("the tool results in the history are %q, want %q", tools, want)
			}
		})
	}
}

package wasm_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// start runs a runtime whose agent "a" loads the modules of testdata by
// name, with the scripted model.
func start(t *testing.T, extensions, script string, opts ...runtime.Option) *runtime.Runtime {
	t.Helper()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: " +
		strings.ReplaceAll(extensions, "testdata/", filepath.Join(wd, "testdata")+"/") + "\n"
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(c), runtime.WithMemoryStore()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func TestGuard(t *testing.T) {
	var logs bytes.Buffer
	rt := start(t, `[{wasm: testdata/guard.wasm}]`, `
agents:
  a:
    fallback:
      steps:
          - text: "calling"
            tool_calls: [{name: pong, id: c1}]
          - text: "tool said {{ .LastMessage }}"
`, runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := context.Background()
	tests := []struct {
		input, want string
	}{
		{"!rm everything", "refused by guard"},
		{"hello", "tool said pong"},
	}
	for _, tt := range tests {
		res, err := rt.Send(ctx, "a", "k", runtime.UserMessage(tt.input))
		if err != nil {
			t.Fatalf("Send(%q): %v", tt.input, err)
		}
		if res.FinishReason != pipeline.FinishText || res.Response.Content != tt.want {
			t.Errorf("Send(%q) = %s %q, want %q", tt.input, res.FinishReason, res.Response.Content, tt.want)
		}
	}
	if n := strings.Count(logs.String(), "guard saw a turn"); n != 2 {
		t.Errorf("guard logged %d turns, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "extension=guard") {
		t.Errorf("the guest's logs lack the extension name:\n%s", logs.String())
	}
}

// TestStdioAndClock: what a guest writes to stdout and stderr reaches the
// extension's logger, a line per record; its clock is fake unless the
// config grants it the real one.
func TestStdioAndClock(t *testing.T) {
	script := "agents: {a: {fallback: {steps: [{text: ok}]}}}\n"
	for _, tt := range []struct {
		ext, clock string
	}{
		{`[{wasm: testdata/stdio.wasm}]`, "clock: fake"},
		{`[{wasm: testdata/stdio.wasm, clock: true}]`, "clock: real"},
	} {
		t.Run(tt.clock, func(t *testing.T) {
			var logs bytes.Buffer
			rt := start(t, tt.ext, script, runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("hi")); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				`level=INFO msg="guest says hi" agent=a extension=stdio stream=stdout`,
				`level=WARN msg="guest warns" agent=a extension=stdio stream=stderr`,
				`level=INFO msg="` + tt.clock + `" agent=a extension=stdio stream=stdout`,
			} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("the log lacks %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

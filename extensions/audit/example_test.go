package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/extensions/audit"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// A program reads an instance's counts from the extension's state.
func ExampleCounts() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember the milk\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: r, args: {path: notes.txt}}]
        - tool_calls: [{name: read_file, id: m, args: {path: missing.txt}}]
        - text: "done"
`), 0o644)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`
model: {provider: scripted, script: script.yaml}
workspace: .
agents:
  - name: a
    tools: [read_file]
    extensions: [{name: audit}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("read my notes")); err != nil {
		fmt.Println(err)
		return
	}
	raw, err := rt.ExtensionState(ctx, "a", "k", audit.Name)
	if err != nil {
		fmt.Println(err)
		return
	}
	var c audit.Counts
	if err := json.Unmarshal(raw, &c); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d turn, %d tool calls, %d failed\n", c.Turns, c.ToolCalls, c.ToolErrors)
	// Output:
	// 1 turn, 2 tool calls, 1 failed
}

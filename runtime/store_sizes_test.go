package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// TestStoreSizes: the badger store's sizes, from the config or an option,
// reach the store the runtime opens. A memtable's size bounds a commit, so
// a step whose two tool results are 700 kB each is committed with the
// default memtable, and refused whole with the smallest one.
func TestStoreSizes(t *testing.T) {
	const script = `
agents:
  assistant:
    fallback:
      steps:
        - tool_calls: [{name: big, id: a}, {name: big, id: b}]
        - text: "Read them both."
`
	big := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "big", Description: "Returns 700 kB.", Category: pipeline.CategoryRead},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: strings.Repeat("x", 700<<10)}, nil
		},
	}
	tests := []struct {
		name    string
		yaml    string // added to the config
		opts    []runtime.Option
		wantErr string // "" if the turn commits
	}{
		{"default", "", nil, ""},
		{"config", "store: {memtable_size: 8MiB, block_cache_size: 8MiB}\n", nil, "too large for one transaction"},
		{"option", "", []runtime.Option{runtime.WithStoreOptions(store.WithMemTableSize(store.MinMemTableSize))}, "too large for one transaction"},
		{"the option after the config", "store: {memtable_size: 8MiB}\n", []runtime.Option{runtime.WithStoreOptions(store.WithMemTableSize(64 << 20))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.Parse(dir+"/ganglion.yaml", []byte("model: {provider: scripted, script: s.yaml}\n"+tt.yaml+"agents:\n  - name: assistant\n    tools: [big]\n"))
			if err != nil {
				t.Fatal(err)
			}
			model, err := scripted.Parse("s.yaml", []byte(script))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(cfg), runtime.WithDataDir(dir + "/data"),
				runtime.WithModel(model), runtime.WithTool(big)}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Send(context.Background(), "assistant", "k", runtime.UserMessage("Read both."))
			msgs, herr := rt.History(context.Background(), "assistant", "k")
			if herr != nil {
				t.Fatal(herr)
			}
			if tt.wantErr == "" {
				if err != nil || res.Response.Content != "Read them both." || len(msgs) != 5 {
					t.Fatalf("turn: %v, %d messages stored; want it answered and 5 messages", err, len(msgs))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("turn: %v; want an error with %q", err, tt.wantErr)
			}
			for _, m := range msgs {
				if m.Role == pipeline.RoleTool {
					t.Errorf("a tool result of the refused step was stored: %s", m.ID)
				}
			}
		})
	}
}

package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// TestStoreSizes: the badger store's sizes, from the config or an option,
// reach the store the runtime opens. A memtable's size bounds a commit in
// records under 16 kB (larger ones are kept in Badger's value log and
// count a few bytes): a step whose two tool results are 700 kB each is
// committed with any memtable, one with a hundred results of 15 kB is
// refused whole with the default (and smallest), taken with 64 MiB.
func TestStoreSizes(t *testing.T) {
	large := []runtime.Option{runtime.WithStoreOptions(badger.WithMemTableSize(64 << 20))}
	tests := []struct {
		name    string
		yaml    string // added to the config
		opts    []runtime.Option
		results int    // tool calls in the step
		size    int    // of each result
		wantErr string // "" if the turn commits
	}{
		{"default, two of 700 kB", "", nil, 2, 700 << 10, ""},
		{"default, a hundred of 15 kB", "", nil, 100, 15 << 10, "too large for one transaction (about 1228 kB of records under 16 kB with a memtable of 8 MiB)"},
		{"config, two of 700 kB", "store: {memtable_size: 64MiB, block_cache_size: 64MiB}\n", nil, 2, 700 << 10, ""},
		{"config, a hundred of 15 kB", "store: {memtable_size: 64MiB, block_cache_size: 64MiB}\n", nil, 100, 15 << 10, ""},
		{"option, a hundred of 15 kB", "", large, 100, 15 << 10, ""},
		{"the option after the config", "store: {memtable_size: 64MiB}\n", []runtime.Option{runtime.WithStoreOptions(badger.WithMemTableSize(badger.MinMemTableSize))}, 100, 15 << 10, "too large for one transaction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.Parse(dir+"/ganglion.yaml", []byte("model: {provider: scripted, script: s.yaml}\n"+tt.yaml+"agents:\n  - name: assistant\n    tools: [big]\n"))
			if err != nil {
				t.Fatal(err)
			}
			var script strings.Builder
			script.WriteString("agents:\n  assistant:\n    fallback:\n      steps:\n        - tool_calls:\n")
			for i := range tt.results {
				fmt.Fprintf(&script, "            - {name: big, id: c%d}\n", i)
			}
			script.WriteString("        - text: \"Read them all.\"\n")
			model, err := scripted.Parse("s.yaml", []byte(script.String()))
			if err != nil {
				t.Fatal(err)
			}
			big := pipeline.Tool{
				ToolSpec: pipeline.ToolSpec{Name: "big", Description: "Returns a large text.", Category: pipeline.CategoryRead},
				Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
					return &pipeline.ToolResult{Content: strings.Repeat("x", tt.size)}, nil
				},
			}
			rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(cfg), runtime.WithDataDir(dir + "/data"),
				runtime.WithModel(model), runtime.WithTool(big)}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			res, err := rt.Send(context.Background(), "assistant", "k", runtime.UserMessage("Read them."))
			msgs, herr := rt.History(context.Background(), "assistant", "k")
			if herr != nil {
				t.Fatal(herr)
			}
			if tt.wantErr == "" {
				if want := tt.results + 3; err != nil || res.Response.Content != "Read them all." || len(msgs) != want {
					t.Fatalf("turn: %v, %d messages stored; want it answered and %d messages", err, len(msgs), want)
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

package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// A runtime built from a ganglion.yaml on disk, with the scripted model.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`
agents:
  greeter:
    fallback:
      steps:
        - text: "Hello, {{ .Input }}!"
`), 0o644)
	os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`
model: {provider: scripted, script: script.yaml}
agents:
  - name: greeter
    system: You greet people.
`), 0o644)

	ctx := context.Background()
	rt, err := runtime.New(ctx,
		runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")),
		runtime.WithDataDir(filepath.Join(dir, "data")), // badger; WithMemoryStore for throw-away runs
	)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	res, err := rt.Send(ctx, "greeter", "alice", runtime.UserMessage("Alice"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.FinishReason, res.TurnID, res.Response.Content)
	// Output: text_response turn-1 Hello, Alice!
}

// A native extension: a turn middleware that injects context before the
// model runs, and a toolCall middleware that masks what looks like a key in
// tool results. It is registered under a name, and agents list it in their
// config.
func Example_nativeExtension() {
	redactor := func(cfg extensions.Config) (extensions.Extension, error) {
		var s struct {
			Note string `yaml:"note"`
		}
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				// Before the turn: inject a system message the model will see.
				err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{
					Role: pipeline.RoleSystem, Content: s.Note,
					Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name},
				}})
				if err != nil {
					return nil, err
				}
				return t.Next(ctx)
			})
			api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				r, err := c.Next(ctx)
				if err == nil {
					r.Content = strings.ReplaceAll(r.Content, "sk-live-123", "[redacted]")
				}
				return r, err
			})
			return nil
		}), nil
	}
	secretTool := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "env", Description: "Shows the environment.", Category: pipeline.CategoryRead},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "API_KEY=sk-live-123"}, nil
		},
	}
	script, _ := scripted.Parse("script.yaml", []byte(`
agents:
  worker:
    turns:
      - steps:
          - tool_calls: [{name: env}]
          - text: "The tool said {{ .LastMessage }}"
`))
	cfg, _ := config.Parse("ganglion.yaml", []byte(`
agents:
  - name: worker
    tools: [env]
    extensions:
      - name: redactor
        config: {note: "Never reveal keys."}
`))

	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithModel(script), runtime.WithMemoryStore(),
		runtime.WithTool(secretTool), runtime.WithExtension("redactor", redactor))
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(ctx, "worker", "default", runtime.UserMessage("What is in the environment?"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Response.Content)
	history, _ := rt.History(ctx, "worker", "default")
	for _, m := range history {
		text := m.Content
		for _, tc := range m.ToolCalls {
			text += "(calls " + tc.Name + ")"
		}
		fmt.Printf("%s: %s\n", m.Role, text)
	}
	// Output:
	// The tool said API_KEY=[redacted]
	// system: Never reveal keys.
	// user: What is in the environment?
	// assistant: (calls env)
	// tool: API_KEY=[redacted]
	// assistant: The tool said API_KEY=[redacted]
}

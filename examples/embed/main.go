package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// script is what the scripted model answers: turn 1 calls the weather tool,
// turn 2 answers from the conversation.
const script = `
agents:
  concierge:
    turns:
      - steps:
          - tool_calls:
              - name: weather
                args: {city: Lisbon}
          - text: "It is {{ .LastMessage }} in Lisbon today."
      - steps:
          - text: "You asked about Lisbon; I would take a light jacket."
`

const appConfig = `
agents:
  - name: concierge
    system: You help travellers. Use the weather tool when asked about weather.
    tools: [weather]
    extensions:
      - name: polite        # the native extension registered below
        config:
          greeting: "Dear traveller,"
`

// weather is a custom tool implemented in Go.
var weather = pipeline.Tool{
	ToolSpec: pipeline.ToolSpec{
		Name:        "weather",
		Description: "Today's weather in a city.",
		Category:    pipeline.CategoryRead,
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
	},
	Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		var args struct{ City string }
		if err := json.Unmarshal(c.Arguments(), &args); err != nil {
			return nil, err
		}
		return &pipeline.ToolResult{Content: "sunny and 24 °C"}, nil
	},
}

// polite is a native extension: a turn middleware that prefixes every answer
// with a greeting from its config, and counts the turns it saw in its state.
func polite(cfg extensions.Config) (extensions.Extension, error) {
	var settings struct {
		Greeting string `yaml:"greeting"`
	}
	if err := cfg.Decode(&settings); err != nil {
		return nil, err
	}
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			res, err := t.Next(ctx)
			if err != nil {
				return res, err
			}
			res.Response.Content = settings.Greeting + " " + res.Response.Content
			var seen struct{ Turns int }
			if _, err := api.State.Load(ctx, t.InstanceKey(), &seen); err != nil {
				return nil, err
			}
			seen.Turns++
			return res, api.State.Save(ctx, t.InstanceKey(), seen)
		})
		return nil
	}), nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "ganglion-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(appConfig))
	if err != nil {
		return err
	}
	model, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx,
		runtime.WithConfig(cfg),
		runtime.WithModel(model),
		runtime.WithDataDir(filepath.Join(dir, "data")),
		runtime.WithTool(weather),
		runtime.WithExtension("polite", polite),
	)
	if err != nil {
		return err
	}
	defer rt.Close()

	for _, question := range []string{"What's the weather in Lisbon?", "What should I wear?"} {
		res, err := rt.Send(ctx, "concierge", "alice", runtime.UserMessage(question))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "> %s\n%s\n(%s, %d steps)\n\n", question, res.Response.Content, res.FinishReason, res.Steps)
	}

	history, err := rt.History(ctx, "concierge", "alice")
	if err != nil {
		return err
	}
	var roles []string
	for _, m := range history {
		roles = append(roles, string(m.Role))
	}
	state, err := rt.ExtensionState(ctx, "concierge", "alice", "polite")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "history: %s\npolite state: %s\n", strings.Join(roles, " "), state)
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

const configYAML = `
agents:
  - name: worker
    system: You are a careful worker.
    extensions: [{name: unconscious}, {name: observe}]
  - name: unconscious
    system: You notice what the worker might miss.
  - name: observer
    extensions: [{name: tally}]
`

const scriptYAML = `
agents:
  worker: {fallback: {steps: [{text: "Working on it, keeping in mind what I sensed."}]}}
  unconscious: {fallback: {steps: [{text: "careful: {{ .Input }} sounds urgent"}]}}
  observer: {fallback: {steps: [{text: "observed"}]}}
`

// unconscious asks the unconscious agent before the model runs.
func unconscious(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			hint, err := t.Agents().Request(ctx, "unconscious", t.Input().Text, pipeline.AgentCallOptions{})
			if err != nil {
				return nil, err
			}
			if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{
				Role: pipeline.RoleSystem, Content: "A feeling: " + hint,
				Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name}}}); err != nil {
				return nil, err
			}
			return t.Next(ctx)
		})
		return nil
	}), nil
}

// observe tells the observer what the worker answered, without waiting.
func observe(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			res, err := t.Next(ctx)
			if err == nil {
				err = t.Agents().Send(ctx, "observer", "worker said: "+res.Response.Content, pipeline.AgentCallOptions{})
			}
			return res, err
		})
		return nil
	}), nil
}

// tally counts, in the observer's state, the observations it received.
func tally(done *sync.WaitGroup) extensions.Factory {
	return func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				defer done.Done()
				var n struct{ Observations int }
				if _, err := api.State.Load(ctx, t.InstanceKey(), &n); err != nil {
					return nil, err
				}
				n.Observations++
				if err := api.State.Save(ctx, t.InstanceKey(), n); err != nil {
					return nil, err
				}
				return t.Next(ctx)
			})
			return nil
		}), nil
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "brain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := config.Parse(dir+"/ganglion.yaml", []byte(configYAML))
	if err != nil {
		return err
	}
	script, err := scripted.Parse("script.yaml", []byte(scriptYAML))
	if err != nil {
		return err
	}
	var observed sync.WaitGroup
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(script),
		runtime.WithExtension("unconscious", unconscious), runtime.WithExtension("observe", observe),
		runtime.WithExtension("tally", tally(&observed)))
	if err != nil {
		return err
	}
	defer rt.Close()
	for _, msg := range []string{"ship the release", "answer the customer"} {
		observed.Add(1)
		res, err := rt.Send(ctx, "worker", "main", runtime.UserMessage(msg))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "> %s\n%s\n", msg, res.Response.Content)
	}
	observed.Wait() // the sends run in the background
	hist, err := rt.History(ctx, "worker", "main")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nthe worker's conversation (no agent call in it):")
	for _, m := range hist {
		fmt.Fprintf(out, "  %s: %s\n", m.Role, m.Content)
	}
	state, err := rt.ExtensionState(ctx, "observer", "main", "tally")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "observer state: %s\n", strings.TrimSpace(string(state)))
	return nil
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "brain:", err)
		os.Exit(1)
	}
}

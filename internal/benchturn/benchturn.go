package benchturn

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// Agent is the name of the benchmark's agent.
const Agent = "bench"

// Question is the turn's input text, and Answer the model's final answer.
const (
	Question = "What is the answer?"
	Answer   = "The answer is 42."
)

// Script is the scripted model's script: every turn of Agent asks for
// lookup {"key": "answer"}, then answers Answer.
const Script = `
agents:
  bench:
    fallback:
      steps:
        - tool_calls:
            - name: lookup
              args: {key: answer}
        - text: "The answer is 42."
`

// Config is the agent's config: the tool lookup, and the extensions mw1,
// mw2 and mw3, each [PassThrough].
const Config = `
agents:
  - name: bench
    tools: [lookup]
    extensions: [{name: mw1}, {name: mw2}, {name: mw3}]
`

// Lookup is the turn's tool: a JSON Schema with one required string
// property, key, checked on every call, and the result "42".
var Lookup = pipeline.Tool{
	ToolSpec: pipeline.ToolSpec{
		Name: "lookup", Description: "Looks a key up.", Category: pipeline.CategoryRead,
		Parameters: []byte(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`),
	},
	Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{Content: "42"}, nil
	},
}

// PassThrough is a native extension with one pass-through layer on each
// of turn, step and toolCall.
func PassThrough(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) { return t.Next(ctx) })
		api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) { return s.Next(ctx) })
		api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return c.Next(ctx)
		})
		return nil
	}), nil
}

// Options returns the options of a runtime that runs the turn: [Config]
// (as if read from dir/ganglion.yaml), the scripted model on [Script],
// [Lookup], and mw1 – mw3. The caller adds a store.
func Options(dir string) ([]runtime.Option, error) {
	script, err := scripted.Parse("bench.yaml", []byte(Script))
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(Config))
	if err != nil {
		return nil, err
	}
	return []runtime.Option{runtime.WithConfig(cfg), runtime.WithModel(script), runtime.WithTool(Lookup),
		runtime.WithExtension("mw1", PassThrough), runtime.WithExtension("mw2", PassThrough), runtime.WithExtension("mw3", PassThrough)}, nil
}

// New returns a runtime that runs the turn, with more options (a store),
// closed when tb ends.
func New(tb testing.TB, more ...runtime.Option) *runtime.Runtime {
	tb.Helper()
	opts, err := Options(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append(opts, more...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// Check returns an error unless res and err are the turn's outcome: the
// answer in text, after two steps.
func Check(res *pipeline.TurnResult, err error) error {
	if err != nil {
		return err
	}
	if res.FinishReason != pipeline.FinishText || res.Steps != 2 || res.Response.Content != Answer {
		return fmt.Errorf("turn = %s after %d steps, answer %q: want %s after 2, %q",
			res.FinishReason, res.Steps, res.Response.Content, pipeline.FinishText, Answer)
	}
	return nil
}

// A new instance every TurnsPerInstance turns and a new runtime every
// TurnsPerRuntime turns keep the conversations (up to ~1,000 messages) and
// the live heap (~25 MB) at realistic sizes instead of growing with b.N.
const (
	TurnsPerInstance = 256
	TurnsPerRuntime  = 64 * TurnsPerInstance
)

// Run runs b.N turns on one goroutine, in a new instance every
// [TurnsPerInstance] turns and a runtime from newRuntime every
// [TurnsPerRuntime] (made, and the last one closed, outside the timer),
// and fails b on a turn that is not the turn's outcome ([Check]). every,
// if not nil, runs outside the timer with each new runtime and every
// 1,024 turns.
func Run(b *testing.B, newRuntime func() *runtime.Runtime, every func()) {
	ctx := context.Background()
	in := runtime.UserMessage(Question)
	var rt *runtime.Runtime
	key := ""
	b.ReportAllocs()
	for i := range b.N {
		if i%TurnsPerRuntime == 0 || every != nil && i%1024 == 0 {
			b.StopTimer()
			if every != nil {
				every()
			}
			if i%TurnsPerRuntime == 0 {
				if rt != nil {
					rt.Close()
				}
				rt = newRuntime()
			}
			b.StartTimer()
		}
		if i%TurnsPerInstance == 0 {
			key = "i" + strconv.Itoa(i)
		}
		if err := Check(rt.Send(ctx, Agent, key, in)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if rt != nil {
		rt.Close()
	}
}

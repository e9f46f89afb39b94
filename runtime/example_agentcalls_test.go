package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// printingTransport is a [runtime.Transport] that prints each call it
// carries and hands it to the Deliver of the runtime that runs the target:
// here the same one; a networked transport reaches another process's.
type printingTransport struct{ rt *runtime.Runtime }

func (p *printingTransport) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	fmt.Printf("transport: to %s/%s from %v\n", agent, key, in.Metadata["callerAgent"])
	return p.rt.Deliver(ctx, agent, key, in)
}

// Middleware calls other agents through the turn's Agents; the runtime
// carries each call with its [runtime.Transport] (WithTransport; by
// default in process), and refuses a call back into the chain that waits
// for it ([runtime.ErrCycle]) and a chain longer than agent_calls.max_depth
// ([runtime.ErrDepth]). The caller sees those errors with errors.Is.
func ExampleTransport() {
	// forward is a native extension whose turn middleware asks the agent
	// its config names (to) before its own agent answers, and adds that
	// answer, or why the call was refused, to its own.
	forward := func(cfg extensions.Config) (extensions.Extension, error) {
		var c struct {
			To string `yaml:"to"`
		}
		if err := cfg.Decode(&c); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				heard, err := t.Agents().Request(ctx, c.To, t.Input().Text, pipeline.AgentCallOptions{})
				switch {
				case errors.Is(err, runtime.ErrCycle):
					heard = "refused: " + c.To + " is already waiting in this chain"
				case errors.Is(err, runtime.ErrDepth):
					heard = "refused: the chain is too deep"
				case err != nil:
					return nil, err
				}
				r, err := t.Next(ctx)
				if err == nil {
					r.Response.Content += " [" + heard + "]"
				}
				return r, err
			})
			return nil
		}), nil
	}
	tr := &printingTransport{}
	rt := exampleRuntime(`
agent_calls: {max_depth: 2}
agents:
  - name: a
    extensions: [{name: forward, config: {to: b}}]
  - name: b
    extensions: [{name: forward, config: {to: c}}]
  - name: c
    extensions: [{name: forward, config: {to: d}}]
  - name: d
  - name: ping
    extensions: [{name: forward, config: {to: pong}}]
  - name: pong
    extensions: [{name: forward, config: {to: ping}}]
`, `
agents:
  a: {fallback: {steps: [{text: "a answers"}]}}
  b: {fallback: {steps: [{text: "b answers"}]}}
  c: {fallback: {steps: [{text: "c answers"}]}}
  d: {fallback: {steps: [{text: "d answers"}]}}
  ping: {fallback: {steps: [{text: "ping answers"}]}}
  pong: {fallback: {steps: [{text: "pong answers"}]}}
`, runtime.WithTransport(tr), runtime.WithExtension("forward", forward))
	tr.rt = rt
	defer rt.Close()

	ctx := context.Background()
	for _, agent := range []string{"a", "ping"} {
		res, err := rt.Send(ctx, agent, "k", runtime.UserMessage("hello"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Response.Content)
	}
	// Output:
	// transport: to b/k from a
	// transport: to c/k from b
	// a answers [b answers [c answers [refused: the chain is too deep]]]
	// transport: to pong/k from ping
	// ping answers [pong answers [refused: ping is already waiting in this chain]]
}

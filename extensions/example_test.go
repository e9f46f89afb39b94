package extensions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// jsonConfig is an [extensions.Config] read from JSON. The runtime passes the
// extension's `config:` block from the agent's YAML instead.
type jsonConfig string

func (c jsonConfig) Decode(v any) error {
	d := json.NewDecoder(bytes.NewReader([]byte(c)))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// A minimal native extension: a turn middleware that signs the agent's
// answers and counts the turns of each instance in the extension's state.
//
// An app registers the factory in a [extensions.Registry]; the runtime then
// does what the second half of this example does by hand for every agent
// that lists the extension: call the factory with its settings, build an
// [extensions.API] with [extensions.NewAPI], call Register, and run turns
// through the pipeline.
func Example() {
	reg := extensions.NewRegistry()
	err := reg.Register("signature", func(cfg extensions.Config) (extensions.Extension, error) {
		var s struct {
			Sign string `json:"sign"`
		}
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				res, err := t.Next(ctx)
				if err != nil {
					return nil, err
				}
				res.Response.Content += " " + s.Sign
				var n struct {
					Turns int `json:"turns"`
				}
				if _, err := api.State.Load(ctx, t.InstanceKey(), &n); err != nil {
					return nil, err
				}
				n.Turns++
				return res, api.State.Save(ctx, t.InstanceKey(), n)
			})
			return nil
		}), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered:", reg.Names())

	// The runtime's part.
	st := store.NewMemory()
	defer st.Close()
	factory, _ := reg.Lookup("signature")
	ext, err := factory(jsonConfig(`{"sign": "-- your assistant"}`))
	if err != nil {
		log.Fatal(err)
	}
	var b pipeline.Builder
	api := extensions.NewAPI("signature", extensions.Host{Agent: "assistant", Builder: &b, Store: st})
	if err := ext.Register(api); err != nil {
		log.Fatal(err)
	}
	p, err := b.Build(pipeline.Handlers{
		// The innermost handlers stand in for the model.
		Turn: func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{TurnID: t.TurnID(), FinishReason: pipeline.FinishText, Steps: 1,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: "Hello, " + t.Input().Text + "."}}, nil
		},
		Step: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	for i, name := range []string{"Ada", "Grace"} {
		res, err := p.RunTurn(ctx, pipeline.NewTurnContext(pipeline.TurnInfo{
			Agent: "assistant", InstanceKey: "default", TurnID: fmt.Sprintf("turn-%d", i+1),
			Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: name},
		}))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.TurnID, res.Response.Content)
	}
	state, _ := st.GetState(ctx, "assistant", "default", "signature")
	fmt.Println("state:", string(state))
	// Output:
	// registered: [signature]
	// turn-1 Hello, Ada. -- your assistant
	// turn-2 Hello, Grace. -- your assistant
	// state: {"turns":2}
}

package ganglion_test

import (
	"encoding/json"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

// An extension is a main package that registers itself from init. Built
// with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, it refuses
// inputs that start with "!" and offers the tool shout.
func Example() {
	ganglion.Register(ganglion.Manifest{Name: "guard", Version: "1.0.0"}, func(api *ganglion.API) error {
		api.Pipeline.Turn(func(t *ganglion.Turn) error {
			if strings.HasPrefix(t.InputText(), "!") {
				api.Logger.Warn("refused", "turn", t.TurnID())
				return t.SetResult(ganglion.TurnResult{
					FinishReason: ganglion.FinishText,
					Response:     ganglion.Message{Content: "refused"},
				})
			}
			return t.Next()
		})
		return api.Tools.Register(ganglion.ToolSpec{
			Name:        "shout",
			Description: "Upper-cases a text.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		}, func(c *ganglion.ToolCall) (ganglion.ToolResult, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(c.Args(), &args); err != nil {
				return ganglion.ToolResult{}, err
			}
			return ganglion.ToolResult{Content: strings.ToUpper(args.Text)}, nil
		})
	})
}

// A middleware that keeps a count per instance in the extension's state;
// the manifest declares it.
func ExampleTurn_State() {
	ganglion.Register(ganglion.Manifest{Name: "counter", State: true}, func(api *ganglion.API) error {
		api.Pipeline.Turn(func(t *ganglion.Turn) error {
			var n int
			if _, err := t.State(&n); err != nil {
				return err
			}
			if err := t.SetState(n + 1); err != nil {
				return err
			}
			return t.Next()
		})
		return nil
	})
}

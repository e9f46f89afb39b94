// Command gonoop is the Go twin of noop.wat, for benchmarks: turn, step
// and toolCall middleware that call next. With config {read: true}, each
// first reads one context field: the input text, or the tool name.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gonoop.wasm .
package main

import ganglion "github.com/ganglion-dev/ganglion/sdk"

func init() {
	ganglion.Register(ganglion.Manifest{Name: "gonoop", Version: "1.0.0"}, func(api *ganglion.API) error {
		var cfg struct {
			Read bool `json:"read"`
		}
		if _, err := api.Config(&cfg); err != nil {
			return err
		}
		api.Pipeline.Turn(func(t *ganglion.Turn) error {
			if cfg.Read {
				_ = t.InputText()
			}
			return t.Next()
		})
		api.Pipeline.Step(func(s *ganglion.Step) error {
			if cfg.Read {
				_ = s.InputText()
			}
			return s.Next()
		})
		api.Pipeline.ToolCall(func(c *ganglion.ToolCall) error {
			if cfg.Read {
				_ = c.Name()
			}
			return c.Next()
		})
		return nil
	})
}

func main() {}

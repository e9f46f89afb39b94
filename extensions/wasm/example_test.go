package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// A program tells a guest that failed on purpose (a *GuestError, with the
// guest's message) from one that crashed or ran out of time (a
// *TrapError, after which the host discards the instance). The guests of
// testdata misbehave on the inputs "trap" and "passon".
func ExampleTrapError() {
	dir, err := os.MkdirTemp("", "wasm-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	wd, _ := os.Getwd()
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`
agents:
  a:
    turns:
      - match: "^passon"
        steps: [{error: "model unavailable"}]
    fallback: {steps: [{text: "ok"}]}
`), 0o644)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`
model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    extensions:
      - {wasm: `+filepath.Join(wd, "testdata", "hostile_trap.wasm")+`, limits: {timeout: 1s}}
      - {wasm: `+filepath.Join(wd, "testdata", "hostile_phase.wasm")+`}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	for _, input := range []string{"trap", "passon", "hello"} {
		res, err := rt.Send(ctx, "a", "k", runtime.UserMessage(input))
		var trap *wasm.TrapError
		var guest *wasm.GuestError
		switch {
		case errors.As(err, &trap):
			fmt.Printf("%s: the guest crashed in %s (%s)\n", input, trap.Export, trap.Reason)
		case errors.As(err, &guest):
			fmt.Printf("%s: the guest refused: %s\n", input, guest.Msg)
		case err != nil:
			fmt.Printf("%s: %v\n", input, err)
		default:
			fmt.Printf("%s: %s\n", input, res.Response.Content)
		}
	}
	// Output:
	// trap: the guest crashed in ganglion_turn (trap)
	// passon: the guest refused: extension "hostile_phase": turn middleware: the guest gave no reason (it should call set_error)
	// hello: ok
}

package cassette_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// Record a session on the scripted model, then replay it without any
// model: the answer and the IDs are the recorded ones.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "cassette-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents: {assistant: {fallback: {steps: [{text: "Hello, {{ .Input }}!"}]}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents: [{name: assistant}]\n"), 0o644)
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	if err != nil {
		fmt.Println(err)
		return
	}
	send := func(tape cassette.Tape) string {
		rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithTape(tape))
		if err != nil {
			return err.Error()
		}
		defer rt.Close()
		res, err := rt.Send(ctx, "assistant", "default", runtime.UserMessage("world"))
		if err != nil {
			return err.Error()
		}
		return res.Response.Content
	}

	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	fmt.Println("live:  ", send(rec))
	rec.Close()

	os.Remove(filepath.Join(dir, "script.yaml")) // the model is gone
	c, err := cassette.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	player := cassette.NewPlayer(c)
	fmt.Println("replay:", send(player))
	fmt.Println("divergences:", len(player.Divergences()))
	// Output:
	// live:   Hello, world!
	// replay: Hello, world!
	// divergences: 0
}

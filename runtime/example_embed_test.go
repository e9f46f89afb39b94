package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// exampleRuntime returns a runtime in memory of the config cfg, whose
// agents answer as the scripted model's script says, with opts after.
func exampleRuntime(cfg, script string, opts ...runtime.Option) *runtime.Runtime {
	c, err := config.Parse("ganglion.yaml", []byte(cfg))
	if err != nil {
		log.Fatal(err)
	}
	s, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		log.Fatal(err)
	}
	rt, err := runtime.New(context.Background(),
		append([]runtime.Option{runtime.WithConfig(c), runtime.WithModel(s), runtime.WithMemoryStore()}, opts...)...)
	if err != nil {
		log.Fatal(err)
	}
	return rt
}

// A program offers a model provider of its own to configs, as provider:
// house here. Its [runtime.ProviderFactory] gets each agent's model settings
// and returns the [model.Provider] that serves the agent; a scripted model
// stands in for the program's client.
func ExampleWithProvider() {
	house := func(m config.Model) (model.Provider, error) {
		fmt.Printf("opening model %q of the house provider\n", m.Name)
		return scripted.Parse("house", []byte(`
agents:
  clerk:
    fallback: {steps: [{text: "The house model answers: {{ .Input }}"}]}
`))
	}
	cfg, err := config.Parse("ganglion.yaml", []byte(`
model: {provider: house, name: house-small}
agents:
  - name: clerk
`))
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(),
		runtime.WithProvider("house", house))
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(ctx, "clerk", "default", runtime.UserMessage("opening hours?"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Response.Content)
	// Output:
	// opening model "house-small" of the house provider
	// The house model answers: opening hours?
}

// WithClock stamps the stored messages (and events, tasks, pending items)
// with the program's clock: a test of an embedding program asserts on
// times it chose.
func ExampleWithClock() {
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	rt := exampleRuntime(`
agents:
  - name: greeter
`, `
agents:
  greeter:
    fallback: {steps: [{text: "Hello, {{ .Input }}!"}]}
`, runtime.WithClock(func() time.Time { return at }))
	defer rt.Close()

	ctx := context.Background()
	if _, err := rt.Send(ctx, "greeter", "ann", runtime.UserMessage("Ann")); err != nil {
		log.Fatal(err)
	}
	history, err := rt.History(ctx, "greeter", "ann")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range history {
		fmt.Println(m.CreatedAt.Format(time.RFC3339), m.Role, m.Content)
	}
	// Output:
	// 2026-03-01T09:30:00Z user Ann
	// 2026-03-01T09:30:00Z assistant Hello, Ann!
}

// WithInstanceCache bounds the instances a runtime keeps in memory, for a
// program with many users; an instance dropped from the cache is read back
// from the store when it is next used, its history whole.
func ExampleWithInstanceCache() {
	rt := exampleRuntime(`
agents:
  - name: greeter
`, `
agents:
  greeter:
    fallback: {steps: [{text: "Hello, {{ .Input }}!"}]}
`, runtime.WithInstanceCache(1))
	defer rt.Close()

	ctx := context.Background()
	for _, name := range []string{"ann", "bob", "ann"} { // bob's instance takes ann's place; ann's comes back
		if _, err := rt.Send(ctx, "greeter", name, runtime.UserMessage(name)); err != nil {
			log.Fatal(err)
		}
	}
	history, err := rt.History(ctx, "greeter", "ann")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range history {
		fmt.Println(m.Role, m.Content)
	}
	instances, err := rt.Instances(ctx, "greeter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(instances)
	// Output:
	// user ann
	// assistant Hello, ann!
	// user ann
	// assistant Hello, ann!
	// [ann bob]
}

// A program that ships several native extensions collects their factories
// in an [extensions.Registry] and hands it over with WithExtensions; each
// agent lists, in its config, those it uses.
func ExampleWithExtensions() {
	// suffix returns a factory of an extension whose turn middleware adds
	// text to the answer.
	suffix := func(text string) extensions.Factory {
		return func(extensions.Config) (extensions.Extension, error) {
			return extensions.Func(func(api *extensions.API) error {
				api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					r, err := t.Next(ctx)
					if err == nil {
						r.Response.Content += text
					}
					return r, err
				})
				return nil
			}), nil
		}
	}
	reg := extensions.NewRegistry()
	for name, f := range map[string]extensions.Factory{"polite": suffix(" Kind regards."), "signed": suffix(" -- the desk")} {
		if err := reg.Register(name, f); err != nil {
			log.Fatal(err)
		}
	}
	rt := exampleRuntime(`
agents:
  - name: desk
    extensions: [{name: signed}, {name: polite}]
  - name: terse
    extensions: [{name: signed}]
`, `
agents:
  desk: {fallback: {steps: [{text: "Done."}]}}
  terse: {fallback: {steps: [{text: "Done."}]}}
`, runtime.WithExtensions(reg))
	defer rt.Close()

	ctx := context.Background()
	for _, agent := range []string{"desk", "terse"} {
		res, err := rt.Send(ctx, agent, "default", runtime.UserMessage("file the report"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s\n", agent, res.Response.Content)
	}
	// Output:
	// desk: Done. Kind regards. -- the desk
	// terse: Done. -- the desk
}

// The secrets a human provides are sealed with a key that outlives the
// process: WithSecretKey passes it (32 bytes), WithSecretKeyFile names a
// file that holds it, created on first use, readable by its owner only. A
// key of the wrong size fails New. ([runtime.SecretKeyEnv], when set, wins
// over the file; this example assumes it is not.)
func ExampleWithSecretKeyFile() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	const cfg = "agents:\n  - name: a\n"
	const script = "agents:\n  a: {fallback: {steps: [{text: ok}]}}\n"

	keyFile := filepath.Join(dir, "secrets.key")
	rt := exampleRuntime(cfg, script, runtime.WithSecretKeyFile(keyFile))
	rt.Close()
	info, err := os.Stat(keyFile)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("key file:", info.Mode().Perm())

	c, _ := config.Parse("ganglion.yaml", []byte(cfg))
	s, _ := scripted.Parse("script.yaml", []byte(script))
	_, err = runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithModel(s), runtime.WithMemoryStore(),
		runtime.WithSecretKey([]byte("too short")))
	fmt.Println(err)

	rt = exampleRuntime(cfg, script, runtime.WithSecretKey(make([]byte, 32))) // a real key is random
	rt.Close()
	fmt.Println("32 bytes: accepted")
	// Output:
	// key file: -rw-------
	// secret key: secret: key is 9 bytes long, want 32
	// 32 bytes: accepted
}

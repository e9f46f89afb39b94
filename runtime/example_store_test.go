package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// Where a runtime keeps its instances. By default a badger store in the
// data directory, which WithStoreOptions sizes and WithSyncWrites makes
// sync every commit to disk; or any store.Store the program opens itself,
// given with WithStore, which the runtime then does not close.
func ExampleWithStore() {
	cfg, err := config.Parse("ganglion.yaml", []byte("agents:\n  - name: clerk\n"))
	if err != nil {
		log.Fatal(err)
	}
	script, err := scripted.Parse("script.yaml", []byte("agents:\n  clerk:\n    fallback: {steps: [{text: \"Noted: {{ .Input }}\"}]}\n"))
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The badger store of a data directory, small and synced.
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithModel(script),
		runtime.WithDataDir(filepath.Join(dir, "data")),
		runtime.WithStoreOptions(badger.WithMemTableSize(badger.MinMemTableSize)),
		runtime.WithSyncWrites(true))
	if err != nil {
		log.Fatal(err)
	}
	res, err := rt.Send(ctx, "clerk", "k", runtime.UserMessage("the order"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Response.Content)
	rt.Close()

	// A store of the program's own, shared by two runtimes one after the
	// other: the second finds what the first stored.
	st := store.NewMemory()
	defer st.Close()
	for _, text := range []string{"first", "second"} {
		rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithModel(script), runtime.WithStore(st))
		if err != nil {
			log.Fatal(err)
		}
		if _, err := rt.Send(ctx, "clerk", "k", runtime.UserMessage(text)); err != nil {
			log.Fatal(err)
		}
		rt.Close()
	}
	_, records, _, err := st.LoadInstance(ctx, "clerk", "k")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(records), "messages in the program's store")
	// Output:
	// Noted: the order
	// 4 messages in the program's store
}

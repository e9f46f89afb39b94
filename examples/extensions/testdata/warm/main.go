// Command warm compiles WebAssembly modules into a compilation cache
// directory, as the runtime's WASM engine does when it has a data
// directory. The tests of examples/extensions run it, built without -race,
// so that their runtimes (built with -race, where wazero's compiler is ten
// times slower) load every module from the cache.
//
//	warm CACHE_DIR MODULE.wasm...
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: warm CACHE_DIR MODULE.wasm...")
		os.Exit(2)
	}
	e, err := wasm.NewEngine(os.Args[1], nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	paths := os.Args[2:]
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() {
			code, err := os.ReadFile(p)
			if err != nil {
				errs[i] = err
				return
			}
			if err := e.Compile(context.Background(), code); err != nil {
				errs[i] = fmt.Errorf("%s: %w", p, err)
			}
		})
	}
	wg.Wait()
	failed := false
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}

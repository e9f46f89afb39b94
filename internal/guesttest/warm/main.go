package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: warm CACHE_DIR MODULE.wasm...")
		os.Exit(2)
	}
	if err := warm(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func warm(cache string, paths []string) error {
	e, err := wasm.NewEngine(cache, nil)
	if err != nil {
		return err
	}
	for _, p := range paths {
		code, err := os.ReadFile(p)
		if err != nil {
			e.Close()
			return err
		}
		if err := e.Compile(context.Background(), code); err != nil {
			e.Close()
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return e.Close()
}

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/coverage"

	"github.com/ganglion-dev/ganglion/runtime"
	// Linked as the CLI links them, so that the path shows a plain turn
	// does not enter them.
	_ "github.com/ganglion-dev/ganglion/runtime/cluster"
	_ "github.com/ganglion-dev/ganglion/runtime/mcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "turnpath:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: turnpath EXAMPLE-CONFIG OUT-DIR")
	}
	data, err := os.MkdirTemp("", "turnpath")
	if err != nil {
		return err
	}
	defer os.RemoveAll(data)
	rt, err := runtime.New(context.Background(), runtime.WithConfigFile(os.Args[1]), runtime.WithDataDir(data))
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	res, err := rt.Send(context.Background(), "assistant", "default", runtime.UserMessage("What is in notes.txt?"))
	if err != nil {
		return err
	}
	if res.Response.Content == "" {
		return fmt.Errorf("the agent answered nothing")
	}
	if err := coverage.WriteMetaDir(os.Args[2]); err != nil {
		return err
	}
	return coverage.WriteCountersDir(os.Args[2])
}

package runtime_test

// The runtime's tests link what the CLI links, as a program that uses
// every part of the config would.
import (
	_ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
	_ "github.com/ganglion-dev/ganglion/runtime/mcp"
)

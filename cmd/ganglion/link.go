package main

// A program links only the optional parts of the runtime it imports (each
// registers itself when imported): model providers, telemetry export,
// MCP servers as tool sources, the cluster, the JSON Schema validator for
// tool schemas that are not flat. The CLI runs any config, so it links them
// all.
import (
	_ "github.com/ganglion-dev/ganglion/runtime/cluster"
	_ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
	_ "github.com/ganglion-dev/ganglion/runtime/mcp"
	_ "github.com/ganglion-dev/ganglion/runtime/model/anthropic"
	_ "github.com/ganglion-dev/ganglion/runtime/model/openai"
	_ "github.com/ganglion-dev/ganglion/runtime/otlp"
)

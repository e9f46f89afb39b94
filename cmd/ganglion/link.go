package main

// A program links only the model providers and the telemetry export it
// imports (each registers itself when imported). The CLI runs any config,
// so it links them all.
import (
	_ "github.com/ganglion-dev/ganglion/runtime/model/anthropic"
	_ "github.com/ganglion-dev/ganglion/runtime/model/openai"
	_ "github.com/ganglion-dev/ganglion/runtime/otlp"
)

package main

// The CLI runs any config, so it links every optional part of the
// runtime; a program that embeds the runtime imports only those its
// configs use.
import _ "github.com/ganglion-dev/ganglion/runtime/mcp"

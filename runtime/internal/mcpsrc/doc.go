// Package mcpsrc makes an MCP server a source of tools: a [Source]
// connects to the server on first use, lists its tools (again after the
// server says they changed), calls them with a timeout, maps their
// results to tool results, and restarts the server with a backoff after
// it dies, so that a dead server is a tool error the model reads, never a
// hung turn. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
package mcpsrc

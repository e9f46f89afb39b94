// Package linktest tests a program that links none of the packages that
// register themselves when imported (the model providers openai and
// anthropic, the OTLP export of package runtime/otlp, MCP, the cluster, the
// JSON Schema validator of package runtime/jsonschema): its test binary
// imports package runtime and no such package, as examples/embed does. It
// has no code of its own.
package linktest

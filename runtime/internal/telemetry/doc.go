// Package telemetry is the runtime's OpenTelemetry instrumentation: the
// spans of turns, steps, model calls, tool calls and extension layers,
// after the OpenTelemetry GenAI semantic conventions, and the runtime's
// metrics. Open makes it of the embedder's providers or of the OTLP
// export the config or the environment opens, subscribes it to the
// events it records, and Close flushes and ends all that. The runtime
// holds a *T only when tracing or metrics are on; a nil *T is never
// called but for Close.
//
// Message and argument content goes into spans only when the config asks
// for it; what the runtime hands over is masked of provided secrets
// already (the history the model sees, tool results), and no secret value
// is ever an attribute.
package telemetry

// Package otlp decides whether a runtime exports its spans and metrics
// over OTLP, as its config and the standard OTEL_* environment variables
// say: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER
// ("none" turns a signal off), and without a telemetry block the OTLP
// endpoint variables (OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT) turn
// a signal on.
//
// The export itself is not here: it pulls in the OTLP exporters (gRPC,
// protobuf) that a program without export should not link. Package
// [github.com/ganglion-dev/ganglion/runtime/otlp] registers it when
// imported ([Register]); [Open] fails with [ErrNotLinked] when export is
// asked for and nothing is registered.
package otlp

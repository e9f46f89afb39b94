// Package otlp exports a runtime's spans and metrics over OTLP. Import it
// for its effect, in the program's main package:
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/otlp"
//
// Without it a program links no OTLP exporter (nor gRPC and protobuf, which
// they pull in), and a runtime whose config has a telemetry block fails to
// start with an error naming this import; an OTEL_EXPORTER_OTLP_*ENDPOINT
// variable alone only gets a warning in the runtime's log. Spans and
// metrics given their own providers (runtime.WithTracerProvider,
// runtime.WithMeterProvider) need no export of this package.
//
// What is exported follows the config's telemetry block and the standard
// OTEL_* environment variables: the endpoint, headers and protocol
// (OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT, _HEADERS, _PROTOCOL:
// "http/protobuf", the default, or "grpc"), the service name
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), the sampler
// (OTEL_TRACES_SAMPLER) and OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER ("none" turns a signal off).
package otlp

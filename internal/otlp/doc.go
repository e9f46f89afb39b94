// Package otlp opens the OpenTelemetry trace and meter providers that
// export a runtime's spans and metrics over OTLP, as its config and the
// standard OTEL_* environment variables say: the endpoint, headers and
// protocol (OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT, _HEADERS,
// _PROTOCOL: "http/protobuf", the default, or "grpc"), the service name
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), the sampler
// (OTEL_TRACES_SAMPLER) and OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER ("none" turns a signal off).
package otlp

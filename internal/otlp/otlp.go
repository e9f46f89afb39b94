package otlp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Settings are what the config says; nil booleans are true.
type Settings struct {
	// Configured is set when the config has a telemetry block: export
	// then needs no environment variable.
	Configured      bool
	Traces, Metrics *bool
	ServiceName     string
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
}

// Providers are the open providers; either may be nil (that signal off).
type Providers struct {
	Traces  *sdktrace.TracerProvider
	Metrics *sdkmetric.MeterProvider
}

// Shutdown exports what is buffered and closes the providers.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	if p.Traces != nil {
		errs = append(errs, p.Traces.Shutdown(ctx))
	}
	if p.Metrics != nil {
		errs = append(errs, p.Metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Open opens the providers s asks for, or returns nil when export is off:
// without a telemetry block, it is on for a signal whose OTLP endpoint an
// environment variable names.
func Open(ctx context.Context, s Settings) (*Providers, error) {
	env := s.Getenv
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	on := func(flag *bool, signal string) bool {
		if env("OTEL_"+signal+"_EXPORTER") == "none" || flag != nil && !*flag {
			return false
		}
		return s.Configured || env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	traces, metrics := on(s.Traces, "TRACES"), on(s.Metrics, "METRICS")
	if !traces && !metrics {
		return nil, nil
	}
	res, err := serviceResource(ctx, s)
	if err != nil {
		return nil, err
	}
	p := &Providers{}
	if traces {
		exp, err := traceExporter(ctx, protocol(env, "TRACES"))
		if err != nil {
			return nil, err
		}
		p.Traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	if metrics {
		exp, err := metricExporter(ctx, protocol(env, "METRICS"))
		if err != nil {
			p.Shutdown(ctx)
			return nil, err
		}
		p.Metrics = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
	}
	return p, nil
}

// serviceResource describes the service: its name from the config, else
// the environment (OTEL_SERVICE_NAME), else "ganglion".
func serviceResource(ctx context.Context, s Settings) (*resource.Resource, error) {
	name := s.ServiceName
	if name == "" {
		name = s.Getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "ganglion"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithAttributes(semconv.ServiceName(name)))
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil // a partial resource (a bad OTEL_RESOURCE_ATTRIBUTES entry) still names the service
}

// protocol returns the OTLP protocol for signal: its own variable, else
// the general one, else http/protobuf.
func protocol(env func(string) string, signal string) string {
	if p := env("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"); p != "" {
		return p
	}
	if p := env("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" {
		return p
	}
	return "http/protobuf"
}

// errProtocol names the protocols the exporters speak.
func errProtocol(p string) error {
	return fmt.Errorf("telemetry: OTLP protocol %q is not supported: use http/protobuf or grpc (OTEL_EXPORTER_OTLP_PROTOCOL)", p)
}

func traceExporter(ctx context.Context, p string) (sdktrace.SpanExporter, error) {
	switch p {
	case "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, errProtocol(p)
}

func metricExporter(ctx context.Context, p string) (sdkmetric.Exporter, error) {
	switch p {
	case "http/protobuf":
		return otlpmetrichttp.New(ctx)
	case "grpc":
		return otlpmetricgrpc.New(ctx)
	}
	return nil, errProtocol(p)
}

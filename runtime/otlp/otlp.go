package otlp

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/ganglion-dev/ganglion/internal/otlp"
)

// Importing the package registers the export.
func init() { otlp.Register(open) }

// open opens the providers of the signals asked for.
func open(ctx context.Context, s otlp.Settings, traces, metrics bool) (*otlp.Providers, error) {
	res, err := serviceResource(ctx, s)
	if err != nil {
		return nil, err
	}
	var tp *sdktrace.TracerProvider
	var mp *sdkmetric.MeterProvider
	shutdown := func(ctx context.Context) error {
		var errs []error
		if tp != nil {
			errs = append(errs, tp.Shutdown(ctx))
		}
		if mp != nil {
			errs = append(errs, mp.Shutdown(ctx))
		}
		return errors.Join(errs...)
	}
	p := &otlp.Providers{Close: shutdown}
	if traces {
		exp, err := traceExporter(ctx, protocol(s.Getenv, "TRACES"))
		if err != nil {
			return nil, err
		}
		tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.Traces = tp
	}
	if metrics {
		exp, err := metricExporter(ctx, protocol(s.Getenv, "METRICS"))
		if err != nil {
			shutdown(ctx)
			return nil, err
		}
		mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		p.Metrics = mp
	}
	return p, nil
}

// serviceResource describes the service: its name from the config, else
// the environment (OTEL_SERVICE_NAME), else "ganglion".
func serviceResource(ctx context.Context, s otlp.Settings) (*resource.Resource, error) {
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

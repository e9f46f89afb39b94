package otlp

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ImportPath is the package that registers the OTLP export when a program
// imports it.
const ImportPath = "github.com/ganglion-dev/ganglion/runtime/otlp"

// ErrNotLinked is the error of [Open] when the settings ask for export and
// the program did not import [ImportPath].
var ErrNotLinked = fmt.Errorf("OpenTelemetry export is not linked into this program; add: import _ %q", ImportPath)

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

// Signals reports which signals s asks to export: without a telemetry
// block, a signal is on when an environment variable names its OTLP
// endpoint.
func (s Settings) Signals() (traces, metrics bool) {
	env := s.Getenv
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return false, false
	}
	on := func(flag *bool, signal string) bool {
		if env("OTEL_"+signal+"_EXPORTER") == "none" || flag != nil && !*flag {
			return false
		}
		return s.Configured || env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	return on(s.Traces, "TRACES"), on(s.Metrics, "METRICS")
}

// Providers are the open providers; either may be nil (that signal off).
type Providers struct {
	Traces  trace.TracerProvider
	Metrics metric.MeterProvider
	// Close exports what is buffered and closes the providers.
	Close func(context.Context) error
}

// Shutdown exports what is buffered and closes the providers.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p.Close == nil {
		return nil
	}
	return p.Close(ctx)
}

// Opener opens the providers of the signals asked for (at least one).
type Opener func(ctx context.Context, s Settings, traces, metrics bool) (*Providers, error)

var registered struct {
	sync.Mutex
	open Opener
}

// Register makes o the OTLP export. It panics when o is nil or when called
// twice.
func Register(o Opener) {
	registered.Lock()
	defer registered.Unlock()
	if o == nil {
		panic("otlp: Register of a nil opener")
	}
	if registered.open != nil {
		panic("otlp: Register called twice")
	}
	registered.open = o
}

// Linked reports whether an export is registered.
func Linked() bool {
	registered.Lock()
	defer registered.Unlock()
	return registered.open != nil
}

// Open opens the providers s asks for, or returns nil when export is off.
// It fails with [ErrNotLinked] when export is on and none is registered.
func Open(ctx context.Context, s Settings) (*Providers, error) {
	traces, metrics := s.Signals()
	if !traces && !metrics {
		return nil, nil
	}
	registered.Lock()
	open := registered.open
	registered.Unlock()
	if open == nil {
		return nil, fmt.Errorf("telemetry: %w", ErrNotLinked)
	}
	return open(ctx, s, traces, metrics)
}

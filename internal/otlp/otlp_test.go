package otlp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/otlp"
)

// env is an environment of the variables given.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestSignals: what the config and the environment ask to export.
func TestSignals(t *testing.T) {
	off := false
	for _, tt := range []struct {
		name            string
		s               otlp.Settings
		vars            map[string]string
		traces, metrics bool
	}{
		{name: "nothing", traces: false, metrics: false},
		{name: "telemetry block", s: otlp.Settings{Configured: true}, traces: true, metrics: true},
		{name: "block without metrics", s: otlp.Settings{Configured: true, Metrics: &off}, traces: true},
		{name: "endpoint alone", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, traces: true, metrics: true},
		{name: "traces endpoint alone", vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318"}, traces: true},
		{name: "sdk disabled", s: otlp.Settings{Configured: true}, vars: map[string]string{"OTEL_SDK_DISABLED": "TRUE"}},
		{name: "metrics exporter none", s: otlp.Settings{Configured: true}, vars: map[string]string{"OTEL_METRICS_EXPORTER": "none"}, traces: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Getenv = env(tt.vars)
			if traces, metrics := tt.s.Signals(); traces != tt.traces || metrics != tt.metrics {
				t.Errorf("Signals() = %v, %v; want %v, %v", traces, metrics, tt.traces, tt.metrics)
			}
		})
	}
}

// TestOpen: without a registered export, Open fails when export is asked
// for, naming the import, and opens nothing when it is not; registered,
// the export gets the signals; a second registration panics.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	asked := otlp.Settings{Configured: true, Getenv: env(nil)}
	if p, err := otlp.Open(ctx, otlp.Settings{Getenv: env(nil)}); p != nil || err != nil {
		t.Errorf("Open of nothing = %v, %v; want nil, nil", p, err)
	}
	_, err := otlp.Open(ctx, asked)
	const want = `telemetry: OpenTelemetry export is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/otlp"`
	if !errors.Is(err, otlp.ErrNotLinked) || err.Error() != want || otlp.Linked() {
		t.Fatalf("Open without an export: %v (linked %v); want %s", err, otlp.Linked(), want)
	}
	var got [2]bool
	otlp.Register(func(_ context.Context, _ otlp.Settings, traces, metrics bool) (*otlp.Providers, error) {
		got = [2]bool{traces, metrics}
		return &otlp.Providers{}, nil
	})
	if p, err := otlp.Open(ctx, asked); err != nil || p == nil || got != [2]bool{true, true} || !otlp.Linked() {
		t.Errorf("Open = %v, %v with signals %v; want the export's providers for both", p, err, got)
	}
	defer func() {
		if r := recover(); r != "otlp: Register called twice" {
			t.Errorf("second Register: panic %v, want otlp: Register called twice", r)
		}
	}()
	otlp.Register(func(context.Context, otlp.Settings, bool, bool) (*otlp.Providers, error) { return nil, nil })
}

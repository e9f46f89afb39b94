package runtime

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestTraceAndTapeSeamsNilWhenOff: the turn loop holds its tracer and its
// tool runner as the engine's interfaces, and checks them for nil before
// each use. Without tracing, metrics or a tape they are nil interfaces,
// not interfaces that hold a nil pointer (which the loop would call); with
// them, they are set.
func TestTraceAndTapeSeamsNilWhenOff(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		opts                []Option
		wantTracer, wantRun bool
	}{
		{"nothing", nil, false, false},
		{"spans", []Option{WithTracerProvider(sdktrace.NewTracerProvider())}, true, false},
		{"metrics", []Option{WithMeterProvider(sdkmetric.NewMeterProvider())}, true, false},
		{"tape", []Option{WithTape(cassette.NewRecorder(io.Discard))}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(context.Background(), append([]Option{WithConfig(cfg), WithMemoryStore(), WithModel(summaryModel{}), WithoutExpiryTimer()}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if got := rt.env.Tracer != nil; got != tc.wantTracer {
				t.Errorf("tracer set: %v, want %v (it holds %#v)", got, tc.wantTracer, rt.env.Tracer)
			}
			if got := rt.env.ToolRunner != nil; got != tc.wantRun {
				t.Errorf("tool runner set: %v, want %v (it holds %#v)", got, tc.wantRun, rt.env.ToolRunner)
			}
		})
	}
}

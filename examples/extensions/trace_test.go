package extensions_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/runtime"
)

// TestWASMLayerSpans: a WebAssembly extension's layers are spans like a
// native one's, named by hook and extension, nested in the turn.
func TestWASMLayerSpans(t *testing.T) {
	modules(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	rt, err := runtime.New(context.Background(), runtime.WithConfig(exampleConfig(t, "counter", nil)), runtime.WithMemoryStore(),
		runtime.WithWasmCache(cacheDir), runtime.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // span → its parent's name
	byID := map[string]string{}
	for _, s := range sr.Ended() {
		byID[s.SpanContext().SpanID().String()] = s.Name()
	}
	for _, s := range sr.Ended() {
		names[s.Name()] = byID[s.Parent().SpanID().String()]
	}
	for span, parent := range map[string]string{"turn counter": "invoke_agent a", "step 1": "turn counter", "step counter": "step 1", "chat scripted": "step counter"} {
		if names[span] != parent {
			t.Errorf("span %q is under %q, want %q (spans: %v)", span, names[span], parent, slices.Sorted(maps.Keys(names)))
		}
	}
}

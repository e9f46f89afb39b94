package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/internal/otlp"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// tracing is run --trace: the spans of the run, kept to print as a tree
// when it ends, and exported too when the config or environment say so.
type tracing struct {
	rec       *tracetest.SpanRecorder
	tp        *sdktrace.TracerProvider
	providers *otlp.Providers // nil when nothing is exported
}

// startTracing opens the tracer provider of --trace for DIR's config and
// returns the runtime options that use it.
func startTracing(ctx context.Context, dir string) (*tracing, []runtime.Option, error) {
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	if err != nil {
		return nil, nil, failed(err)
	}
	s := otlp.Settings{Configured: cfg.Telemetry != nil, Getenv: os.Getenv}
	if t := cfg.Telemetry; t != nil {
		s.Traces, s.Metrics, s.ServiceName = t.Traces, t.Metrics, t.ServiceName
	}
	p, err := otlp.Open(ctx, s)
	if err != nil {
		return nil, nil, failed(err)
	}
	tr := &tracing{rec: tracetest.NewSpanRecorder(), providers: p}
	var opts []runtime.Option
	var exported *sdktrace.TracerProvider // package runtime/otlp's, the export main links
	if p != nil {
		exported, _ = p.Traces.(*sdktrace.TracerProvider)
	}
	if exported != nil {
		tr.tp = exported
		tr.tp.RegisterSpanProcessor(tr.rec)
	} else {
		tr.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.rec))
	}
	opts = append(opts, runtime.WithTracerProvider(tr.tp))
	if p != nil && p.Metrics != nil {
		opts = append(opts, runtime.WithMeterProvider(p.Metrics))
	}
	return tr, opts, nil
}

// finish exports what is left and prints the run's spans to w.
func (tr *tracing) finish(w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if tr.providers != nil {
		if err := tr.providers.Shutdown(ctx); err != nil {
			fmt.Fprintln(w, "ganglion: exporting the trace:", err)
		}
	} else {
		tr.tp.Shutdown(ctx)
	}
	printSpans(w, tr.rec.Ended())
}

// printSpans prints spans as trees, a trace each, children under their
// parent in the order they started, with their durations and what went
// wrong.
func printSpans(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	slices.SortStableFunc(spans, byStart)
	known := map[string]bool{}
	for _, s := range spans {
		known[s.SpanContext().SpanID().String()] = true
	}
	children := map[string][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID().String(); s.Parent().IsValid() && known[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		line := strings.Repeat("  ", depth) + s.Name() + "  " + s.EndTime().Sub(s.StartTime()).Round(time.Microsecond).String()
		var notes []string
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens":
				if kv.Value.AsInt64() > 0 {
					notes = append(notes, strings.TrimPrefix(string(kv.Key), "gen_ai.usage.")+" "+kv.Value.String())
				}
			case "ganglion.finish_reason", "ganglion.answered_by":
				notes = append(notes, strings.TrimPrefix(string(kv.Key), "ganglion.")+" "+kv.Value.String())
			case "ganglion.layer.skipped":
				notes = append(notes, "skipped")
			}
		}
		for _, l := range s.Links() {
			notes = append(notes, "links to "+l.SpanContext.SpanID().String())
		}
		if s.Status().Code == codes.Error {
			notes = append(notes, "error: "+s.Status().Description)
		}
		if len(notes) > 0 {
			line += "  (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintln(w, line)
		for _, c := range children[s.SpanContext().SpanID().String()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		fmt.Fprintf(w, "trace %s\n", r.SpanContext().TraceID())
		walk(r, 1)
	}
}

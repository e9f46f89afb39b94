package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/otlp"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// Options are what [Open] makes a runtime's telemetry of.
type Options struct {
	// Tracer and Meter are the embedder's providers; when neither is
	// set, the config's telemetry block or the OTEL_* environment opens
	// an OTLP export.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Config is the config's telemetry block; nil: it has none.
	Config *config.Telemetry
	// Getenv reads the OTEL_* environment.
	Getenv func(string) string
	// Bus carries what extensions decide during a turn, which become
	// events of its span.
	Bus    *events.Bus
	Logger *slog.Logger
}

// Open returns a runtime's telemetry: on the options' providers, else on
// those the config or the environment open; nil when it would trace and
// measure nothing, so that a runtime without it pays one nil check per
// span. [T.Close] ends it.
func Open(ctx context.Context, o Options) (*T, error) {
	tp, mp := o.Tracer, o.Meter
	var exporter *otlp.Providers
	if tp == nil && mp == nil {
		p, err := otlp.Open(ctx, exportSettings(o))
		if errors.Is(err, otlp.ErrNotLinked) && o.Config == nil {
			// Only the environment asks for export: the program runs
			// without it (New's validation refuses a telemetry block).
			o.Logger.Warn("the OTEL_* environment asks for OTLP export; it is off", "err", err)
			return nil, nil
		}
		if err != nil || p == nil {
			return nil, err
		}
		exporter, tp, mp = p, p.Traces, p.Metrics
	}
	if tp == nil && mp == nil {
		if exporter != nil {
			return nil, exporter.Shutdown(ctx) // it exports nothing
		}
		return nil, nil
	}
	t, err := New(tp, mp, o.Config != nil && o.Config.Content)
	if err != nil {
		return nil, fmt.Errorf("runtime: telemetry: %w", err)
	}
	t.exporter, t.given, t.logger = exporter, o.Meter, o.Logger
	if tp != nil {
		for _, topic := range EventTopics {
			t.unsub = append(t.unsub, o.Bus.Subscribe(topic, func(ev events.Event) {
				if ev.Process != "" {
					return // another process's turn, in its own trace
				}
				t.Event(ev.Agent, ev.Instance, ev.TurnID, ev.Topic, ev.Source, ev.Data)
			}))
		}
	}
	return t, nil
}

// exportSettings are the OTLP export settings of the config and the
// environment.
func exportSettings(o Options) otlp.Settings {
	s := otlp.Settings{Configured: o.Config != nil, Getenv: o.Getenv}
	if c := o.Config; c != nil {
		s.Traces, s.Metrics, s.ServiceName = c.Traces, c.Metrics, c.ServiceName
	}
	return s
}

// Unlinked is the package to import when the config's telemetry block
// asks for an OTLP export that the program did not link, else "".
func Unlinked(o Options) string {
	if o.Config == nil || o.Tracer != nil || o.Meter != nil || otlp.Linked() {
		return ""
	}
	if traces, metrics := exportSettings(o).Signals(); !traces && !metrics {
		return ""
	}
	return otlp.ImportPath
}

// exportTimeout bounds the export of what is buffered when a runtime
// closes.
const exportTimeout = 5 * time.Second

// Close ends what Open set up. It makes the last collection of the
// metrics and exports what is buffered, within a few seconds, so that a
// short run's spans and metrics reach the collector before the process
// exits; then it stops the gauge that reads the ledger (it runs while the
// store is still open). An OTLP export Open opened is shut down; a meter
// provider it was given is flushed, when it can be, and stays open.
func (t *T) Close() {
	if t == nil {
		return
	}
	for _, f := range t.unsub {
		f()
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	var err error
	if t.exporter != nil {
		err = t.exporter.Shutdown(ctx)
	} else if f, ok := t.given.(interface{ ForceFlush(context.Context) error }); ok {
		err = f.ForceFlush(ctx)
	}
	if err != nil {
		t.logger.Warn("exporting the last telemetry failed", "err", err)
	}
	if err := t.StopPending(); err != nil {
		t.logger.Warn("stopping the pending items gauge failed", "err", err)
	}
}

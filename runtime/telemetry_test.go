package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// traced returns a tracer provider recording into the returned recorder.
func traced(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, sr
}

// spanTree renders the ended spans as an indented tree, children in the
// order they started, with the attributes named in show.
func spanTree(spans []sdktrace.ReadOnlySpan, show ...attribute.Key) string {
	children := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		p := s.Parent().SpanID().String()
		if !s.Parent().IsValid() || !ids[p] {
			roots = append(roots, s)
			continue
		}
		children[p] = append(children[p], s)
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	slices.SortStableFunc(roots, byStart)
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name())
		for _, kv := range s.Attributes() {
			if slices.Contains(show, kv.Key) {
				b.WriteString(" " + string(kv.Key) + "=" + kv.Value.String())
			}
		}
		if s.Status().Code.String() == "Error" {
			b.WriteString(" [error: " + s.Status().Description + "]")
		}
		b.WriteString("\n")
		kids := children[s.SpanContext().SpanID().String()]
		slices.SortStableFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// layered is a native extension whose turn and toolCall middleware
// do nothing but pass on; fail makes its toolCall layer fail instead.
func layered(fail bool) extensions.Factory {
	return func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) { return t.Next(ctx) })
			api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				if fail {
					return nil, errors.New("not today")
				}
				return c.Next(ctx)
			})
			return nil
		}), nil
	}
}

// TestTraceOfATurn: a turn with three extensions and a tool call is a tree
// of spans: the turn, its extension layers, its steps, the model calls
// and the tool call with the toolCall layers, named and attributed after
// the GenAI conventions; a skipped fail_open layer is marked.
func TestTraceOfATurn(t *testing.T) {
	tp, sr := traced(t)
	h := newHarness(t, `
workspace: ws
agents:
  - name: a
    tools: [read_file]
    extensions:
      - name: audit
      - name: first
      - name: flaky
        on_error: fail_open
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: c1, args: {path: notes.txt}}]
          usage: {input_tokens: 12, output_tokens: 3}
        - text: "done"
          usage: {input_tokens: 20, output_tokens: 1}
`, runtime.WithTracerProvider(tp), runtime.WithExtension("first", layered(false)), runtime.WithExtension("flaky", layered(true)))
	writeFile(t, h.dir+"/ws/notes.txt", "hello\n")
	h.mustSend("a", "k", "read the notes")
	got := spanTree(sr.Ended(), "gen_ai.operation.name", "gen_ai.tool.call.id", "gen_ai.usage.input_tokens", "ganglion.layer.skipped", "ganglion.finish_reason")
	want := `invoke_agent a gen_ai.operation.name=invoke_agent ganglion.finish_reason=text_response gen_ai.usage.input_tokens=32
  turn audit
    turn first
      turn flaky
        step 1
          chat scripted gen_ai.operation.name=chat gen_ai.usage.input_tokens=12
          execute_tool read_file gen_ai.operation.name=execute_tool gen_ai.tool.call.id=c1
            toolCall audit
              toolCall first
                toolCall flaky ganglion.layer.skipped=true [error: extension "flaky": toolCall middleware: not today]
        step 2
          chat scripted gen_ai.operation.name=chat gen_ai.usage.input_tokens=20
`
	if got != want {
		t.Errorf("span tree:\n%s\nwant:\n%s", got, want)
	}
}

// turnSpans returns the ended turn spans of agent, in the order they
// started.
func turnSpans(spans []sdktrace.ReadOnlySpan, agent string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "invoke_agent "+agent {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// endedSpans returns the spans sr has seen end once done holds of them,
// or after 10 s, for the test to say what is missing.
func endedSpans(sr *tracetest.SpanRecorder, done func([]sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
	spans := sr.Ended()
	for deadline := time.Now().Add(10 * time.Second); !done(spans) && time.Now().Before(deadline); spans = sr.Ended() {
		time.Sleep(5 * time.Millisecond)
	}
	return spans
}

func spanByID(spans []sdktrace.ReadOnlySpan, id string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.SpanContext().SpanID().String() == id {
			return s
		}
	}
	return nil
}

// TestTraceOfAFanOut: the children of a fan-out and the merged report
// belong to the delegating turn's trace, each child's turn under the
// call_agent call that delegated it.
func TestTraceOfAFanOut(t *testing.T) {
	tp, sr := traced(t)
	h := newHarness(t, fanOutConfig, fanOutScript, runtime.WithTracerProvider(tp))
	if _, err := h.rt.Ask(context.Background(), "lead", "k", "build a parser"); err != nil {
		t.Fatal(err)
	}
	waitNoTasks(t, h.rt)
	// A child's turn span ends just after its task is settled.
	spans := endedSpans(sr, func(spans []sdktrace.ReadOnlySpan) bool {
		return len(turnSpans(spans, "lead")) == 2 && len(turnSpans(spans, "coder")) == 1 && len(turnSpans(spans, "tester")) == 1
	})
	lead := turnSpans(spans, "lead")
	if len(lead) != 2 {
		t.Fatalf("%d turns of lead, want the delegating one and the report:\n%s", len(lead), spanTree(spans))
	}
	trace := lead[0].SpanContext().TraceID()
	if lead[1].SpanContext().TraceID() != trace {
		t.Errorf("the merged report's turn is in another trace")
	}
	for _, agent := range []string{"coder", "tester"} {
		turns := turnSpans(spans, agent)
		if len(turns) != 1 {
			t.Fatalf("%d turns of %s:\n%s", len(turns), agent, spanTree(spans))
		}
		c := turns[0]
		if c.SpanContext().TraceID() != trace {
			t.Errorf("%s's turn is in trace %s, not the delegating turn's %s", agent, c.SpanContext().TraceID(), trace)
		}
		parent := spanByID(spans, c.Parent().SpanID().String())
		if parent == nil || parent.Name() != "execute_tool call_agent" {
			t.Errorf("%s's turn is under %v, want the call_agent call", agent, parent)
		}
	}
}

// TestTraceSurvivesARestart: a runtime stops during a delegation; the
// next one, with another tracer, finishes it in the delegating turn's
// trace, from the trace context stored with the task.
func TestTraceSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	tp1, sr1 := traced(t)
	sc, err := scripted.Parse("script.yaml", []byte(restartDelegScript))
	if err != nil {
		t.Fatal(err)
	}
	gm := newGateModel(&recorder{p: sc})
	g := gm.hold("lead", "Merged report")
	p := newPersistent(t, restartDelegConfig, restartDelegScript, runtime.WithModel(gm), runtime.WithTracerProvider(tp1))
	rt := p.mustOpen()
	if _, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("do three things")); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, "the report turn")
	mustClose(t, rt)
	delegating := turnSpans(sr1.Ended(), "lead")[0]

	tp2, sr2 := traced(t)
	p.opts = []runtime.Option{runtime.WithModel(&recorder{p: sc}), runtime.WithTracerProvider(tp2)}
	rt = p.mustOpen()
	waitNoTasks(t, rt)
	report := turnSpans(endedSpans(sr2, func(spans []sdktrace.ReadOnlySpan) bool { return len(turnSpans(spans, "lead")) == 1 }), "lead")
	if len(report) != 1 {
		t.Fatalf("%d turns of lead after the restart, want the report:\n%s", len(report), spanTree(sr2.Ended()))
	}
	if report[0].SpanContext().TraceID() != delegating.SpanContext().TraceID() || report[0].Parent().SpanID() != delegating.SpanContext().SpanID() {
		t.Errorf("the report after the restart is in trace %s under %s, want trace %s under the delegating turn %s",
			report[0].SpanContext().TraceID(), report[0].Parent().SpanID(), delegating.SpanContext().TraceID(), delegating.SpanContext().SpanID())
	}
}

// TestResumeLinksToThePause: a paused turn's resume, however much later,
// links to the turn that paused.
func TestResumeLinksToThePause(t *testing.T) {
	tp, sr := traced(t)
	h := newHarness(t, pauseConfig, pauseScript, runtime.WithTracerProvider(tp))
	ctx := context.Background()
	res := h.mustSend("a", "k", "start")
	if res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("turn = %+v", res)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 2 {
		t.Fatalf("pending = %v, %v", items, err)
	}
	answerPause(t, h.rt, items, "sk-canary-value-0123456789")
	turns := turnSpans(sr.Ended(), "a")
	if len(turns) != 2 {
		t.Fatalf("%d turns:\n%s", len(turns), spanTree(sr.Ended()))
	}
	paused, resumed := turns[0], turns[1]
	if l := resumed.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != paused.SpanContext().SpanID() {
		t.Errorf("the resume turn's links: %+v, want one to the paused turn %s", l, paused.SpanContext().SpanID())
	}
}

// TestTraceContentAndSecrets: with content on, spans hold the messages,
// arguments and results, masked; a provided secret is in no span or
// attribute, content on or off.
func TestTraceContentAndSecrets(t *testing.T) {
	const secret = "sk-canary-7d1e0c93b5a24f68"
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprint("content ", content), func(t *testing.T) {
			tp, sr := traced(t)
			h := newHarness(t, fmt.Sprintf("telemetry: {content: %v}\n", content)+pauseConfig, pauseScript, runtime.WithTracerProvider(tp))
			ctx := context.Background()
			h.mustSend("a", "k", "start")
			items, err := h.rt.Pending(ctx, ledger.Filter{Open: true})
			if err != nil || len(items) != 2 {
				t.Fatalf("pending = %v, %v", items, err)
			}
			answerPause(t, h.rt, items, secret)
			var all strings.Builder
			for _, s := range sr.Ended() {
				all.WriteString(s.Name() + " " + s.Status().Description)
				for _, kv := range s.Attributes() {
					all.WriteString(" " + string(kv.Key) + "=" + kv.Value.String())
				}
				for _, e := range s.Events() {
					all.WriteString(" " + e.Name)
				}
				all.WriteString("\n")
			}
			text := all.String()
			if !strings.Contains(text, "execute_tool execute_command") {
				t.Fatalf("no span of the call that used the secret:\n%s", text)
			}
			if strings.Contains(text, secret) {
				t.Fatalf("a span holds the secret:\n%s", text)
			}
			hasContent := strings.Contains(text, "gen_ai.tool.call.result=key=[secret OPENAI_API_KEY]") && strings.Contains(text, "What pricing model?")
			if hasContent != content {
				t.Errorf("content %v, but the spans' text holds the masked result and the messages: %v\n%s", content, hasContent, text)
			}
		})
	}
}

// answerPause skips the question of pauseScript and provides its key.
func answerPause(t *testing.T, rt *runtime.Runtime, items []ledger.Item, key string) {
	t.Helper()
	slices.SortFunc(items, func(a, b ledger.Item) int { return strings.Compare(b.Kind, a.Kind) }) // question, then dependency
	if _, err := rt.Skip(context.Background(), items[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Provide(context.Background(), items[1].ID, key); err != nil {
		t.Fatal(err)
	}
}

// TestDecisionsAreSpanEvents: what an extension publishes during a turn
// (an approval decision, a pause) is an event of the turn's span, with
// its outcome and without what anyone wrote.
func TestDecisionsAreSpanEvents(t *testing.T) {
	tp, sr := traced(t)
	p := newPersistent(t, modelLine+`
workspace: ws
agents:
  - name: a
    tools: [read_file]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: c1, args: {path: notes.txt}}]
        - text: "done"
`, runtime.WithTracerProvider(tp))
	if err := os.MkdirAll(filepath.Join(p.dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.dir, "ws", "notes.txt"), "hello\n")
	writeFile(t, filepath.Join(p.dir, "rules.yaml"), "default: ask\nrules:\n  - name: reads\n    when: tool.category == \"read\"\n    decision: approve\n")
	rt := p.mustOpen()
	if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("read it")); err != nil {
		t.Fatal(err)
	}
	turns := turnSpans(sr.Ended(), "a")
	if len(turns) != 1 {
		t.Fatalf("%d turns", len(turns))
	}
	var got []string
	for _, e := range turns[0].Events() {
		s := e.Name
		for _, kv := range e.Attributes {
			s += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		got = append(got, s)
	}
	want := `approval.decided ganglion.event.call_id=c1 ganglion.event.decision=approve ganglion.event.source=approval ganglion.event.tool=read_file`
	if !slices.Contains(got, want) {
		t.Errorf("the turn's events:\n%s\nwant among them:\n%s", strings.Join(got, "\n"), want)
	}
}

// TestMetrics: a traced session's metrics: turn and model-call durations,
// tokens by agent, model and kind, tool calls by tool and outcome, layer
// failures, and the pending items open, read from the ledger.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	h := newHarness(t, `
workspace: ws
agents:
  - name: a
    tools: [read_file]
    extensions:
      - name: protocol
      - name: flaky
        on_error: fail_open
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: read_file, id: c1, args: {path: missing.txt}}]
            usage: {input_tokens: 12, output_tokens: 3}
          - text: "Which one?\n[USER_QUESTION]\ncategory: clarification\nquestion: Which file?\nrequired: true\n[/USER_QUESTION]\n"
            usage: {input_tokens: 20, output_tokens: 5}
`, runtime.WithMeterProvider(mp), runtime.WithExtension("flaky", layered(true)))
	if res := h.mustSend("a", "k", "read a file"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("turn = %+v", res)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+attrs(p.Attributes)] = fmt.Sprint("count ", p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+attrs(p.Attributes)] = fmt.Sprint("count ", p.Count, " sum ", p.Sum)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+attrs(p.Attributes)] = fmt.Sprint(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+" "+attrs(p.Attributes)] = fmt.Sprint(p.Value)
				}
			}
		}
	}
	for k, want := range map[string]string{
		"ganglion.turn.duration ganglion.finish_reason=paused gen_ai.agent.name=a":                                                          "count 1",
		"gen_ai.client.operation.duration gen_ai.agent.name=a gen_ai.provider.name=scripted gen_ai.request.model=":                          "count 2",
		"gen_ai.client.token.usage gen_ai.agent.name=a gen_ai.request.model= gen_ai.token.type=input":                                       "count 2 sum 32",
		"gen_ai.client.token.usage gen_ai.agent.name=a gen_ai.request.model= gen_ai.token.type=output":                                      "count 2 sum 8",
		"ganglion.tool.calls error=true gen_ai.agent.name=a gen_ai.tool.name=read_file":                                                     "1",
		"ganglion.extension.layer.failures ganglion.extension=flaky ganglion.hook=toolCall ganglion.layer.skipped=true gen_ai.agent.name=a": "1",
		"ganglion.pending.open gen_ai.agent.name=a":                                                                                         "1",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	if t.Failed() {
		var all []string
		for k, v := range got {
			all = append(all, k+": "+v)
		}
		slices.Sort(all)
		t.Logf("the metrics:\n%s", strings.Join(all, "\n"))
	}
}

// exported is a metric exporter that keeps the gauge values it is sent.
type exported struct {
	mu     sync.Mutex
	gauges map[string]int64 // "name attrs" → value
}

func (e *exported) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *exported) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *exported) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
				for _, p := range g.DataPoints {
					e.gauges[m.Name+" "+attrs(p.Attributes)] = p.Value
				}
			}
		}
	}
	return nil
}

func (e *exported) ForceFlush(context.Context) error { return nil }
func (e *exported) Shutdown(context.Context) error   { return nil }

// TestMetricsAtClose: Close flushes a meter provider given through
// WithMeterProvider while the store is open, so its exporter gets the
// last count of the pending items; a collection after Close neither
// reads the closed store nor reports the closed runtime's items.
func TestMetricsAtClose(t *testing.T) {
	exp := &exported{gauges: map[string]int64{}}
	manual := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))),
		sdkmetric.WithReader(manual))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: protocol}]
`, `
agents:
  a:
    turns:
      - steps:
          - text: "[USER_QUESTION]\ncategory: clarification\nquestion: Which file?\nrequired: true\n[/USER_QUESTION]\n"
`, runtime.WithMeterProvider(mp))
	if res := h.mustSend("a", "k", "read a file"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("turn = %+v", res)
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	got := exp.gauges["ganglion.pending.open gen_ai.agent.name=a"]
	exp.mu.Unlock()
	if got != 1 {
		t.Errorf("the exporter got ganglion.pending.open %d at Close, want 1 (all: %v)", got, exp.gauges)
	}
	var rm metricdata.ResourceMetrics
	if err := manual.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("a collection after Close: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "ganglion.pending.open" {
				t.Errorf("a collection after Close reports %s: %+v", m.Name, m.Data)
			}
		}
	}
}

func attrs(s attribute.Set) string {
	var out []string
	for _, kv := range s.ToSlice() {
		out = append(out, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(out, " ")
}

// asker is a native extension whose turn middleware asks agent "critic"
// before the model runs, and tells agent "log" after, without waiting.
func asker(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			if _, err := t.Agents().Request(ctx, "critic", "about: "+t.Input().Text, pipeline.AgentCallOptions{}); err != nil {
				return nil, err
			}
			res, err := t.Next(ctx)
			if err == nil {
				err = t.Agents().Send(ctx, "log", "said: "+res.Response.Content, pipeline.AgentCallOptions{})
			}
			return res, err
		})
		return nil
	}), nil
}

// TestTraceOfAgentCalls: a turn that a middleware's ctx.agents request
// or send runs is a child of the calling layer's span.
func TestTraceOfAgentCalls(t *testing.T) {
	tp, sr := traced(t)
	h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: asker}]
  - name: critic
  - name: log
`, `
agents:
  a: {fallback: {steps: [{text: "hello"}]}}
  critic: {fallback: {steps: [{text: "fine"}]}}
  log: {fallback: {steps: [{text: "noted"}]}}
`, runtime.WithTracerProvider(tp), runtime.WithExtension("asker", asker))
	h.mustSend("a", "k", "hi")
	if err := h.rt.WaitTasks(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := spanTree(sr.Ended())
	want := `invoke_agent a
  turn asker
    invoke_agent critic
      step 1
        chat scripted
    step 1
      chat scripted
    invoke_agent log
      step 1
        chat scripted
`
	if got != want {
		t.Errorf("span tree:\n%s\nwant:\n%s", got, want)
	}
}

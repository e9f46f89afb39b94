package telemetry

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/ganglion-dev/ganglion/internal/otlp"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
)

// scope is the instrumentation scope of the runtime's spans and metrics.
const scope = "github.com/ganglion-dev/ganglion/runtime"

// Keys of Ganglion's own attributes, beside the GenAI ones.
const (
	keyInstance     = attribute.Key("ganglion.instance")
	keyTurnID       = attribute.Key("ganglion.turn.id")
	keyInputKind    = attribute.Key("ganglion.input.kind")
	keyFinishReason = attribute.Key("ganglion.finish_reason")
	keyAnsweredBy   = attribute.Key("ganglion.answered_by")
	keyStep         = attribute.Key("ganglion.step")
	keyExtension    = attribute.Key("ganglion.extension")
	keyHook         = attribute.Key("ganglion.hook")
	keyOnError      = attribute.Key("ganglion.on_error")
	keySkipped      = attribute.Key("ganglion.layer.skipped")
	keyTTFT         = attribute.Key("ganglion.time_to_first_chunk_ms")
	keyTaskID       = attribute.Key("ganglion.task.id")
)

// T instruments one runtime. It is the turn loop's [engine.Tracer]
// ([T.Tracer]); a runtime reads its other methods.
type T struct {
	tracer  trace.Tracer
	tracing bool // a tracer provider was given: spans are made
	content bool
	metrics bool // a meter provider was given: metrics are recorded
	// sets caches the attribute sets of measurements, by their values:
	// building one sorts and allocates, a turn records several.
	sets sync.Map // string → metric.MeasurementOption
	// names caches span names by what they are made of ("chat " + model).
	names  sync.Map // string → string
	layers sync.Map // layerKey → *layerInfo
	// turns are the spans of the turns running, by agent, instance and
	// turn ID, for the events published during them (Event).
	turns sync.Map // string → trace.Span

	turnDur    metric.Float64Histogram
	opDur      metric.Float64Histogram
	tokens     metric.Int64Histogram
	toolCalls  metric.Int64Counter
	layerFails metric.Int64Counter
	meter      metric.Meter
	// pending is the callback of the gauge ganglion.pending.open, which
	// reads the store; nil when it is not registered.
	pending metric.Registration

	// What Open set up, which Close ends: the OTLP export it opened, or
	// the meter provider it was given; the subscriptions to the bus.
	exporter *otlp.Providers
	given    metric.MeterProvider
	unsub    []func()
	logger   *slog.Logger
}

// New returns the instrumentation of a runtime on tp and mp, either of
// which may be nil (no spans, or no metrics); content says whether
// message and argument text goes into spans.
func New(tp trace.TracerProvider, mp metric.MeterProvider, content bool) (*T, error) {
	t := &T{tracing: tp != nil, metrics: mp != nil, content: content}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t.tracer = tp.Tracer(scope)
	m := mp.Meter(scope)
	var err error
	seconds := metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
	if t.turnDur, err = m.Float64Histogram("ganglion.turn.duration", metric.WithUnit("s"),
		metric.WithDescription("How long turns take, by agent and finish reason."), seconds); err != nil {
		return nil, err
	}
	if t.opDur, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("How long model calls take, by agent and model."), seconds); err != nil {
		return nil, err
	}
	if t.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens a model call used, by agent, model and kind (input, output)."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)); err != nil {
		return nil, err
	}
	if t.toolCalls, err = m.Int64Counter("ganglion.tool.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls, by agent, tool and whether the result is an error.")); err != nil {
		return nil, err
	}
	if t.layerFails, err = m.Int64Counter("ganglion.extension.layer.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Failures of extension middleware layers, by extension, hook and whether the layer was skipped.")); err != nil {
		return nil, err
	}
	t.meter = m
	return t, nil
}

// set returns the measurement option of the attributes kvs, whose values
// joined make key, from the cache.
func (t *T) set(key string, kvs func() []attribute.KeyValue) metric.MeasurementOption {
	if o, ok := t.sets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(kvs()...))
	t.sets.Store(key, o)
	return o
}

// name returns prefix+what, from the cache: a span name built per call
// would cost an allocation.
func (t *T) name(prefix, what string) string {
	key := prefix + "\x00" + what // not allocated: only looked up
	if n, ok := t.names.Load(key); ok {
		return n.(string)
	}
	n := prefix + what
	t.names.Store(prefix+"\x00"+what, n)
	return n
}

// Options and attributes made once: one built per span is an allocation.
var (
	finishStop      = semconv.GenAIResponseFinishReasons("stop")
	finishToolCalls = semconv.GenAIResponseFinishReasons("tool_calls")
	kindClient      = trace.WithSpanKind(trace.SpanKindClient)
	kindInternal    = trace.WithSpanKind(trace.SpanKindInternal)
	stepNames       [32]string
)

func init() {
	for i := range stepNames {
		stepNames[i] = "step " + strconv.Itoa(i)
	}
}

// Tracer returns t as the turn loop's tracer, and nil when t is nil: a
// nil *T in an [engine.Tracer] would be an interface that is not nil,
// and the loop would call it.
func (t *T) Tracer() engine.Tracer {
	if t == nil {
		return nil
	}
	return t
}

// turn is a turn's span; End ends it.
type turn struct {
	t     *T
	span  trace.Span
	start time.Time
	agent attribute.KeyValue
	key   string // in t.turns; "" when not there
}

// StartTurn starts the span of a turn of agent's instance; links are
// the traceparents of the spans it continues (the turn that delegated its
// task, the turn that paused before it resumed). It returns the span's
// traceparent too.
func (t *T) StartTurn(ctx context.Context, agent, instance, turnID string, in pipeline.InputEvent, links []string) (context.Context, engine.TurnSpan, string) {
	a := semconv.GenAIAgentName(agent)
	var span trace.Span
	if l := spanLinks(links); len(l) > 0 {
		ctx, span = t.tracer.Start(ctx, t.name("invoke_agent ", agent), kindInternal, trace.WithLinks(l...))
	} else {
		ctx, span = t.tracer.Start(ctx, t.name("invoke_agent ", agent), kindInternal)
	}
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, a, semconv.GenAIConversationID(agent+"/"+instance),
			keyInstance.String(instance), keyTurnID.String(turnID), keyInputKind.String(string(in.Kind)))
		if task, _ := in.Metadata["taskId"].(string); task != "" {
			span.SetAttributes(keyTaskID.String(task))
		}
		if t.content {
			span.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON(pipeline.Message{Role: pipeline.RoleUser, Content: in.Text})))
		}
	}
	key := ""
	if t.tracing && span.IsRecording() {
		key = agent + "\x00" + instance + "\x00" + turnID
		t.turns.Store(key, span)
	}
	return ctx, &turn{t: t, span: span, start: time.Now(), agent: a, key: key}, Traceparent(ctx)
}

// End ends the turn's span with its result or error.
func (s *turn) End(res *pipeline.TurnResult, err error) {
	reason := ""
	if res != nil {
		reason = string(res.FinishReason)
	}
	if res != nil && s.span.IsRecording() {
		s.span.SetAttributes(keyFinishReason.String(reason), semconv.GenAIUsageInputTokens(int(res.Usage.InputTokens)),
			semconv.GenAIUsageOutputTokens(int(res.Usage.OutputTokens)))
		if res.AnsweredBy != "" {
			s.span.SetAttributes(keyAnsweredBy.String(res.AnsweredBy))
		}
		if s.t.content && err == nil {
			s.span.SetAttributes(semconv.GenAIOutputMessagesKey.String(messagesJSON(res.Response)))
		}
	}
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	}
	if s.key != "" {
		s.t.turns.Delete(s.key)
	}
	s.span.End()
	if t := s.t; t.metrics {
		t.turnDur.Record(context.Background(), time.Since(s.start).Seconds(), t.set("turn\x00"+s.agent.Value.AsString()+"\x00"+reason,
			func() []attribute.KeyValue { return []attribute.KeyValue{s.agent, keyFinishReason.String(reason)} }))
	}
}

// StartStep starts the span of step n of a turn; [T.EndStep] ends it.
func (t *T) StartStep(ctx context.Context, n int) context.Context {
	name := "step " + strconv.Itoa(n)
	if n < len(stepNames) {
		name = stepNames[n]
	}
	ctx, span := t.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(keyStep.Int(n))
	}
	return ctx
}

// EndStep ends the span of the step whose context, from [T.StartStep],
// ctx is, with err as its status, if not nil.
func (t *T) EndStep(ctx context.Context, err error) {
	span := trace.SpanFromContext(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// modelCall is a model call's span; Chunk marks its first chunk, End
// ends it.
type modelCall struct {
	t     *T
	span  trace.Span
	start time.Time
	first bool
	attrs [3]attribute.KeyValue // agent, model, provider: the metrics' attributes
}

// StartModel starts the span of a model call of agent to model at
// provider; system and msgs are recorded when content is on.
func (t *T) StartModel(ctx context.Context, agent, provider, model string, maxTokens int, system string, msgs pipeline.MessageList) (context.Context, engine.ModelSpan) {
	m := &modelCall{t: t, start: time.Now(), attrs: [3]attribute.KeyValue{semconv.GenAIAgentName(agent), semconv.GenAIRequestModel(model),
		semconv.GenAIProviderNameKey.String(provider)}}
	name := t.name("chat ", model) // the convention's name; the provider's when the config names no model
	if model == "" {
		name = t.name("chat ", provider)
	}
	ctx, m.span = t.tracer.Start(ctx, name, kindClient)
	if m.span.IsRecording() {
		m.span.SetAttributes(semconv.GenAIOperationNameChat, m.attrs[0], m.attrs[1], m.attrs[2])
		if maxTokens > 0 {
			m.span.SetAttributes(semconv.GenAIRequestMaxTokens(maxTokens))
		}
		if t.content {
			m.span.SetAttributes(semconv.GenAISystemInstructionsKey.String(system), semconv.GenAIInputMessagesKey.String(listJSON(msgs)))
		}
	}
	return ctx, m
}

// Chunk notes that a chunk arrived; the first sets the time to it.
func (m *modelCall) Chunk() {
	if m.first {
		return
	}
	m.first = true
	if m.span.IsRecording() {
		m.span.SetAttributes(keyTTFT.Float64(float64(time.Since(m.start).Microseconds()) / 1000))
	}
}

// End ends the model call's span with the assembled reply and its usage.
func (m *modelCall) End(reply pipeline.Message, usage pipeline.Usage, err error) {
	ctx := context.Background()
	if err != nil {
		m.span.SetStatus(codes.Error, err.Error())
	} else {
		if m.span.IsRecording() {
			finish := finishStop
			if len(reply.ToolCalls) > 0 {
				finish = finishToolCalls
			}
			m.span.SetAttributes(finish, semconv.GenAIUsageInputTokens(int(usage.InputTokens)), semconv.GenAIUsageOutputTokens(int(usage.OutputTokens)))
			if m.t.content {
				m.span.SetAttributes(semconv.GenAIOutputMessagesKey.String(messagesJSON(reply)))
			}
		}
		if t := m.t; t.metrics {
			key := m.attrs[0].Value.AsString() + "\x00" + m.attrs[1].Value.AsString()
			if usage.InputTokens > 0 {
				t.tokens.Record(ctx, usage.InputTokens, t.set("in\x00"+key,
					func() []attribute.KeyValue {
						return []attribute.KeyValue{m.attrs[0], m.attrs[1], semconv.GenAITokenTypeInput}
					}))
			}
			if usage.OutputTokens > 0 {
				t.tokens.Record(ctx, usage.OutputTokens, t.set("out\x00"+key,
					func() []attribute.KeyValue {
						return []attribute.KeyValue{m.attrs[0], m.attrs[1], semconv.GenAITokenTypeOutput}
					}))
			}
		}
	}
	m.span.End()
	if t := m.t; t.metrics {
		t.opDur.Record(ctx, time.Since(m.start).Seconds(), t.set("op\x00"+m.attrs[0].Value.AsString()+"\x00"+m.attrs[1].Value.AsString()+"\x00"+m.attrs[2].Value.AsString(),
			func() []attribute.KeyValue { return m.attrs[:] }))
	}
}

// StartTool starts the span of tool call c; [T.EndTool] ends it.
func (t *T) StartTool(ctx context.Context, c pipeline.ToolCall) context.Context {
	ctx, span := t.tracer.Start(ctx, t.name("execute_tool ", c.Name))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Name), semconv.GenAIToolCallID(c.ID),
			semconv.GenAIToolTypeKey.String("function"))
		if t.content {
			span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(string(c.Arguments)))
		}
	}
	return ctx
}

// EndTool ends the span of the tool call of agent whose context, from
// [T.StartTool], ctx is, with its result, masked already.
func (t *T) EndTool(ctx context.Context, agent string, r *pipeline.ToolResult) {
	span := trace.SpanFromContext(ctx)
	if r.IsError {
		span.SetStatus(codes.Error, "the tool's result is an error")
	}
	if t.content && span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(r.Content))
	}
	span.End()
	if t.metrics {
		t.toolCalls.Add(context.Background(), 1, t.set("tool\x00"+agent+"\x00"+r.Name+"\x00"+strconv.FormatBool(r.IsError), func() []attribute.KeyValue {
			return []attribute.KeyValue{semconv.GenAIAgentName(agent), semconv.GenAIToolName(r.Name), attribute.Bool("error", r.IsError)}
		}))
	}
}

// layerKey names an extension layer; layerInfo is what its spans and
// metrics say of it, made once.
type (
	layerKey struct {
		agent string
		hook  pipeline.Hook
		owner pipeline.Owner
	}
	layerInfo struct {
		name  string
		attrs []attribute.KeyValue
	}
)

func (t *T) layer(agent string, hook pipeline.Hook, o pipeline.Owner) *layerInfo {
	k := layerKey{agent, hook, o}
	if l, ok := t.layers.Load(k); ok {
		return l.(*layerInfo)
	}
	l := &layerInfo{name: hook.String() + " " + o.Extension, attrs: []attribute.KeyValue{keyExtension.String(o.Extension),
		keyHook.String(hook.String()), keyOnError.String(o.OnError.String())}}
	t.layers.Store(k, l)
	return l
}

// Layers returns pipeline.Handlers.ObserveStart and ObserveEnd for
// agent's pipeline: a span for each extension layer's run.
func (t *T) Layers(agent string) (func(context.Context, pipeline.Hook, pipeline.Owner) context.Context,
	func(context.Context, pipeline.Hook, pipeline.Owner, error, bool)) {
	a := semconv.GenAIAgentName(agent)
	start := func(ctx context.Context, hook pipeline.Hook, o pipeline.Owner) context.Context {
		l := t.layer(agent, hook, o)
		ctx, span := t.tracer.Start(ctx, l.name)
		if span.IsRecording() {
			span.SetAttributes(l.attrs...)
		}
		return ctx
	}
	end := func(ctx context.Context, hook pipeline.Hook, o pipeline.Owner, err error, skipped bool) {
		span := trace.SpanFromContext(ctx)
		if skipped {
			span.SetAttributes(keySkipped.Bool(true))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			if t.metrics {
				t.layerFails.Add(context.Background(), 1, metric.WithAttributes(a, keyExtension.String(o.Extension),
					keyHook.String(hook.String()), keySkipped.Bool(skipped)))
			}
		}
		span.End()
	}
	return start, end
}

// ObservePending reports the pending items open, by agent, as the gauge
// ganglion.pending.open, read from count at each collection: the ledger
// is the truth, across restarts. [T.StopPending] ends the reading.
func (t *T) ObservePending(count func(context.Context) (map[string]int64, error)) error {
	if !t.metrics {
		return nil
	}
	g, err := t.meter.Int64ObservableGauge("ganglion.pending.open", metric.WithUnit("{item}"),
		metric.WithDescription("Pending items open: what paused turns wait for, by agent."))
	if err != nil {
		return err
	}
	t.pending, err = t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, err := count(ctx)
		if err != nil {
			return err
		}
		for agent, c := range n {
			o.ObserveInt64(g, c, metric.WithAttributes(semconv.GenAIAgentName(agent)))
		}
		return nil
	}, g)
	return err
}

// StopPending ends the reading [T.ObservePending] started: a runtime
// calls it before its store closes, since the meter provider may collect
// later (an embedder's outlives the runtime).
func (t *T) StopPending() error {
	if t.pending == nil {
		return nil
	}
	err := t.pending.Unregister()
	t.pending = nil
	return err
}

// wireMessage is a message as the GenAI conventions record it.
type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	Tools   []struct {
		ID, Name, Arguments string
	} `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

func toWire(m pipeline.Message) wireMessage {
	w := wireMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		w.Tools = append(w.Tools, struct{ ID, Name, Arguments string }{c.ID, c.Name, string(c.Arguments)})
	}
	return w
}

func messagesJSON(ms ...pipeline.Message) string {
	w := make([]wireMessage, len(ms))
	for i, m := range ms {
		w[i] = toWire(m)
	}
	b, _ := plainjson.Marshal(w) // read by people, in a trace viewer
	return string(b)
}

func listJSON(l pipeline.MessageList) string {
	if l == nil {
		return "[]"
	}
	ms := make([]pipeline.Message, l.Len())
	for i := range ms {
		ms[i] = l.At(i)
	}
	return messagesJSON(ms...)
}

// propagator writes and reads W3C trace context (traceparent).
var propagator = propagation.TraceContext{}

// Traceparent returns the W3C traceparent of the span in ctx, "" if it
// has none: what a task or a pending item stores, so that a turn that
// runs later (after a restart, days later) joins or links to the trace.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// WithParent returns ctx with the span traceparent names as its remote
// parent; ctx itself if traceparent is empty or not valid.
func WithParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// spanLinks returns the links to the spans traceparents name, leaving
// out those that name none.
func spanLinks(traceparents []string) []trace.Link {
	var out []trace.Link
	for _, tp := range traceparents {
		sc := trace.SpanContextFromContext(WithParent(context.Background(), tp))
		if sc.IsValid() {
			out = append(out, trace.Link{SpanContext: sc})
		}
	}
	return out
}

// EventTopics are the topics of the events that become events of the
// span of the turn they are published in: what extensions decided
// (approval, condensation), pauses, delegation, skipped layers, retries.
// Tools, model deltas and messages have spans of their own, or are
// content.
var EventTopics = []string{"approval.*", "context.*", "pending.*", "task.*", "team.*", "middleware.skipped", "turn.interrupted", "model.retry"}

// plainKeys are the string fields of an event's data that name what
// happened rather than quote what someone wrote: they go into span
// events with content off.
var plainKeys = map[string]bool{"decision": true, "tool": true, "call_id": true, "kind": true, "status": true, "budget": true,
	"summariser": true, "summary_id": true, "extension": true, "id": true, "hook": true, "reason": true, "task_id": true, "agent": true}

// Event adds ev to the span of the turn it was published in, if that
// turn is running and traced: its topic as the event's name, with the
// source and the data's top-level numbers, booleans and plain fields
// (every string field with content on).
func (t *T) Event(agent, instance, turnID, topic, source string, data any) {
	if turnID == "" {
		return
	}
	v, ok := t.turns.Load(agent + "\x00" + instance + "\x00" + turnID)
	if !ok {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("ganglion.event.source", source)}
	if raw, err := json.Marshal(data); err == nil {
		var fields map[string]any
		if json.Unmarshal(raw, &fields) == nil {
			for k, x := range fields {
				key := "ganglion.event." + k
				switch x := x.(type) {
				case float64:
					attrs = append(attrs, attribute.Float64(key, x))
				case bool:
					attrs = append(attrs, attribute.Bool(key, x))
				case string:
					if t.content || plainKeys[k] {
						attrs = append(attrs, attribute.String(key, x))
					}
				}
			}
		}
	}
	slices.SortFunc(attrs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
	v.(trace.Span).AddEvent(topic, trace.WithAttributes(attrs...))
}

var _ engine.Tracer = (*T)(nil)

package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
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
				b.WriteString(" " + string(kv.Key) + "=" + kv.Value.Emit())
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

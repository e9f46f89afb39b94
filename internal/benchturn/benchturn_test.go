package benchturn_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestTheTurn: a runtime from New runs the turn the benchmarks measure,
// through the three pass-through extensions' layers on the turn, each
// step and the tool call, and Check tells that outcome from others.
func TestTheTurn(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	rt := benchturn.New(t, runtime.WithMemoryStore(), runtime.WithTracerProvider(tp))
	ctx := context.Background()
	res, err := rt.Send(ctx, benchturn.Agent, "k", runtime.UserMessage(benchturn.Question))
	if err := benchturn.Check(res, err); err != nil {
		t.Fatal(err)
	}
	hist, err := rt.History(ctx, benchturn.Agent, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 4 || hist[1].ToolCalls[0].Name != "lookup" || hist[2].Content != "42" {
		t.Errorf("history = %+v, want the question, the call of lookup, its result 42 and the answer", hist)
	}
	// Each layer's span is named after its hook and extension.
	spans := map[string]int{}
	for _, s := range sr.Ended() {
		spans[s.Name()]++
	}
	for _, ext := range []string{"mw1", "mw2", "mw3"} {
		for hook, want := range map[string]int{"turn": 1, "step": 2, "toolCall": 1} {
			if got := spans[hook+" "+ext]; got != want {
				t.Errorf("%s layers of %s = %d, want %d (spans %v)", hook, ext, got, want, spans)
			}
		}
	}
	for _, tt := range []struct {
		name string
		res  *pipeline.TurnResult
		err  error
		want string
	}{
		{"an error", nil, errors.New("boom"), "boom"},
		{"one step", &pipeline.TurnResult{FinishReason: pipeline.FinishText, Steps: 1, Response: pipeline.Message{Content: benchturn.Answer}},
			nil, `turn = text_response after 1 steps, answer "The answer is 42.": want text_response after 2, "The answer is 42."`},
		{"another answer", &pipeline.TurnResult{FinishReason: pipeline.FinishText, Steps: 2, Response: pipeline.Message{Content: "41"}},
			nil, `turn = text_response after 2 steps, answer "41": want text_response after 2, "The answer is 42."`},
	} {
		if err := benchturn.Check(tt.res, tt.err); err == nil || err.Error() != tt.want {
			t.Errorf("%s: Check = %v, want %q", tt.name, err, tt.want)
		}
	}
}

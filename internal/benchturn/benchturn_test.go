package benchturn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestTheTurn: a runtime from New runs the turn the benchmarks measure,
// and Check tells that outcome from others.
func TestTheTurn(t *testing.T) {
	rt := benchturn.New(t, runtime.WithMemoryStore())
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

package pipeline_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// BenchmarkChain measures the cost of one native middleware layer of each
// kind: a pass-through layer that calls Next. It runs a chain of 10 layers
// and reports the time per layer.
func BenchmarkChain(b *testing.B) {
	const layers = 10
	ctx := context.Background()
	// The innermost handlers return preallocated results, so that what is
	// measured is the layers alone.
	turnRes, stepRes, toolRes := &pipeline.TurnResult{}, &pipeline.StepResult{}, &pipeline.ToolResult{}
	handlers := pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return turnRes, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return stepRes, nil
		},
		ToolCall: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return toolRes, nil
		},
	}
	build := func(n int) *pipeline.Pipeline {
		var pb pipeline.Builder
		for range n {
			o := pipeline.Owner{Extension: "bench"}
			pb.Turn(o, func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) { return t.Next(ctx) })
			pb.Step(o, func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) { return s.Next(ctx) })
			pb.ToolCall(o, func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				return c.Next(ctx)
			})
		}
		p, err := pb.Build(handlers)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	p := build(layers)
	b.Run("turn", func(b *testing.B) {
		tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", TurnID: "t"})
		for b.Loop() {
			if _, err := p.RunTurn(ctx, tc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/layers, "ns/layer")
	})
	b.Run("step", func(b *testing.B) {
		sc := pipeline.NewStepContext(pipeline.NewTurnContext(pipeline.TurnInfo{}), 1, nil)
		for b.Loop() {
			if _, err := p.RunStep(ctx, sc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/layers, "ns/layer")
	})
	b.Run("toolCall", func(b *testing.B) {
		cc := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Call: pipeline.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)}})
		for b.Loop() {
			if _, err := p.RunToolCall(ctx, cc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/layers, "ns/layer")
	})
}

package pipeline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// answer is an innermost turn handler standing in for the runtime's step loop.
func answer(text string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		fmt.Println("handler")
		return &pipeline.TurnResult{
			TurnID:       t.TurnID(),
			FinishReason: pipeline.FinishText,
			Response:     pipeline.Message{Role: pipeline.RoleAssistant, Content: text},
		}, nil
	}
}

// noStep is an innermost step handler; the examples run no steps.
func noStep(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	return &pipeline.StepResult{}, nil
}

// around returns a turn middleware that prints before and after Next.
func around(name string) pipeline.TurnFunc {
	return func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		fmt.Println(name, "before")
		r, err := t.Next(ctx)
		fmt.Println(name, "after")
		return r, err
	}
}

// Layers run outermost first in ascending [pipeline.Priority], then in
// registration order: each runs its code before Next from the outside in,
// and its code after Next from the inside out.
func ExampleBuilder_onionOrder() {
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "inner"}, around("inner"), pipeline.Priority(10))
	b.Turn(pipeline.Owner{Extension: "outer"}, around("outer"), pipeline.Priority(-10))
	b.Turn(pipeline.Owner{Extension: "middle"}, around("middle"))
	p, err := b.Build(pipeline.Handlers{Turn: answer("hello"), Step: noStep})
	if err != nil {
		panic(err)
	}

	t := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "demo", TurnID: "t1"})
	r, err := p.RunTurn(context.Background(), t)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response.Content)
	// Output:
	// outer before
	// middle before
	// inner before
	// handler
	// inner after
	// middle after
	// outer after
	// hello
}

// A middleware that returns a result without calling Next short-circuits the
// chain: the layers inside it and the handler do not run.
func ExampleBuilder_shortCircuit() {
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "logger"}, around("logger"))
	b.Turn(pipeline.Owner{Extension: "guard"}, func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		if t.Input().Text == "forbidden" {
			fmt.Println("guard answers")
			return &pipeline.TurnResult{
				TurnID:       t.TurnID(),
				FinishReason: pipeline.FinishText,
				Response:     pipeline.Message{Role: pipeline.RoleAssistant, Content: "I can't help with that."},
			}, nil
		}
		return t.Next(ctx)
	})
	b.Turn(pipeline.Owner{Extension: "inner"}, around("inner"))
	p, err := b.Build(pipeline.Handlers{Turn: answer("hello"), Step: noStep})
	if err != nil {
		panic(err)
	}

	t := pipeline.NewTurnContext(pipeline.TurnInfo{
		Agent:  "demo",
		TurnID: "t1",
		Input:  pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "forbidden"},
	})
	r, err := p.RunTurn(context.Background(), t)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response.Content)
	// Output:
	// logger before
	// guard answers
	// logger after
	// I can't help with that.
}

// A layer whose owner is [pipeline.FailOpen] is skipped when it fails: the
// rest of the chain runs as if it were not there, and [pipeline.Handlers]
// OnSkip is told about the failure. A fail_closed layer's failure would have
// failed the turn with a [*pipeline.MiddlewareError].
func ExampleBuilder_failOpen() {
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "flaky", OnError: pipeline.FailOpen},
		func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			fmt.Println("flaky fails")
			return nil, errors.New("metrics backend down")
		})
	b.Turn(pipeline.Owner{Extension: "inner"}, around("inner"))
	p, err := b.Build(pipeline.Handlers{
		Turn: answer("hello"),
		Step: noStep,
		OnSkip: func(s pipeline.Skip) {
			fmt.Printf("skipped %s (%s) in turn %s: %v\n", s.Owner.Extension, s.Hook, s.TurnID, s.Err)
		},
	})
	if err != nil {
		panic(err)
	}

	t := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "demo", TurnID: "t1"})
	r, err := p.RunTurn(context.Background(), t)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response.Content)
	// Output:
	// flaky fails
	// skipped flaky (turn) in turn t1: extension "flaky": turn middleware: metrics backend down
	// inner before
	// handler
	// inner after
	// hello
}

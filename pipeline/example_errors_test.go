package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// A fail_closed layer ([pipeline.FailClosed], the default) that fails the
// call itself fails it with a [*pipeline.MiddlewareError] naming the
// extension and the hook; a panic is recovered as a [*pipeline.PanicError]
// inside it. An embedder, or a test, tells them apart with errors.As.
func ExampleMiddlewareError() {
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "guard", OnError: pipeline.FailClosed},
		func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return nil, errors.New("input refused")
		})
	b.ToolCall(pipeline.Owner{Extension: "audit"},
		func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			panic("audit log full")
		})
	p, err := b.Build(pipeline.Handlers{Turn: answer("hello"), Step: noStep})
	if err != nil {
		panic(err)
	}

	report := func(err error) {
		var me *pipeline.MiddlewareError
		if !errors.As(err, &me) {
			fmt.Println("not a layer's failure:", err)
			return
		}
		switch me.Hook {
		case pipeline.HookTurn:
			fmt.Printf("turn layer of %s failed: %v\n", me.Extension, me.Err)
		case pipeline.HookStep:
			fmt.Printf("step layer of %s failed: %v\n", me.Extension, me.Err)
		case pipeline.HookToolCall:
			fmt.Printf("toolCall layer of %s failed: %v\n", me.Extension, me.Err)
		}
		var pe *pipeline.PanicError
		if errors.As(err, &pe) {
			fmt.Printf("  it panicked with %q (stack recorded: %t)\n", pe.Value, len(pe.Stack) > 0)
		}
	}
	_, err = p.RunTurn(context.Background(), pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "demo", TurnID: "t1"}))
	report(err)
	_, err = p.RunToolCall(context.Background(), pipeline.NewToolCallContext(pipeline.ToolCallInfo{
		Agent: "demo", TurnID: "t1", Step: 1, Call: pipeline.ToolCall{ID: "c1", Name: "search"},
	}))
	report(err)
	fmt.Println(err)
	// Output:
	// turn layer of guard failed: input refused
	// toolCall layer of audit failed: panic: audit log full
	//   it panicked with "audit log full" (stack recorded: true)
	// extension "audit": toolCall middleware: panic: audit log full
}

// An extension author tests a step middleware without a runtime: a
// [pipeline.StepContext] from NewStepContext, run by a pipeline whose
// innermost step handler stands in for the model. This middleware hides the
// write tools from the model when the input asks to look only.
func ExampleNewStepContext() {
	readOnly := func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
		if s.Input().Metadata["mode"] == "look" {
			s.Tools().Filter(func(t pipeline.ToolSpec) bool { return t.Category != pipeline.CategoryWrite })
		}
		return s.Next(ctx)
	}
	var b pipeline.Builder
	b.Step(pipeline.Owner{Extension: "readonly"}, readOnly)
	p, err := b.Build(pipeline.Handlers{
		Turn: answer("unused"),
		Step: func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			var names []string
			for _, t := range s.Tools().Tools() {
				names = append(names, t.Name)
			}
			fmt.Printf("step %d: the model sees %v\n", s.Index(), names)
			return &pipeline.StepResult{Message: pipeline.Message{Role: pipeline.RoleAssistant, Content: "ok"}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	for _, l := range p.Layers(pipeline.HookStep) {
		fmt.Println("step layer:", l.Owner.Extension)
	}

	noop := func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{}, nil
	}
	tools := []pipeline.Tool{
		{ToolSpec: pipeline.ToolSpec{Name: "read_file", Category: pipeline.CategoryRead}, Func: noop},
		{ToolSpec: pipeline.ToolSpec{Name: "write_file", Category: pipeline.CategoryWrite}, Func: noop},
	}
	for _, mode := range []string{"look", "work"} {
		t := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "demo", TurnID: "t1",
			Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi", Metadata: map[string]any{"mode": mode}}})
		if _, err := p.RunStep(context.Background(), pipeline.NewStepContext(t, 1, tools)); err != nil {
			panic(err)
		}
	}
	// Output:
	// step layer: readonly
	// step 1: the model sees [read_file]
	// step 1: the model sees [read_file write_file]
}

// A tool whose effect must not happen twice (a payment, an email) records
// the call's [pipeline.ToolCallContext.IdempotencyKey] and skips a key it
// has seen: a call run again after a crash has the same key. A test runs
// the tool through a [pipeline.ToolCallContext] from NewToolCallContext.
// IdempotencyKey computes the same key from what the history stores (the
// agent, the instance key, the ID of the message holding the call, and the
// call's ID), for a program that matches the tool's records to the history.
func ExampleIdempotencyKey() {
	var paid []string
	pay := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "pay", Category: pipeline.CategoryWrite},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			key := c.IdempotencyKey()
			if slices.Contains(paid, key) {
				return &pipeline.ToolResult{Content: "already paid"}, nil
			}
			paid = append(paid, key)
			return &pipeline.ToolResult{Content: "paid " + string(c.Arguments())}, nil
		},
	}
	var b pipeline.Builder
	p, err := b.Build(pipeline.Handlers{Turn: answer("unused"), Step: noStep})
	if err != nil {
		panic(err)
	}
	call := pipeline.ToolCallInfo{
		Agent: "shop", InstanceKey: "order-7", TurnID: "turn-3", Step: 1, MessageID: "msg-12",
		Call: pipeline.ToolCall{ID: "call-1", Name: "pay", Arguments: json.RawMessage(`{"eur":30}`)},
		Tool: pay, Found: true,
	}
	for range 2 { // the second run is the same call, run again
		r, err := p.RunToolCall(context.Background(), pipeline.NewToolCallContext(call))
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Content)
	}
	fmt.Println(paid[0] == pipeline.IdempotencyKey("shop", "order-7", "msg-12", "call-1"))
	// Output:
	// paid {"eur":30}
	// already paid
	// true
}

// A middleware that calls other agents or a model gets [pipeline.ErrNoAgents]
// or [pipeline.ErrNoWindow] where the runtime offers neither: in a test
// that builds its [pipeline.TurnContext] without Agents or Models, say. It
// can go on without them.
func ExampleErrNoAgents() {
	summarize := func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
		_, err := t.Agents().Request(ctx, "summarizer", t.Input().Text, pipeline.AgentCallOptions{})
		if errors.Is(err, pipeline.ErrNoAgents) {
			fmt.Println("no agent calls here:", err)
		}
		_, err = t.Models().Complete(ctx, pipeline.CompletionRequest{System: "Summarize.", Messages: []pipeline.Message{{Role: pipeline.RoleUser, Content: t.Input().Text}}})
		if errors.Is(err, pipeline.ErrNoWindow) {
			fmt.Println("no model calls here:", err)
		}
		return t.Next(ctx)
	}
	var b pipeline.Builder
	b.Turn(pipeline.Owner{Extension: "summary"}, summarize)
	p, err := b.Build(pipeline.Handlers{Turn: answer("hello"), Step: noStep})
	if err != nil {
		panic(err)
	}
	r, err := p.RunTurn(context.Background(), pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "demo", TurnID: "t1",
		Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "a long text"}}))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Response.Content)
	// Output:
	// no agent calls here: this context cannot call agents
	// no model calls here: this context has no model window
	// handler
	// hello
}

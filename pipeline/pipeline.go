package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// LayerOption configures one registered middleware layer.
type LayerOption interface{ apply(*layerOptions) }

type layerOptions struct{ priority int }

type priorityOption int

func (p priorityOption) apply(o *layerOptions) { o.priority = int(p) }

// Priority orders layers, outermost first by ascending priority, then by
// registration; the default is 0.
func Priority(p int) LayerOption { return priorityOption(p) }

// Builder collects layers and builds a [Pipeline]; not safe for concurrent use.
type Builder struct {
	turn []layer[*TurnContext, *TurnResult]
	step []layer[*StepContext, *StepResult]
	tool []layer[*ToolCallContext, *ToolResult]
}

func layerOf[C any, R comparable](o Owner, fn func(context.Context, C) (R, error), opts []LayerOption) layer[C, R] {
	var lo layerOptions
	for _, opt := range opts {
		opt.apply(&lo)
	}
	if fn == nil {
		panic(fmt.Sprintf("pipeline: extension %q registered a nil middleware", o.Extension))
	}
	return layer[C, R]{owner: o, priority: lo.priority, fn: fn}
}

// Turn registers a turn middleware for o.
func (b *Builder) Turn(o Owner, fn TurnFunc, opts ...LayerOption) {
	b.turn = append(b.turn, layerOf(o, fn, opts))
}

// Step registers a step middleware for o.
func (b *Builder) Step(o Owner, fn StepFunc, opts ...LayerOption) {
	b.step = append(b.step, layerOf(o, fn, opts))
}

// ToolCall registers a toolCall middleware for o.
func (b *Builder) ToolCall(o Owner, fn ToolCallFunc, opts ...LayerOption) {
	b.tool = append(b.tool, layerOf(o, fn, opts))
}

// Handlers are the runtime's innermost handlers; a nil ToolCall runs the
// tool's own function. OnSkip, ObserveStart and ObserveEnd watch the layers:
// docs/extensions.md, "Handlers".
type Handlers struct {
	Turn         TurnFunc
	Step         StepFunc
	ToolCall     ToolCallFunc
	OnSkip       func(Skip)
	ObserveStart func(ctx context.Context, hook Hook, owner Owner) context.Context
	ObserveEnd   func(ctx context.Context, hook Hook, owner Owner, err error, skipped bool)
}

// Build returns the pipeline of the layers registered so far around h.
func (b *Builder) Build(h Handlers) (*Pipeline, error) {
	if h.Turn == nil || h.Step == nil {
		return nil, errors.New("pipeline: Handlers.Turn and Handlers.Step are required")
	}
	if (h.ObserveStart == nil) != (h.ObserveEnd == nil) {
		return nil, errors.New("pipeline: Handlers.ObserveStart and ObserveEnd go together")
	}
	tool := h.ToolCall
	if tool == nil {
		tool = runTool
	}
	p := &Pipeline{
		turn: chain[*TurnContext, *TurnResult]{hook: HookTurn, layers: sorted(b.turn), final: h.Turn, onSkip: h.OnSkip, start: h.ObserveStart, end: h.ObserveEnd,
			text: func(r *TurnResult) string { return r.Response.Content }, mark: func(r *TurnResult, ext string) { r.AnsweredBy = ext }},
		step: chain[*StepContext, *StepResult]{hook: HookStep, layers: sorted(b.step), final: h.Step, onSkip: h.OnSkip, start: h.ObserveStart, end: h.ObserveEnd},
		tool: chain[*ToolCallContext, *ToolResult]{hook: HookToolCall, layers: sorted(b.tool), final: tool, onSkip: h.OnSkip, start: h.ObserveStart, end: h.ObserveEnd},
	}
	return p, nil
}

func sorted[C any, R comparable](ls []layer[C, R]) []layer[C, R] {
	out := slices.Clone(ls)
	slices.SortStableFunc(out, func(a, b layer[C, R]) int { return a.priority - b.priority })
	return out
}

func runTool(ctx context.Context, c *ToolCallContext) (*ToolResult, error) {
	t, ok := c.Tool()
	if !ok || t.Func == nil {
		return &ToolResult{CallID: c.CallID(), Name: c.Name(), Content: fmt.Sprintf("unknown tool %q", c.Name()), IsError: true}, nil
	}
	return t.Func(ctx, c)
}

// Pipeline is the three onion chains of one agent (docs/extensions.md, "The
// pipeline"), immutable and safe for concurrent use.
type Pipeline struct {
	turn chain[*TurnContext, *TurnResult]
	step chain[*StepContext, *StepResult]
	tool chain[*ToolCallContext, *ToolResult]
}

// RunTurn runs the turn chain on t.
func (p *Pipeline) RunTurn(ctx context.Context, t *TurnContext) (*TurnResult, error) {
	t.p = p
	return p.turn.run(ctx, t, &t.cur)
}

// RunStep runs the step chain on s.
func (p *Pipeline) RunStep(ctx context.Context, s *StepContext) (*StepResult, error) {
	s.p = p
	return p.step.run(ctx, s, &s.cur)
}

// RunToolCall runs the toolCall chain on c.
func (p *Pipeline) RunToolCall(ctx context.Context, c *ToolCallContext) (*ToolResult, error) {
	c.p = p
	return p.tool.run(ctx, c, &c.cur)
}

// LayerInfo describes a registered layer, for inspection.
type LayerInfo struct {
	Owner    Owner
	Priority int
}

// Layers returns the layers of hook h, outermost first.
func (p *Pipeline) Layers(h Hook) []LayerInfo {
	var out []LayerInfo
	add := func(o Owner, prio int) { out = append(out, LayerInfo{Owner: o, Priority: prio}) }
	switch h {
	case HookTurn:
		for _, l := range p.turn.layers {
			add(l.owner, l.priority)
		}
	case HookStep:
		for _, l := range p.step.layers {
			add(l.owner, l.priority)
		}
	case HookToolCall:
		for _, l := range p.tool.layers {
			add(l.owner, l.priority)
		}
	}
	return out
}

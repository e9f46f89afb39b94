package eino

import (
	"context"
	"errors"
	"testing"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/runtime"
)

// fakeModel is the scripted model of BenchmarkTurn: when the last input
// message is not a tool result it asks for lookup {"key":"answer"}, and
// when it is, it answers. It keeps no state, so one value serves every
// turn; each call returns a new message, as a real model client would.
type fakeModel struct{}

var _ model.ToolCallingChatModel = fakeModel{}

func (fakeModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if len(in) > 0 && in[len(in)-1].Role == schema.Tool {
		return schema.AssistantMessage(benchturn.Answer, nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{
		ID:       "call_1",
		Type:     "function",
		Function: schema.FunctionCall{Name: "lookup", Arguments: `{"key":"answer"}`},
	}}), nil
}

func (m fakeModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m fakeModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// lookupTool is BenchmarkTurn's lookup: one required string parameter,
// key, and the result "42".
type lookupTool struct{}

var _ tool.InvokableTool = lookupTool{}

var lookupInfo = &schema.ToolInfo{
	Name: "lookup",
	Desc: "Looks a key up.",
	ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
		"key": {Type: schema.String, Required: true},
	}),
}

func (lookupTool) Info(context.Context) (*schema.ToolInfo, error) { return lookupInfo, nil }

func (lookupTool) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return "42", nil
}

// passThrough is a callback handler whose OnStart and OnEnd return ctx
// unchanged: Eino's counterpart of a pass-through middleware.
func passThrough() callbacks.Handler {
	return callbacks.NewHandlerBuilder().
		OnStartFn(func(ctx context.Context, _ *callbacks.RunInfo, _ callbacks.CallbackInput) context.Context { return ctx }).
		OnEndFn(func(ctx context.Context, _ *callbacks.RunInfo, _ callbacks.CallbackOutput) context.Context {
			return ctx
		}).
		Build()
}

// newAgent is the ReAct agent of fakeModel and lookupTool, its graph
// compiled.
func newAgent(tb testing.TB) *react.Agent {
	tb.Helper()
	ag, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: fakeModel{},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{lookupTool{}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ag
}

// BenchmarkEinoReAct runs BenchmarkTurn/memory's turn through Eino's
// ReAct agent: "What is the answer?", a model call that asks for lookup,
// the tool call, a model call that answers. The agent (its graph compiled
// once) is built outside the timer; callbacks=3 passes three pass-through
// handlers to every Generate call, callbacks=0 none.
func BenchmarkEinoReAct(b *testing.B) {
	ctx := context.Background()
	ag := newAgent(b)
	in := []*schema.Message{schema.UserMessage(benchturn.Question)}
	for _, bc := range []struct {
		name string
		opts []agent.AgentOption
	}{
		{"callbacks=0", nil},
		{"callbacks=3", []agent.AgentOption{agent.WithComposeOptions(compose.WithCallbacks(passThrough(), passThrough(), passThrough()))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := ag.Generate(ctx, in, bc.opts...)
				if err != nil {
					b.Fatal(err)
				}
				if out.Content != benchturn.Answer {
					b.Fatalf("answer = %q, want %q", out.Content, benchturn.Answer)
				}
			}
		})
	}
}

// BenchmarkGanglionTurn is Ganglion's BenchmarkTurn/memory (package
// runtime), in this process, so that one run compares the two: the same
// turn through three pass-through extensions, the history appended and
// committed to the in-memory store.
func BenchmarkGanglionTurn(b *testing.B) {
	benchturn.Run(b, func() *runtime.Runtime { return benchturn.New(b, runtime.WithMemoryStore()) }, nil)
}

// BenchmarkPlainLoop is the floor: the same turn as a plain Go loop over
// the same model and tool, appending every message to a slice.
func BenchmarkPlainLoop(b *testing.B) {
	ctx := context.Background()
	var m model.BaseChatModel = fakeModel{}
	tools := map[string]tool.InvokableTool{"lookup": lookupTool{}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := plainTurn(ctx, m, tools, benchturn.Question)
		if err != nil {
			b.Fatal(err)
		}
		if out.Content != benchturn.Answer {
			b.Fatalf("answer = %q, want %q", out.Content, benchturn.Answer)
		}
	}
}

// plainTurn calls m, runs the tools it asks for, and calls it again until
// it answers with no tool calls.
func plainTurn(ctx context.Context, m model.BaseChatModel, tools map[string]tool.InvokableTool, q string) (*schema.Message, error) {
	msgs := []*schema.Message{schema.UserMessage(q)}
	for range 10 {
		out, err := m.Generate(ctx, msgs)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, out)
		if len(out.ToolCalls) == 0 {
			return out, nil
		}
		for _, tc := range out.ToolCalls {
			t, ok := tools[tc.Function.Name]
			if !ok {
				return nil, errors.New("unknown tool " + tc.Function.Name)
			}
			res, err := t.InvokableRun(ctx, tc.Function.Arguments)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, schema.ToolMessage(res, tc.ID, schema.WithToolName(tc.Function.Name)))
		}
	}
	return nil, errors.New("too many steps")
}

// TestCallbacksFire checks that the handlers BenchmarkEinoReAct passes do
// run, once on start and once on end of every component and of the graph,
// so that callbacks=3 measures what it says.
func TestCallbacksFire(t *testing.T) {
	ctx := context.Background()
	ag := newAgent(t)
	starts, ends := map[string]int{}, map[string]int{}
	h := callbacks.NewHandlerBuilder().
		OnStartFn(func(ctx context.Context, info *callbacks.RunInfo, _ callbacks.CallbackInput) context.Context {
			starts[string(info.Component)+"/"+info.Name]++
			return ctx
		}).
		OnEndFn(func(ctx context.Context, info *callbacks.RunInfo, _ callbacks.CallbackOutput) context.Context {
			ends[string(info.Component)+"/"+info.Name]++
			return ctx
		}).
		Build()
	out, err := ag.Generate(ctx, []*schema.Message{schema.UserMessage(benchturn.Question)}, agent.WithComposeOptions(compose.WithCallbacks(h)))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != benchturn.Answer {
		t.Fatalf("answer = %q, want %q", out.Content, benchturn.Answer)
	}
	t.Logf("OnStart: %v", starts)
	t.Logf("OnEnd: %v", ends)
	if starts["ChatModel/ChatModel"] != 2 || ends["ChatModel/ChatModel"] != 2 || starts["Tool/lookup"] != 1 || ends["Tool/lookup"] != 1 {
		t.Errorf("the handler did not see two model calls and one tool call")
	}
}

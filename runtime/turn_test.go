package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// checkResult compares the parts of a turn's result that a test controls.
func checkResult(t *testing.T, got *pipeline.TurnResult, want pipeline.TurnResult) {
	t.Helper()
	if got == nil {
		t.Fatalf("result = nil, want %+v", want)
	}
	type view struct {
		TurnID   string
		Reason   pipeline.FinishReason
		Steps    int
		Response string
		Usage    pipeline.Usage
	}
	g := view{got.TurnID, got.FinishReason, got.Steps, "", got.Usage}
	w := view{want.TurnID, want.FinishReason, want.Steps, "", want.Usage}
	if got.Response.Role != "" {
		g.Response = describe(got.Response)
	}
	if want.Response.Role != "" {
		w.Response = describe(want.Response)
	}
	if g != w {
		t.Errorf("result:\n got %+v\nwant %+v", g, w)
	}
}

func assistant(content string) pipeline.Message {
	return pipeline.Message{Role: pipeline.RoleAssistant, Content: content}
}

func TestTurn(t *testing.T) {
	tests := []struct {
		name    string
		agent   string // YAML lines of agent a, after its name
		script  string // YAML steps of agent a's turn 1
		want    pipeline.TurnResult
		wantErr string
		history []string
		calls   []string // what the model saw, one line a call
	}{
		{
			name: "text answer",
			script: `
          - text: "Hello, you."
            usage: {input_tokens: 3, output_tokens: 2}`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 1, Response: assistant("Hello, you."), Usage: pipeline.Usage{InputTokens: 3, OutputTokens: 2}},
			history: []string{"user: hi", "assistant: Hello, you."},
			calls:   []string{"turn-1/1 [echo]: user: hi"},
		},
		{
			name: "text in chunks, with reasoning",
			script: `
          - reasoning: "They greet me."
            text: "Hello there, my friend."`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 1, Response: pipeline.Message{Role: pipeline.RoleAssistant, Reasoning: "They greet me.", Content: "Hello there, my friend."}},
			history: []string{"user: hi", "assistant: [reasoning: They greet me.] Hello there, my friend."},
			calls:   []string{"turn-1/1 [echo]: user: hi"},
		},
		{
			name: "tool round trip",
			script: `
          - text: "Let me check."
            tool_calls: [{name: echo, id: c1, args: {text: ping}}]
            usage: {input_tokens: 5, output_tokens: 4}
          - text: "It said {{ .LastMessage }}."
            usage: {input_tokens: 9, output_tokens: 3}`,
			want: pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("It said echo: ping."), Usage: pipeline.Usage{InputTokens: 14, OutputTokens: 7}},
			history: []string{
				"user: hi",
				`assistant: Let me check. +call(c1 echo {"text":"ping"})`,
				"tool(c1 echo): echo: ping",
				"assistant: It said echo: ping.",
			},
			calls: []string{
				"turn-1/1 [echo]: user: hi",
				`turn-1/2 [echo]: user: hi | assistant: Let me check. +call(c1 echo {"text":"ping"}) | tool(c1 echo): echo: ping`,
			},
		},
		{
			name: "tool calls without ids get the script's default ids",
			script: `
          - tool_calls: [{name: echo, args: {text: one}}, {name: echo, args: {text: two}}]
          - text: "ok"`,
			want: pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("ok")},
			history: []string{
				"user: hi",
				`assistant: +call(call_1_1_1 echo {"text":"one"}) +call(call_1_1_2 echo {"text":"two"})`,
				"tool(call_1_1_1 echo): echo: one",
				"tool(call_1_1_2 echo): echo: two",
				"assistant: ok",
			},
			calls: []string{
				"turn-1/1 [echo]: user: hi",
				`turn-1/2 [echo]: user: hi | assistant: +call(call_1_1_1 echo {"text":"one"}) +call(call_1_1_2 echo {"text":"two"}) | tool(call_1_1_1 echo): echo: one | tool(call_1_1_2 echo): echo: two`,
			},
		},
		{
			name:  "max steps",
			agent: "max_steps: 2",
			script: `
          - tool_calls: [{name: echo, id: c1, args: {text: one}}]
          - tool_calls: [{name: echo, id: c2, args: {text: two}}]
          - text: "never reached"`,
			want: pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishMaxSteps, Steps: 2,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{{ID: "c2", Name: "echo", Arguments: json.RawMessage(`{"text":"two"}`)}}}},
			history: []string{
				"user: hi",
				`assistant: +call(c1 echo {"text":"one"})`,
				"tool(c1 echo): echo: one",
				`assistant: +call(c2 echo {"text":"two"})`,
				"tool(c2 echo): echo: two",
			},
			calls: []string{
				"turn-1/1 [echo]: user: hi",
				`turn-1/2 [echo]: user: hi | assistant: +call(c1 echo {"text":"one"}) | tool(c1 echo): echo: one`,
			},
		},
		{
			name: "model error",
			script: `
          - text: "Partial"
            error: "provider down"`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishError},
			wantErr: `agent "a" instance "i" turn-1: model: provider down`,
			history: []string{"user: hi"},
			calls:   []string{"turn-1/1 [echo]: user: hi"},
		},
		{
			name: "model has no response for step 2",
			script: `
          - tool_calls: [{name: echo, id: c1, args: {text: one}}]`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishError, Steps: 1},
			wantErr: `agent "a" instance "i" turn-1: model: scripted model: agent "a" turn 1 has no step 2 in script.yaml (1 step)`,
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"one"})`, "tool(c1 echo): echo: one"},
			calls: []string{
				"turn-1/1 [echo]: user: hi",
				`turn-1/2 [echo]: user: hi | assistant: +call(c1 echo {"text":"one"}) | tool(c1 echo): echo: one`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `
agents:
  - name: a
    system: Be brief.
    tools: [echo]
    `+tt.agent+"\n", `
chunk_size: 4
agents:
  a:
    turns:
      - steps:`+tt.script+"\n", runtime.WithTool(echoTool()))
			res, err := h.send(context.Background(), "a", "i", "hi")
			checkErr(t, err, tt.wantErr)
			checkResult(t, res, tt.want)
			checkLines(t, "history", h.history("a", "i"), tt.history)
			checkLines(t, "model calls", h.rec.calls(), tt.calls)
			for _, r := range h.rec.requests() {
				if r.Agent != "a" || r.Instance != "i" || r.Turn != 1 || r.System != "Be brief." {
					t.Errorf("request: agent %q instance %q turn %d system %q", r.Agent, r.Instance, r.Turn, r.System)
				}
			}
		})
	}
}

// TestParallelToolCalls: the calls of one step run at once (each waits for
// the other inside the tool) and their results follow the calls' order, not
// the order they finished in.
// TestRequestInputKind: each model call says what started its turn: a
// user's message, an agent's request, the delegation report, the resume
// after a pause; a scripted model picks its entries by it.
func TestRequestInputKind(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: coder
`, `
agents:
  lead:
    turns:
      - kind: delegation_report
        steps:
          - text: |
              [USER_QUESTION]
              category: confirmation
              question: Ship it?
              options: [yes, no]
              required: true
              [/USER_QUESTION]
      - kind: resume
        steps: [{text: "{{ .Kind }}: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
        - text: "Delegated."
  coder:
    turns:
      - kind: agent_request
        steps: [{text: "{{ .Kind }}: parser written"}]
`)
	ctx := context.Background()
	res, err := h.rt.Send(ctx, "lead", "k", runtime.UserMessage("build a parser"))
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send: %v, %+v", err, res)
	}
	if err := h.rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("Pending: %v, %+v; want the report turn's question\ncalls:\n%s", err, items, strings.Join(h.rec.calls(), "\n"))
	}
	res, err = h.rt.Answer(ctx, items[0].ID, "yes")
	if err != nil {
		t.Fatal(err)
	}
	if want := `resume: Answer to your question "Ship it?": yes`; res.Response.Content != want {
		t.Errorf("the resume answered %q, want %q", res.Response.Content, want)
	}
	var got []string
	for _, r := range h.rec.requests() {
		got = append(got, fmt.Sprintf("%s %s/%d %s", r.Agent, r.TurnID, r.Step, r.Kind))
	}
	want := []string{
		"lead turn-1/1 user_message", "lead turn-1/2 user_message",
		"coder turn-1/1 agent_request",
		"lead turn-2/1 delegation_report",
		"lead turn-3/1 resume",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("model calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParallelToolCalls(t *testing.T) {
	checkGoroutineLeaks(t)
	b := newBarrier(2)
	secondFinished := make(chan struct{}) // closed on c2's tool.finished event
	meet := funcTool("meet", func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		if err := b.wait(ctx); err != nil {
			return nil, err
		}
		if c.CallID() == "c2" {
			return &pipeline.ToolResult{Content: "second"}, nil
		}
		select { // the first call finishes last
		case <-secondFinished:
			return &pipeline.ToolResult{Content: "first"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	h := newHarness(t, `
agents:
  - name: a
    tools: [meet]
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: meet, id: c1}, {name: meet, id: c2}]
          - text: "both met"
`, runtime.WithTool(meet))
	var finished tracer
	defer h.rt.Events().Subscribe(events.ToolFinished, func(ev events.Event) {
		id := ev.Data.(events.ToolFinishedData).CallID
		finished.add("%v", id)
		if id == "c2" {
			close(secondFinished)
		}
	})()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.send(ctx, "a", "i", "hi")
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("both met")})
	checkLines(t, "tools finished", finished.get(), []string{"c2", "c1"})
	checkLines(t, "history", h.history("a", "i"), []string{
		"user: hi",
		"assistant: +call(c1 meet {}) +call(c2 meet {})",
		"tool(c1 meet): first",
		"tool(c2 meet): second",
		"assistant: both met",
	})
}

// TestCancelTurn cancels a turn while its tool runs: the turn is aborted, the
// call still gets its answer in the history, and the instance goes on.
func TestCancelTurn(t *testing.T) {
	checkGoroutineLeaks(t)
	started := make(chan string, 1)
	h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: wait, id: w1}]
          - text: "not reached"
      - steps:
          - text: "Back again."
`, runtime.WithTool(waitTool("wait", started, nil)))

	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		res *pipeline.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.send(ctx, "a", "i", "hi")
		done <- outcome{res, err}
	}()
	<-started
	cancel()
	o := <-done
	checkErr(t, o.err, `agent "a" instance "i" turn-1: context canceled`)
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) = false")
	}
	checkResult(t, o.res, pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishAborted, Steps: 1})
	cancelled := []string{
		"user: hi",
		"assistant: +call(w1 wait {})",
		`tool!(w1 wait): tool "wait" failed: context canceled`,
	}
	checkLines(t, "history", h.history("a", "i"), cancelled)

	res := h.mustSend("a", "i", "still there?")
	checkResult(t, res, pipeline.TurnResult{TurnID: "turn-2", FinishReason: pipeline.FinishText, Steps: 1, Response: assistant("Back again.")})
	checkLines(t, "model calls", h.rec.calls(), []string{
		"turn-1/1 [wait]: user: hi",
		"turn-2/1 [wait]: " + strings.Join(cancelled, " | ") + " | user: still there?",
	})
}

// TestToolErrors: every way a tool call can fail is a result the model
// reads, and the turn goes on.
func TestToolErrors(t *testing.T) {
	tests := []struct {
		name string
		call string // a tool call of the script, with id c1
		want string // the tool message
	}{
		{name: "schema violation", call: `{name: lookup, id: c1, args: {key: 5}}`,
			want: `tool!(c1 lookup): tool "lookup": arguments do not match the schema: /key: got number, want string`},
		{name: "missing argument", call: `{name: lookup, id: c1}`,
			want: `tool!(c1 lookup): tool "lookup": arguments do not match the schema: (root): missing property 'key'`},
		{name: "malformed JSON", call: `{name: lookup, id: c1, arguments: '{"path": '}`,
			want: `tool!(c1 lookup): tool "lookup": arguments are not valid JSON: unexpected end of JSON input`},
		{name: "malformed JSON, tool without schema", call: `{name: boom, id: c1, arguments: '{"path": '}`,
			want: `tool!(c1 boom): tool "boom": arguments are not valid JSON: unexpected end of JSON input`},
		{name: "not an object", call: `{name: lookup, id: c1, arguments: '["k"]'}`,
			want: `tool!(c1 lookup): tool "lookup": arguments must be a JSON object, got array`},
		{name: "unknown tool", call: `{name: nope, id: c1}`,
			want: `tool!(c1 nope): unknown tool "nope"; the tools offered are: lookup, boom, fails, nothing, read_file`},
		{name: "tool panics", call: `{name: boom, id: c1}`,
			want: `tool!(c1 boom): tool "boom" failed: internal error`},
		{name: "tool returns an error", call: `{name: fails, id: c1}`,
			want: `tool!(c1 fails): tool "fails" failed: disk on fire`},
		{name: "tool returns nothing", call: `{name: nothing, id: c1}`,
			want: `tool!(c1 nothing): tool "nothing" returned no result`},
		{name: "valid call", call: `{name: lookup, id: c1, args: {key: k}}`,
			want: `tool(c1 lookup): value of k`},
		{name: "workspace file", call: `{name: read_file, id: c1, args: {path: notes.txt}}`,
			want: `tool(c1 read_file): inside`},
		{name: "workspace escape", call: `{name: read_file, id: c1, args: {path: ../secret}}`,
			want: `tool!(c1 read_file): path "../secret" escapes the workspace`},
		{name: "workspace escape by symlink", call: `{name: read_file, id: c1, args: {path: link}}`,
			want: `tool!(c1 read_file): path "link" escapes the workspace`},
	}
	lookup := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "lookup", Description: "Looks a key up.", Category: pipeline.CategoryRead,
			Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`)},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			var a struct{ Key string }
			if err := json.Unmarshal(c.Arguments(), &a); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{Content: "value of " + a.Key}, nil
		},
	}
	tools := []runtime.Option{
		runtime.WithTool(lookup),
		runtime.WithTool(funcTool("boom", func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			panic("the tool broke")
		})),
		runtime.WithTool(funcTool("fails", func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return nil, errors.New("disk on fire")
		})),
		runtime.WithTool(funcTool("nothing", func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return nil, nil
		})),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `
agents:
  - name: a
    tools: [lookup, boom, fails, nothing, read_file]
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [`+tt.call+`]
          - text: "ok"
`, tools...)
			ws := h.rt.Workspace()
			if ws != filepath.Join(h.dir, "workspace") {
				t.Fatalf("Workspace() = %q, want the config's default, workspace/ next to it", ws)
			}
			writeFile(t, filepath.Join(h.dir, "secret"), "top secret")
			writeFile(t, filepath.Join(ws, "notes.txt"), "inside")
			if err := os.Symlink("../secret", filepath.Join(ws, "link")); err != nil {
				t.Fatal(err)
			}

			res := h.mustSend("a", "i", "hi")
			checkResult(t, res, pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("ok")})
			hist := h.history("a", "i")
			if len(hist) != 4 || hist[2] != tt.want {
				t.Fatalf("history:\n\t%s\nwant the tool message %q", strings.Join(hist, "\n\t"), tt.want)
			}
			calls := h.rec.calls()
			if len(calls) != 2 || !strings.HasSuffix(calls[1], " | "+tt.want) {
				t.Errorf("the model's second call did not end with the tool message:\n\t%s", strings.Join(calls, "\n\t"))
			}
		})
	}
}

// traceExt is an extension that traces its three middleware kinds.
func traceExt(name string, tr *tracer) extensions.Factory {
	return extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			tr.add("turn %s>", name)
			defer tr.add("<turn %s", name)
			return tc.Next(ctx)
		})
		api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			tr.add("step%d %s>", s.Index(), name)
			defer tr.add("<step%d %s", s.Index(), name)
			return s.Next(ctx)
		})
		api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			tr.add("tool %s>", name)
			defer tr.add("<tool %s", name)
			return c.Next(ctx)
		})
		return nil
	})
}

// nested is the trace of a turn of two steps, the first with one tool call,
// through the extensions outer and inner.
func nested(outer, inner string) []string {
	return strings.Split(strings.NewReplacer("O", outer, "I", inner).Replace(
		"turn O>,turn I>,"+
			"step1 O>,step1 I>,tool O>,tool I>,<tool I,<tool O,<step1 I,<step1 O,"+
			"step2 O>,step2 I>,<step2 I,<step2 O,"+
			"<turn I,<turn O"), ",")
}

func TestMiddlewareOrder(t *testing.T) {
	tests := []struct {
		name string
		exts string
		want []string
	}{
		{name: "config order", exts: `[{name: x}, {name: y}]`, want: nested("x", "y")},
		{name: "config order reversed", exts: `[{name: y}, {name: x}]`, want: nested("y", "x")},
		{name: "lower priority runs outer", exts: `[{name: x, priority: 5}, {name: y}]`, want: nested("y", "x")},
		{name: "negative priority", exts: `[{name: x}, {name: y, priority: -1}]`, want: nested("y", "x")},
		{name: "equal priority keeps config order", exts: `[{name: x, priority: 2}, {name: y, priority: 2}]`, want: nested("x", "y")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr tracer
			h := newHarness(t, `
agents:
  - name: a
    tools: [echo]
    extensions: `+tt.exts+`
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: echo, id: c1, args: {text: x}}]
          - text: "done"
`, runtime.WithTool(echoTool()), runtime.WithExtension("x", traceExt("x", &tr)), runtime.WithExtension("y", traceExt("y", &tr)))
			h.mustSend("a", "i", "hi")
			checkLines(t, "trace", tr.get(), tt.want)
		})
	}
}

// TestMiddlewareEffects: what middleware does to a turn, seen in the history
// and in what the model was shown.
func TestMiddlewareEffects(t *testing.T) {
	tests := []struct {
		name     string
		register func(api *extensions.API)
		steps    string // YAML steps of the script's turn 1
		want     pipeline.TurnResult
		history  []string
		calls    []string
	}{
		{
			name: "turn middleware short-circuits",
			register: func(api *extensions.API) {
				api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					return &pipeline.TurnResult{TurnID: tc.TurnID(), FinishReason: pipeline.FinishText, Response: assistant("Not today.")}, nil
				})
			},
			steps: `[{text: "never said"}]`,
			want:  pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Response: assistant("Not today.")},
			// What the user saw is in the history, the answer as the extension's.
			history: []string{"user: hi", "assistant: Not today."},
		},
		{
			name: "short-circuit without turn ID or finish reason",
			register: func(api *extensions.API) {
				api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					return &pipeline.TurnResult{Response: assistant("Filled in.")}, nil
				})
			},
			steps:   `[{text: "never said"}]`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Response: assistant("Filled in.")},
			history: []string{"user: hi", "assistant: Filled in."},
		},
		{
			name: "turn middleware adds a system message",
			register: func(api *extensions.API) {
				api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					err := tc.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{
						Role: pipeline.RoleSystem, Content: "Answer in French.", Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: api.Name},
					}})
					if err != nil {
						return nil, err
					}
					return tc.Next(ctx)
				})
			},
			steps:   `[{text: "Bonjour."}]`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 1, Response: assistant("Bonjour.")},
			history: []string{"system: Answer in French.", "user: hi", "assistant: Bonjour."},
			calls:   []string{"turn-1/1 [echo,lookup]: system: Answer in French. | user: hi"},
		},
		{
			name: "step middleware hides a tool for one step",
			register: func(api *extensions.API) {
				api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
					if s.Index() == 1 {
						s.Tools().Remove("echo")
					}
					return s.Next(ctx)
				})
			},
			steps: `
          - tool_calls: [{name: echo, id: c1, args: {text: one}}]
          - tool_calls: [{name: echo, id: c2, args: {text: two}}]
          - text: "done"`,
			want: pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 3, Response: assistant("done")},
			history: []string{
				"user: hi",
				`assistant: +call(c1 echo {"text":"one"})`,
				`tool!(c1 echo): unknown tool "echo"; the tools offered are: lookup`,
				`assistant: +call(c2 echo {"text":"two"})`,
				"tool(c2 echo): echo: two",
				"assistant: done",
			},
			calls: []string{
				"turn-1/1 [lookup]: user: hi",
				`turn-1/2 [echo,lookup]: user: hi | assistant: +call(c1 echo {"text":"one"}) | tool!(c1 echo): unknown tool "echo"; the tools offered are: lookup`,
				`turn-1/3 [echo,lookup]: user: hi | assistant: +call(c1 echo {"text":"one"}) | tool!(c1 echo): unknown tool "echo"; the tools offered are: lookup | assistant: +call(c2 echo {"text":"two"}) | tool(c2 echo): echo: two`,
			},
		},
		{
			name: "step middleware stops the turn",
			register: func(api *extensions.API) {
				api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
					sr, err := s.Next(ctx)
					if err == nil {
						sr.Stop = pipeline.FinishPaused
					}
					return sr, err
				})
			},
			steps: `
          - tool_calls: [{name: echo, id: c1, args: {text: one}}]
          - text: "not reached"`,
			want: pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishPaused, Steps: 1,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"one"}`)}}}},
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"one"})`, "tool(c1 echo): echo: one"},
			calls:   []string{"turn-1/1 [echo,lookup]: user: hi"},
		},
		{
			name: "toolCall middleware replaces the result",
			register: func(api *extensions.API) {
				api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
					r, err := c.Next(ctx)
					if err != nil {
						return nil, err
					}
					return &pipeline.ToolResult{Content: fmt.Sprintf("[%d bytes withheld]", len(r.Content))}, nil
				})
			},
			steps: `
          - tool_calls: [{name: echo, id: c1, args: {text: secret}}]
          - text: "done"`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("done")},
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"secret"})`, "tool(c1 echo): [12 bytes withheld]", "assistant: done"},
			calls: []string{
				"turn-1/1 [echo,lookup]: user: hi",
				`turn-1/2 [echo,lookup]: user: hi | assistant: +call(c1 echo {"text":"secret"}) | tool(c1 echo): [12 bytes withheld]`,
			},
		},
		{
			name: "toolCall middleware rewrites the arguments",
			register: func(api *extensions.API) {
				api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
					c.SetArguments(json.RawMessage(`{"text":"rewritten"}`))
					return c.Next(ctx)
				})
			},
			steps: `
          - tool_calls: [{name: echo, id: c1, args: {text: original}}]
          - text: "done"`,
			want:    pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("done")},
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"original"})`, "tool(c1 echo): echo: rewritten", "assistant: done"},
			calls: []string{
				"turn-1/1 [echo,lookup]: user: hi",
				`turn-1/2 [echo,lookup]: user: hi | assistant: +call(c1 echo {"text":"original"}) | tool(c1 echo): echo: rewritten`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `
agents:
  - name: a
    tools: [echo, lookup]
    extensions: [{name: mw}]
`, `
agents:
  a:
    turns:
      - steps: `+tt.steps+"\n",
				runtime.WithTool(echoTool()),
				runtime.WithTool(funcTool("lookup", func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
					return &pipeline.ToolResult{Content: "found"}, nil
				})),
				runtime.WithExtension("mw", extension(func(api *extensions.API) error { tt.register(api); return nil })))
			res := h.mustSend("a", "i", "hi")
			checkResult(t, res, tt.want)
			checkLines(t, "history", h.history("a", "i"), tt.history)
			checkLines(t, "model calls", h.rec.calls(), tt.calls)
		})
	}
}

// TestMiddlewareFailures: a failing layer fails the turn and is named in the
// error, unless its extension is fail_open: then it is skipped and reported.
func TestMiddlewareFailures(t *testing.T) {
	boom := errors.New("boom")
	fail := func(context.Context) error { return boom }
	kaboom := func(context.Context) error { panic("kaboom") }
	// Each case's layer runs act before or after next: act returns the
	// layer's error, or panics.
	type layer struct {
		hook  pipeline.Hook
		after bool // act after next instead of before
		act   func(context.Context) error
	}
	full := []string{"user: hi", `assistant: +call(c1 echo {"text":"x"})`, "tool(c1 echo): echo: x", "assistant: done"}
	tests := []struct {
		name    string
		onError string
		layer   layer
		custom  func(api *extensions.API) // instead of layer
		wantErr string
		history []string
		skipped []string
	}{
		{name: "turn error", layer: layer{hook: pipeline.HookTurn, act: fail},
			wantErr: `extension "bad": turn middleware: boom`},
		{name: "turn error after next", layer: layer{hook: pipeline.HookTurn, after: true, act: fail},
			wantErr: `extension "bad": turn middleware: boom`, history: full},
		{name: "step error", layer: layer{hook: pipeline.HookStep, act: fail},
			wantErr: `extension "bad": step middleware: boom`, history: []string{"user: hi"}},
		{name: "toolCall error", layer: layer{hook: pipeline.HookToolCall, act: fail},
			wantErr: `extension "bad": toolCall middleware: boom`,
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"x"})`, `tool!(c1 echo): tool call failed: extension "bad": toolCall middleware: boom`}},
		{name: "turn panic", layer: layer{hook: pipeline.HookTurn, act: kaboom},
			wantErr: `extension "bad": turn middleware: panic: kaboom`},
		{name: "step panic", layer: layer{hook: pipeline.HookStep, act: kaboom},
			wantErr: `extension "bad": step middleware: panic: kaboom`, history: []string{"user: hi"}},
		{name: "step panic after next", layer: layer{hook: pipeline.HookStep, after: true, act: kaboom},
			wantErr: `extension "bad": step middleware: panic: kaboom`, history: full[:3]},
		{name: "toolCall panic", layer: layer{hook: pipeline.HookToolCall, act: kaboom},
			wantErr: `extension "bad": toolCall middleware: panic: kaboom`,
			history: []string{"user: hi", `assistant: +call(c1 echo {"text":"x"})`, `tool!(c1 echo): tool call failed: extension "bad": toolCall middleware: panic: kaboom`}},
		{name: "next called twice", custom: func(api *extensions.API) {
			api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
				if _, err := s.Next(ctx); err != nil {
					return nil, err
				}
				return s.Next(ctx)
			})
		}, wantErr: `extension "bad": step middleware: next called more than once`, history: full[:3]},
		{name: "no result", custom: func(api *extensions.API) {
			api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, nil })
		}, wantErr: `extension "bad": turn middleware: returned no result and no error`},

		{name: "fail_open turn error", onError: "fail_open", layer: layer{hook: pipeline.HookTurn, act: fail},
			history: full, skipped: []string{`turn: extension "bad": turn middleware: boom`}},
		{name: "fail_open turn error after next", onError: "fail_open", layer: layer{hook: pipeline.HookTurn, after: true, act: fail},
			history: full, skipped: []string{`turn: extension "bad": turn middleware: boom`}},
		{name: "fail_open step panic", onError: "fail_open", layer: layer{hook: pipeline.HookStep, act: kaboom},
			history: full, skipped: []string{
				`step: extension "bad": step middleware: panic: kaboom`,
				`step: extension "bad": step middleware: panic: kaboom`,
			}},
		{name: "fail_open toolCall panic after next", onError: "fail_open", layer: layer{hook: pipeline.HookToolCall, after: true, act: kaboom},
			history: full, skipped: []string{`toolCall: extension "bad": toolCall middleware: panic: kaboom`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			register := tt.custom
			if register == nil {
				l := tt.layer
				register = func(api *extensions.API) {
					switch l.hook {
					case pipeline.HookTurn:
						api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
							return around(ctx, l.after, l.act, tc.Next)
						})
					case pipeline.HookStep:
						api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
							return around(ctx, l.after, l.act, s.Next)
						})
					case pipeline.HookToolCall:
						api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
							return around(ctx, l.after, l.act, c.Next)
						})
					}
				}
			}
			onError := ""
			if tt.onError != "" {
				onError = ", on_error: " + tt.onError
			}
			h := newHarness(t, `
agents:
  - name: a
    tools: [echo]
    extensions: [{name: fine}, {name: bad`+onError+`}]
`, `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: echo, id: c1, args: {text: x}}]
          - text: "done"
`, runtime.WithTool(echoTool()),
				runtime.WithExtension("fine", traceExt("fine", &tracer{})),
				runtime.WithExtension("bad", extension(func(api *extensions.API) error { register(api); return nil })))
			var skipped tracer
			defer h.rt.Events().Subscribe(events.LayerSkipped, func(ev events.Event) {
				d := evData(ev)
				if ev.Agent != "a" || d["extension"] != "bad" {
					t.Errorf("event %s: agent %q data %v", ev.Topic, ev.Agent, d)
				}
				if ev.Instance != "i" || ev.TurnID == "" {
					t.Errorf("middleware.skipped event without its instance and turn: %+v", ev)
				}
				skipped.add("%v: %v", d["hook"], d["error"])
			})()

			res, err := h.send(context.Background(), "a", "i", "hi")
			if tt.wantErr == "" {
				checkErr(t, err, "")
				checkResult(t, res, pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("done")})
			} else {
				checkErr(t, err, `agent "a" instance "i" turn-1: `+tt.wantErr)
				var me *pipeline.MiddlewareError
				if !errors.As(err, &me) || me.Extension != "bad" {
					t.Errorf("errors.As(err, *MiddlewareError) = %v, %+v; want extension \"bad\"", errors.As(err, &me), me)
				}
				if res == nil || res.FinishReason != pipeline.FinishError || res.TurnID != "turn-1" {
					t.Errorf("result = %+v, want turn-1 finishing with error", res)
				}
			}
			checkLines(t, "history", h.history("a", "i"), tt.history)
			checkLines(t, "middleware.skipped events", skipped.get(), tt.skipped)
		})
	}
}

// TestExtensionState: an extension's state is kept per agent and instance.
func TestExtensionState(t *testing.T) {
	type counter struct {
		Turns int  `json:"turns"`
		Found bool `json:"found"` // whether the turn found earlier state
	}
	var mu sync.Mutex
	var loadErrs []error
	count := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			var c counter
			found, err := api.State.Load(ctx, tc.InstanceKey(), &c)
			if err != nil {
				mu.Lock()
				loadErrs = append(loadErrs, err)
				mu.Unlock()
			}
			c.Turns++
			c.Found = found
			if err := api.State.Save(ctx, tc.InstanceKey(), c); err != nil {
				return nil, err
			}
			return tc.Next(ctx)
		})
		return nil
	})
	h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: count}]
  - name: b
    extensions: [{name: count}]
`, textScript, runtime.WithExtension("count", count))
	for _, s := range []struct{ agent, key string }{{"a", "x"}, {"a", "x"}, {"a", "y"}, {"b", "x"}, {"a", "x"}} {
		h.mustSend(s.agent, s.key, "hi")
	}
	tests := []struct{ agent, key, ext, want string }{
		{"a", "x", "count", `{"turns":3,"found":true}`},
		{"a", "y", "count", `{"turns":1,"found":false}`},
		{"b", "x", "count", `{"turns":1,"found":false}`},
		{"b", "y", "count", ``},
		{"a", "x", "other", ``},
	}
	for _, tt := range tests {
		got, err := h.rt.ExtensionState(context.Background(), tt.agent, tt.key, tt.ext)
		if err != nil || string(got) != tt.want {
			t.Errorf("ExtensionState(%s, %s, %s) = %s, %v; want %s", tt.agent, tt.key, tt.ext, got, err, tt.want)
		}
	}
	if len(loadErrs) > 0 {
		t.Errorf("Load: %v", loadErrs)
	}
}

// TestToolResultAnswersItsCall: a toolCall middleware may replace a result,
// but not make it answer another call: the history must pair every call
// with its own answer, or providers reject the next request.
func TestToolResultAnswersItsCall(t *testing.T) {
	forger := extension(func(api *extensions.API) error {
		api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			r, err := c.Next(ctx)
			if err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{CallID: "forged", Name: "other", Content: "replaced: " + r.Content}, nil
		})
		return nil
	})
	h := newHarness(t, `
agents:
  - name: a
    tools: [echo]
    extensions: [{name: forger}]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: echo, id: c1, args: {text: x}}]
        - text: done
`, runtime.WithTool(echoTool()), runtime.WithExtension("forger", forger))
	h.mustSend("a", "i", "go")
	checkLines(t, "history", h.history("a", "i"), []string{
		"user: go",
		`assistant: +call(c1 echo {"text":"x"})`,
		"tool(c1 echo): replaced: echo: x",
		"assistant: done",
	})
}

// around runs act before next, or after it when after is set, the way each
// case of TestMiddlewareFailures's layers does at every hook.
func around[R any](ctx context.Context, after bool, act func(context.Context) error, next func(context.Context) (*R, error)) (*R, error) {
	if !after {
		if err := act(ctx); err != nil {
			return nil, err
		}
	}
	r, err := next(ctx)
	if err == nil && after {
		err = act(ctx)
	}
	return r, err
}

// TestReservedMetadataFromMiddleware: a middleware, native or WebAssembly,
// cannot set the metadata the runtime reserves through any door it has:
// an agent call's metadata or instance key, a message it appends or
// replaces, the turn's input, a summary. Each is refused with the key and
// the door in the error, and changes nothing; pinning is a middleware's
// to do, and a replacement or a new input that leaves the runtime's marks
// out keeps them.
func TestReservedMetadataFromMiddleware(t *testing.T) {
	const why = "; name your own keys with a prefix, such as "
	md := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		// turn acts in a's turn middleware before Next; step in its first
		// step middleware before Next, on the window.
		turn func(ctx context.Context, tc *pipeline.TurnContext) error
		step func(ctx context.Context, s *pipeline.StepContext) error
		want string
	}{
		{name: "agent call's metadata", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			_, err := tc.Agents().Request(ctx, "b", "hi", pipeline.AgentCallOptions{Metadata: md("taskId", "task_x", "myapp.id", 1)})
			return err
		}, want: `call agent "b": metadata key "taskId" is reserved by the runtime: the call's metadata may not set it (it names the delegation task a turn works on)` + why + `"myapp.taskId"`},
		{name: "agent send's metadata", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			return tc.Agents().Send(ctx, "b", "hi", pipeline.AgentCallOptions{Metadata: md("chain", []string{})})
		}, want: `call agent "b": metadata key "chain" is reserved by the runtime: the call's metadata may not set it (it lists the callers that wait, for cycle detection and the depth limit)` + why + `"myapp.chain"`},
		{name: "agent call's instance key", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			_, err := tc.Agents().Request(ctx, "b", "hi", pipeline.AgentCallOptions{InstanceKey: "../k"})
			return err
		}, want: `call agent "b": store: invalid instance key "../k": character "/" at offset 2 not allowed (want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")`},
		{name: "appended message", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			return tc.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{Role: pipeline.RoleSystem, Content: "x", Metadata: md("truncated", true)}})
		}, want: `append message: metadata key "truncated" is reserved by the runtime: a middleware's message may not set it (it leaves the message out of what the model sees)` + why + `"myapp.truncated"`},
		{name: "appended message, pinned", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			return tc.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{Role: pipeline.RoleSystem, Content: "x", Metadata: md("pinned", true)}})
		}},
		{name: "replacement", turn: func(ctx context.Context, tc *pipeline.TurnContext) error {
			m := tc.Conversation().At(0)
			m.Metadata = md("condensed_by", "msg-9")
			return tc.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: m})
		}, want: `replace message "msg-0": metadata key "condensed_by" is reserved by the runtime: a middleware's replacement may not set it (it shows a summary in place of the message)` + why + `"myapp.condensed_by"`},
		{name: "replacement that changes a mark", step: func(ctx context.Context, s *pipeline.StepContext) error {
			if err := s.Window().Truncate([]string{"msg-2", "msg-3"}, "test"); err != nil {
				return err
			}
			m := s.Conversation().At(2)
			m.Metadata = md("truncated", false)
			return s.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: m})
		}, want: `replace message "msg-2": metadata key "truncated" is reserved by the runtime: a middleware's replacement may not change it (it leaves the message out of what the model sees)` + why + `"myapp.truncated"`},
		{name: "replacement that leaves a mark out keeps it", step: func(ctx context.Context, s *pipeline.StepContext) error {
			if err := s.Window().Truncate([]string{"msg-2", "msg-3"}, "test"); err != nil {
				return err
			}
			m := s.Conversation().At(2)
			m.Content, m.Metadata = "redacted", md("myapp.redacted", true)
			if err := s.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: m.ID, Message: m}); err != nil {
				return err
			}
			if got := s.Conversation().At(2).Metadata; got["truncated"] != true || got["myapp.redacted"] != true {
				return fmt.Errorf("the replacement's metadata: %v", got)
			}
			return nil
		}},
		{name: "summary", step: func(ctx context.Context, s *pipeline.StepContext) error {
			_, err := s.Window().Condense([]string{"msg-2", "msg-3"}, pipeline.Message{Role: pipeline.RoleUser, Content: "earlier", Metadata: md("awaits", "p_1", "summary", true)})
			return err
		}, want: `condense: metadata key "awaits" is reserved by the runtime: a summary's metadata may not set it (it marks a tool result that waits for a pending item)` + why + `"myapp.awaits"`},
		{name: "summary, pinned", step: func(ctx context.Context, s *pipeline.StepContext) error {
			_, err := s.Window().Condense([]string{"msg-2", "msg-3"}, pipeline.Message{Role: pipeline.RoleUser, Content: "earlier", Metadata: md("pinned", true)})
			return err
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got error
			probe := extension(func(api *extensions.API) error {
				api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
					if tt.turn != nil && tc.Input().Text == "act" {
						got = tt.turn(ctx, tc)
					}
					return tc.Next(ctx)
				})
				api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
					if tt.step != nil && s.Input().Text == "act" && s.Index() == 1 {
						got = tt.step(ctx, s)
					}
					return s.Next(ctx)
				})
				return nil
			})
			h := newHarness(t, "agents:\n  - name: a\n    extensions: [{name: probe}]\n  - name: b\n", textScript, runtime.WithExtension("probe", probe))
			key := fmt.Sprintf("k%d", i)
			h.mustSend("a", key, "before")
			h.mustSend("a", key, "before again")
			before := describeAll(mustHistory(t, h.rt, "a", key))
			h.mustSend("a", key, "act")
			checkErr(t, got, tt.want)
			if tt.want == "" {
				return
			}
			if !errors.Is(got, pipeline.ErrReservedMetadata) && !strings.Contains(tt.want, "invalid instance key") {
				t.Errorf("errors.Is(%v, ErrReservedMetadata) = false", got)
			}
			// What was refused changed nothing: the earlier messages are
			// as they were, and b was not called.
			if after := describeAll(mustHistory(t, h.rt, "a", key)); !slices.Equal(after[:len(before)], before) || len(after) != len(before)+2 {
				t.Errorf("history after a refused change:\n%s", strings.Join(after, "\n"))
			}
			if keys, _ := h.rt.Instances(context.Background(), "b"); len(keys) != 0 {
				t.Errorf("b was called: %v", keys)
			}
		})
	}
}

// TestReservedMetadataOfTheInput: a turn middleware that sets an input of
// its own keeps the runtime's metadata of the input it replaces (the
// caller's, here), and cannot set or change a reserved key: the turn fails,
// naming it, before it stores anything.
func TestReservedMetadataOfTheInput(t *testing.T) {
	rewriter := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			in := tc.Input()
			switch {
			case in.Kind == pipeline.InputAgentRequest:
				tc.SetInput(pipeline.InputEvent{Kind: in.Kind, Text: "rewritten: " + in.Text})
			case in.Text == "resume me":
				tc.SetInput(pipeline.InputEvent{Kind: in.Kind, Text: in.Text, Metadata: map[string]any{"resumes": "turn-1", "myapp.x": 1}})
			case in.Text == "call b":
				if _, err := tc.Agents().Request(ctx, "b", "hello", pipeline.AgentCallOptions{}); err != nil {
					return nil, err
				}
			}
			return tc.Next(ctx)
		})
		return nil
	})
	h := newHarness(t, "agents:\n  - name: a\n    extensions: [{name: rewriter}]\n  - name: b\n    extensions: [{name: rewriter}]\n", textScript,
		runtime.WithExtension("rewriter", rewriter))
	h.mustSend("a", "k", "call b")
	hist := mustHistory(t, h.rt, "b", "k")
	if len(hist) == 0 || hist[0].Content != "rewritten: hello" || hist[0].Metadata["callerAgent"] != "a" || hist[0].Metadata["callSource"] == nil {
		t.Fatalf("b's input: %+v", hist)
	}
	res, err := h.send(context.Background(), "a", "k", "resume me")
	checkErr(t, err, `agent "a" instance "k" turn-2: metadata key "resumes" is reserved by the runtime: a middleware's change of the turn's input may not set it (it names the paused turn a resume continues); name your own keys with a prefix, such as "myapp.resumes"`)
	if !errors.Is(err, pipeline.ErrReservedMetadata) || res.FinishReason != pipeline.FinishError {
		t.Errorf("result %+v, error %v", res, err)
	}
	if n := len(mustHistory(t, h.rt, "a", "k")); n != 2 {
		t.Errorf("a's history has %d messages after the refused input, want 2", n)
	}
}

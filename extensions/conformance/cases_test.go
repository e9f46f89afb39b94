package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// The cases. Each input's first word selects a behaviour of the twin (see
// the package doc); the scripted model answers by matching the input.
var cases = []*testCase{
	{
		name: "onion order",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{
			{name: "first", config: "{tag: first, trace: true}"},
			{name: "second", config: "{tag: second, trace: true}"},
			{name: "outer", priority: -1, config: "{tag: outer, trace: true}"},
		}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: probe, id: c1, args: {n: 1}}]
        - text: "model says hi"
`,
		run: func(h *harness) { h.send("a", "k", "go") },
		check: func(t *testing.T, o *observation) {
			eq(t, "response", o.Turns[0].Result.Response.Content, "outer(first(second(model says hi)))")
			var want []string
			order := func(hook, at string, tags ...string) {
				for _, tag := range tags {
					want = append(want, fmt.Sprintf(`twin.order a/k %s {"at":%q,"hook":%q,"tag":%q}`, tag, at, hook, tag))
				}
			}
			in, out := []string{"outer", "first", "second"}, []string{"second", "first", "outer"}
			order("turn", "enter", in...)
			order("step", "enter", in...)
			order("tool_call", "enter", in...)
			order("tool_call", "leave", out...)
			order("step", "leave", out...)
			order("step", "enter", in...)
			order("step", "leave", out...)
			for _, tag := range out {
				order("turn", "leave", tag)
				want = append(want, fmt.Sprintf(`twin.turn a/k %s {"tag":%q,"turns":1}`, tag, tag))
			}
			eqLines(t, "events", o.Events, want)
		},
	},
	{
		name:   "short-circuit",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: the model answers}]}}}",
		run: func(h *harness) {
			h.send("a", "k", "stop right there")
			h.history("a", "k")
			h.state("a", "k", "twin")
		},
		check: func(t *testing.T, o *observation) {
			r := o.Turns[0]
			eq(t, "error", r.Err, "")
			eq(t, "finish reason", r.Result.FinishReason, pipeline.FinishText)
			eq(t, "answered by", r.Result.AnsweredBy, "twin")
			// The history holds what the user saw: the input, and the
			// extension's answer, which the result returns as stored.
			h := o.History["a/k"]
			eq(t, "history", len(h), 2)
			eq(t, "input", h[0].Content, "stop right there")
			eq(t, "response", r.Result.Response, h[len(h)-1])
			eq(t, "answer", h[len(h)-1].Content, "t answered: stop right there")
			eq(t, "answer's source", h[len(h)-1].Source, pipeline.Source{Type: pipeline.SourceExtension, Extension: "twin"})
			eq(t, "model calls", len(o.Calls), 0)
			eq(t, "state", o.State["a/k/twin"], `{"turns":1}`)
		},
	},
	{
		name:   "message edits",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - text: "model read: {{ .Input }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "hello")
			h.send("a", "k", "edit this")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "response", o.Turns[1].Result.Response.Content, "model read: edited: edit this")
			// The turn middleware appended the note before the input
			// joined; the step middleware replaced the input and removed
			// the first message before the model saw the conversation.
			eqLines(t, "what the model saw", call(t, o, 1).Messages, []string{
				"assistant: model read: hello",
				"system: t: note before the input",
				"user: edited: edit this",
			})
			eqLines(t, "history", summarize(o.History["a/k"]), []string{
				"msg-1 assistant model: model read: hello",
				"msg-2 system extension/twin: t: note before the input",
				"msg-3 user user: edited: edit this",
				"msg-4 assistant model: model read: edited: edit this",
			})
		},
	},
	{
		name:   "input rewritten",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - text: "model read: {{ .Input }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "rewrite me")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "response", o.Turns[0].Result.Response.Content, "model read: rewritten: rewrite me")
			eqLines(t, "history", summarize(o.History["a/k"]), []string{
				"msg-0 user user: rewritten: rewrite me",
				"msg-1 assistant model: model read: rewritten: rewrite me",
			})
		},
	},
	{
		name:   "step result changed",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    turns:
      - match: "^more"
        steps:
          - text: "first"
          - text: "second"
      - match: "^halt"
        steps:
          - tool_calls: [{name: probe, id: c1}]
          - text: "never"
`,
		run: func(h *harness) {
			h.send("a", "more", "more please")
			h.send("a", "halt", "halt now")
			h.history("a", "halt")
		},
		check: func(t *testing.T, o *observation) {
			more, halt := o.Turns[0].Result, o.Turns[1].Result
			eq(t, "continued: response", more.Response.Content, "second")
			eq(t, "continued: steps", more.Steps, 2)
			eq(t, "stopped: finish reason", halt.FinishReason, pipeline.FinishMaxSteps)
			eq(t, "stopped: steps", halt.Steps, 1)
			eq(t, "stopped: tool result", toolMessage(t, o.History["a/halt"]).Content, "probe got {}")
			eq(t, "model calls", len(o.Calls), 3)
		},
	},
	{
		name:   "tool hidden from the catalog",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t, echo: true, hide: [probe]}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: probe, id: c1}]
        - text: "{{ .LastMessage }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "plain")
			h.send("a", "h", "hide probe")
			h.history("a", "h")
		},
		check: func(t *testing.T, o *observation) {
			eqLines(t, "tools offered without hiding", call(t, o, 0).Tools, []string{"probe", "twin_echo"})
			eqLines(t, "tools offered with probe hidden", call(t, o, 2).Tools, []string{"twin_echo"})
			eq(t, "plain response", o.Turns[0].Result.Response.Content, "probe got {}")
			tool := toolMessage(t, o.History["a/h"])
			eq(t, "result of the hidden tool", tool.Content, `unknown tool "probe"; the tools offered are: twin_echo`)
			eq(t, "is_error", tool.IsError, true)
		},
	},
	{
		name:   "tool arguments changed",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: probe, id: c1, args: {mode: args}}]
        - text: "{{ .LastMessage }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "go")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "response", o.Turns[0].Result.Response.Content, `probe got {"text":"changed by t"}`)
			var stored []string
			for _, m := range o.History["a/k"] {
				for _, c := range m.ToolCalls {
					stored = append(stored, string(c.Arguments))
				}
			}
			eqLines(t, "the model's calls as stored", stored, []string{`{"mode":"args"}`})
		},
	},
	{
		name:   "tool result replaced",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: probe, id: c1, args: {mode: replace}}]
        - text: "{{ .LastMessage }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "go")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			tool := toolMessage(t, o.History["a/k"])
			eq(t, "tool message", tool.Content, `t replaced: probe got {"mode":"replace"}`)
			eq(t, "is_error", tool.IsError, false)
			eq(t, "response", o.Turns[0].Result.Response.Content, tool.Content)
		},
	},
	{
		name:   "tool provided by the extension",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t, echo: true}"}}}},
		script: `
agents:
  a:
    turns:
      - match: "^echo"
        steps:
          - tool_calls: [{name: twin_echo, id: c1, args: {text: hi}}]
          - text: "{{ .LastMessage }}"
      - match: "^schema"
        steps:
          - tool_calls: [{name: twin_echo, id: c1, args: {words: 3}}]
          - text: "{{ .LastMessage }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "echo")
			h.send("a", "s", "schema")
			h.history("a", "s")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "response", o.Turns[0].Result.Response.Content, "t echoes hi")
			eqLines(t, "tools offered", call(t, o, 0).Tools, []string{"twin_echo"})
			tool := toolMessage(t, o.History["a/s"])
			eq(t, "is_error on a schema violation", tool.IsError, true)
			if !strings.HasPrefix(tool.Content, `tool "twin_echo": `) || !strings.Contains(tool.Content, "text") {
				t.Errorf("schema violation: %q, want the host's check naming the tool and the missing property", tool.Content)
			}
		},
	},
	{
		name:   "tool error result",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t, echo: true}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: twin_echo, id: c1, args: {text: ""}}]
        - text: "{{ .LastMessage }}"
`,
		run: func(h *harness) {
			h.send("a", "k", "go")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			tool := toolMessage(t, o.History["a/k"])
			eq(t, "is_error", tool.IsError, true)
			eq(t, "tool message", tool.Content, `tool "twin_echo" failed: twin_echo: the text is empty`)
		},
	},
	{
		name:   "state persists across a restart",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: ok}]}}}",
		disk:   true,
		run: func(h *harness) {
			h.send("a", "k", "one")
			h.send("a", "k", "two")
			h.state("a", "k", "twin")
			h.restart()
			h.send("a", "k", "three")
			h.send("a", "other", "one")
			h.state("a", "k", "twin")
			h.history("a", "k")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "state", o.State["a/k/twin"], `{"turns":3}`)
			eqLines(t, "events", o.Events, []string{
				`twin.turn a/k twin {"tag":"t","turns":1}`,
				`twin.turn a/k twin {"tag":"t","turns":2}`,
				`twin.turn a/k twin {"tag":"t","turns":3}`,
				`twin.turn a/other twin {"tag":"t","turns":1}`,
			})
			eq(t, "history", len(o.History["a/k"]), 6)
			eq(t, "turn ID after the restart", o.Turns[2].Result.TurnID, "turn-3")
		},
	},
	{
		name:   "pending items",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    turns:
      - kind: resume
        steps:
          - text: "resumed with {{ .Input }} / {{ .ToolResult }}"
      - match: "^ask"
        steps:
          - text: "Which one, human?"
      - match: "^call"
        steps:
          - tool_calls: [{name: probe, id: c1, args: {mode: ask}}]
          - text: "never reached"
`,
		disk: true,
		run: func(h *harness) {
			h.send("a", "q", "ask me")
			h.act("a", "q", "answer", " ")
			h.act("a", "q", "skip", "")
			h.restart()
			h.act("a", "q", "answer", "blue")
			h.send("a", "yes", "call it")
			h.restart()
			h.act("a", "yes", "answer", "maybe")
			h.act("a", "yes", "answer", "yes")
			h.send("a", "no", "call it")
			h.act("a", "no", "answer", "no")
			for _, k := range []string{"q", "yes", "no"} {
				h.items("a", k)
				h.history("a", k)
			}
		},
		check: func(t *testing.T, o *observation) {
			if len(o.Turns) != 9 {
				t.Fatalf("turns = %+v", o.Turns)
			}
			for _, i := range []int{0, 4, 7} {
				eq(t, fmt.Sprintf("turn %d (%s) pauses", i, o.Turns[i].Input), o.Turns[i].Result.FinishReason, pipeline.FinishPaused)
			}
			for i, want := range map[int]string{
				1: `pending item "ID": invalid action: t: the answer is empty`,
				2: `pending item "ID": invalid action: t: a question takes an answer`,
				5: `pending item "ID": invalid action: t: answer yes or no, not "maybe"`,
			} {
				eq(t, fmt.Sprintf("turn %d (%s) error", i, o.Turns[i].Input), o.Turns[i].Err, want)
				eq(t, fmt.Sprintf("turn %d (%s) matches", i, o.Turns[i].Input), strings.Join(o.Turns[i].Matches, ","), "ErrInvalidAction")
			}
			for i, want := range map[int]string{
				3: "resumed with t got: blue / ",
				6: `resumed with t: approved / probe got {"mode":"ask"}`,
				8: "resumed with t: denied / t: the call was denied",
			} {
				eq(t, fmt.Sprintf("turn %d (%s)", i, o.Turns[i].Input), o.Turns[i].Result.Response.Content, want)
			}
			eq(t, "question", o.Items["a/q"], []itemObs{{Kind: "twin_question", Extension: "twin", TurnID: "turn-1", Status: "answered",
				Answer: "blue", Message: "t got: blue", Step: 1, Request: `{"tag":"t","question":"Which one?"}`, Required: true}})
			eq(t, "approved call", o.Items["a/yes"], []itemObs{{Kind: "twin_ask", Extension: "twin", TurnID: "turn-1", CallID: "c1", Status: "answered",
				Answer: "yes", Message: "t: approved", Step: 1, Request: `{"tag":"t","tool":"probe"}`, Required: true}})
			eq(t, "denied call", o.Items["a/no"], []itemObs{{Kind: "twin_ask", Extension: "twin", TurnID: "turn-1", CallID: "c1", Status: "rejected",
				Answer: "no", Message: "t: denied", Step: 1, Request: `{"tag":"t","tool":"probe"}`, Required: true}})
			eqLines(t, "question history", summarize(o.History["a/q"]), []string{
				"msg-0 user user: ask me",
				"msg-1 assistant model: Which one, human?",
				"msg-2 user runtime: t got: blue",
				"msg-3 assistant model: resumed with t got: blue / ",
			})
			eq(t, "approved call's result", toolMessage(t, o.History["a/yes"]).Content, `probe got {"mode":"ask"}`)
			eq(t, "denied call's result", toolMessage(t, o.History["a/no"]).Content, "t: the call was denied")
		},
	},
	{
		name:   "events published and subscribed",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t, echo: true}"}}}},
		script: `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: twin_echo, id: c1, args: {text: hi}}]
        - tool_calls: [{name: probe, id: c2, args: {x: 1}}]
        - text: "done"
`,
		run: func(h *harness) {
			h.send("a", "k", "go")
			h.state("a", "k", "twin")
		},
		check: func(t *testing.T, o *observation) {
			eqLines(t, "events", o.Events, []string{`twin.turn a/k twin {"tag":"t","turns":1}`})
			eq(t, "state", o.State["a/k/twin"], `{"turns":1,"tools":["twin_echo: t echoes hi","probe: probe got {\"x\":1}"]}`)
		},
	},
	{
		name: "events of another agent",
		agents: []agentSpec{
			{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}},
			{name: "b", tools: []string{"probe"}},
		},
		script: `
agents:
  a:
    fallback: {steps: [{text: ok}]}
  b:
    fallback:
      steps:
        - tool_calls: [{name: probe, id: c1}]
        - text: done
`,
		run: func(h *harness) {
			h.send("b", "k", "go")
			h.send("a", "k", "go")
			h.state("a", "k", "twin")
		},
		check: func(t *testing.T, o *observation) {
			eq(t, "state of agent a's extension", o.State["a/k/twin"], `{"turns":1}`)
		},
	},
	{
		name:   "errors fail the turn (fail_closed)",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    turns:
      - match: "^fail tool"
        steps:
          - tool_calls: [{name: probe, id: c1, args: {mode: fail}}]
          - text: "{{ .LastMessage }}"
    fallback: {steps: [{text: ok}]}
`,
		run: func(h *harness) {
			h.send("a", "turn", "fail turn")
			h.send("a", "after", "fail turn-after")
			h.send("a", "step", "fail step")
			h.send("a", "tool", "fail tool")
			h.history("a", "tool")
		},
		check: func(t *testing.T, o *observation) {
			want := []struct{ err, blame string }{
				{`agent "a" instance "turn" turn-1: extension "twin": turn middleware: t: turn failed on purpose`, "twin/turn"},
				{`agent "a" instance "after" turn-1: extension "twin": turn middleware: t: turn failed after next`, "twin/turn"},
				{`agent "a" instance "step" turn-1: extension "twin": step middleware: t: step failed on purpose`, "twin/step"},
				{`agent "a" instance "tool" turn-1: extension "twin": toolCall middleware: t: tool call failed on purpose`, "twin/toolCall"},
			}
			for i, w := range want {
				r := o.Turns[i]
				eq(t, r.Input+": error", r.Err, w.err)
				eq(t, r.Input+": blamed", r.Blame, w.blame)
				eq(t, r.Input+": finish reason", r.Result.FinishReason, pipeline.FinishError)
			}
			eq(t, "model calls", len(o.Calls), 2) // fail turn-after and fail tool
			tool := toolMessage(t, o.History["a/tool"])
			eq(t, "tool message", tool.Content, `tool call failed: extension "twin": toolCall middleware: t: tool call failed on purpose`)
			eq(t, "events", len(o.Events), 0)
		},
	},
	{
		name:   "errors skip the layer (fail_open)",
		agents: []agentSpec{{name: "a", tools: []string{"probe"}, exts: []ext{{name: "twin", onError: "fail_open", config: "{tag: t}"}}}},
		script: `
agents:
  a:
    turns:
      - match: "^fail tool"
        steps:
          - tool_calls: [{name: probe, id: c1, args: {mode: fail}}]
          - text: "{{ .LastMessage }}"
    fallback: {steps: [{text: "model: {{ .Input }}"}]}
`,
		run: func(h *harness) {
			h.send("a", "turn", "fail turn")
			h.send("a", "after", "fail turn-after")
			h.send("a", "step", "fail step")
			h.send("a", "tool", "fail tool")
		},
		check: func(t *testing.T, o *observation) {
			for i, want := range []string{"model: fail turn", "model: fail turn-after", "model: fail step", `probe got {"mode":"fail"}`} {
				r := o.Turns[i]
				eq(t, r.Input+": error", r.Err, "")
				eq(t, r.Input+": response", r.Result.Response.Content, want)
			}
			eq(t, "model calls", len(o.Calls), 5) // a layer skipped after next does not run the rest again
			skipped := func(instance, hook, msg string) string {
				return fmt.Sprintf(`middleware.skipped a/%s runtime {"error":"extension \"twin\": %s middleware: t: %s","extension":"twin","hook":%q}`,
					instance, hook, msg, hook)
			}
			eqLines(t, "events", o.Events, []string{
				skipped("turn", "turn", "turn failed on purpose"),
				skipped("after", "turn", "turn failed after next"),
				skipped("step", "step", "step failed on purpose"),
				`twin.turn a/step twin {"tag":"t","turns":1}`,
				skipped("tool", "toolCall", "tool call failed on purpose"),
				`twin.turn a/tool twin {"tag":"t","turns":1}`,
			})
		},
	},
	{
		name:   "panic fails the turn",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: ok}]}}}",
		run:    func(h *harness) { h.send("a", "k", "panic turn") },
		check: func(t *testing.T, o *observation) {
			r := o.Turns[0]
			eq(t, "blamed", r.Blame, "twin/turn")
			eq(t, "error", r.Err, `agent "a" instance "k" turn-1: extension "twin": turn middleware: panic: t: turn panicked on purpose`)
			eqLines(t, "matches", r.Matches, []string{"PanicError"})
		},
		differs: []*difference{{impl: "rust",
			why: `a Rust guest's panic aborts, which traps: Rust has no unwinding on wasm32, so the SDK cannot return 2 ` +
				`(panicked) from the hook. The error is the trap's, "turn middleware: ganglion_turn: <the panic's message>: ` +
				`wasm error: unreachable" and a stack, with the message the SDK's panic hook gave set_error; it is no ` +
				`*pipeline.PanicError, and the host throws the instance away (sdk/rust/src/log.rs install_panic_hook)`,
			is: func(o *observation) bool {
				return o.Turns[0].Blame == "twin/turn" && len(o.Turns[0].Matches) == 0 &&
					strings.HasPrefix(o.Turns[0].Err, `agent "a" instance "k" turn-1: extension "twin": turn middleware: `+
						`ganglion_turn: t: turn panicked on purpose: wasm error: unreachable`)
			}}, {impl: "assemblyscript",
			why: `an AssemblyScript guest cannot catch what it throws: throw calls abort, which the SDK's ganglion_abort ` +
				`turns into a trap after giving set_error the message, so the SDK cannot return 2 (panicked) from the hook. ` +
				`The error is the trap's, "turn middleware: ganglion_turn: abort: <the message> at <file:line:column>: ` +
				`wasm error: unreachable" and a stack; it is no *pipeline.PanicError, and the host throws the instance away ` +
				`(sdk/assemblyscript/assembly/index.ts ganglion_abort)`,
			is: func(o *observation) bool {
				return o.Turns[0].Blame == "twin/turn" && len(o.Turns[0].Matches) == 0 &&
					strings.HasPrefix(o.Turns[0].Err, `agent "a" instance "k" turn-1: extension "twin": turn middleware: `+
						`ganglion_turn: abort: t: turn panicked on purpose at assembly/index.ts:`) &&
					strings.Contains(o.Turns[0].Err, ": wasm error: unreachable")
			}}},
	},
	{
		name:   "next called twice",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: ok}]}}}",
		run:    func(h *harness) { h.send("a", "k", "twice") },
		check: func(t *testing.T, o *observation) {
			r := o.Turns[0]
			eq(t, "blamed", r.Blame, "twin/turn")
			eq(t, "error", r.Err, `agent "a" instance "k" turn-1: extension "twin": turn middleware: next called more than once`)
			eqLines(t, "matches", r.Matches, []string{"ErrNextCalledTwice"})
			eq(t, "model calls", len(o.Calls), 1) // the second next runs nothing
		},
	},
	{
		name:   "next's error passes through unblamed",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t}"}}}},
		script: "agents: {a: {fallback: {steps: [{error: simulated provider failure}]}}}",
		run:    func(h *harness) { h.send("a", "k", "go") },
		check: func(t *testing.T, o *observation) {
			r := o.Turns[0]
			eq(t, "blamed", r.Blame, "")
			if !strings.HasPrefix(r.Err, `agent "a" instance "k" turn-1: `) || !strings.HasSuffix(r.Err, "simulated provider failure") ||
				strings.Contains(r.Err, "twin") {
				t.Errorf("error %q, want the model's, not the extension's", r.Err)
			}
		},
	},
	{
		name:   "config: a missing setting fails the load",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{trace: true}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: ok}]}}}",
		run:    func(h *harness) { h.tryOpen() },
		check: func(t *testing.T, o *observation) {
			t.Log("New: ", o.LoadErr)
			// The middle of the message names the kind of extension (a
			// module's path for WASM): only its ends are compared.
			if !strings.HasPrefix(o.LoadErr, `agent "a": extension "twin": `) || !strings.HasSuffix(o.LoadErr, "config: tag is required") {
				t.Errorf("New: %q, want it to name the agent and the extension and end with the twin's message", o.LoadErr)
			}
		},
	},
	{
		name:   "config: an unknown setting fails the load",
		agents: []agentSpec{{name: "a", exts: []ext{{name: "twin", config: "{tag: t, colour: red}"}}}},
		script: "agents: {a: {fallback: {steps: [{text: ok}]}}}",
		run:    func(h *harness) { h.tryOpen() },
		check: func(t *testing.T, o *observation) {
			t.Log("New: ", o.LoadErr)
			if !strings.Contains(o.LoadErr, `extension "twin": `) || !strings.Contains(o.LoadErr, `colour`) {
				t.Errorf("New: %q, want it to name the extension and the unknown setting", o.LoadErr)
			}
		},
	},
	{
		name: "partial load: an extension that fails to load makes only its agent unavailable",
		agents: []agentSpec{
			{name: "a", exts: []ext{{name: "twin", config: "{trace: true}"}}},
			{name: "b", exts: []ext{{name: "twin", config: "{tag: t}"}}},
		},
		script: "agents: {a: {fallback: {steps: [{text: a here}]}}, b: {fallback: {steps: [{text: b here}]}}}",
		run: func(h *harness) {
			h.extra = []runtime.Option{runtime.WithPartialLoad()}
			h.send("b", "k", "go")
			// Its error names the module's path for WASM: check compares it.
			_, err := h.runtime().Send(context.Background(), "a", "k", runtime.UserMessage("go"))
			if !errors.Is(err, runtime.ErrAgentUnavailable) {
				h.t.Errorf("a's turn: %v, want ErrAgentUnavailable", err)
			}
			h.obs.LoadErr = fmt.Sprint(err)
		},
		check: func(t *testing.T, o *observation) {
			if len(o.Turns) != 1 || o.Turns[0].Err != "" || o.Turns[0].Result.Response.Content != "b here" {
				t.Errorf("b's turn = %+v, want it answered", o.Turns)
			}
			if !strings.HasPrefix(o.LoadErr, `agent unavailable: agent "a": extension "twin": `) || !strings.HasSuffix(o.LoadErr, "config: tag is required") {
				t.Errorf("a's turn: %q, want it unavailable, naming the agent, the extension and why", o.LoadErr)
			}
		},
	},
}

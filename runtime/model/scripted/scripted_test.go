package scripted_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// mustParse parses src as script.yaml or fails the test.
func mustParse(t testing.TB, src string) *scripted.Model {
	t.Helper()
	s, err := scripted.Parse("script.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// request builds a request for agent's turn and step whose history ends with
// the given messages, alternately user and tool messages.
func request(agent string, turn, step int, msgs ...pipeline.Message) *model.Request {
	return &model.Request{Agent: agent, InstanceKey: agent + "/main", Turn: turn, Step: step, Messages: pipeline.MessageSlice(msgs)}
}

func user(s string) pipeline.Message { return pipeline.Message{Role: pipeline.RoleUser, Content: s} }

func tool(s string) pipeline.Message { return pipeline.Message{Role: pipeline.RoleTool, Content: s} }

// show renders a chunk compactly for comparisons.
func show(c model.Chunk) string {
	switch c.Kind {
	case model.KindText, model.KindReasoning:
		return c.Kind.String() + ":" + c.Text
	case model.KindToolCallStart, model.KindToolCallEnd:
		return c.Kind.String() + ":" + c.ToolCallID + ":" + c.ToolName
	case model.KindToolCallDelta:
		return c.Kind.String() + ":" + c.ToolCallID + ":" + c.ArgumentsDelta
	case model.KindUsage:
		u := c.Usage
		return fmt.Sprintf("usage:%d/%d/%d/%d", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	case model.KindError:
		return "error:" + c.Err.Error()
	}
	return c.Kind.String()
}

// drain streams req and returns its chunks rendered by show.
func drain(t testing.TB, p model.Provider, req *model.Request) []string {
	t.Helper()
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer st.Close()
	var got []string
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		got = append(got, show(c))
	}
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("chunks:\n got %q\nwant %q", got, want)
	}
}

func TestScriptedStepFields(t *testing.T) {
	tests := []struct {
		name string
		step string // one step, indented as a list item under steps
		want []string
	}{
		{
			name: "text",
			step: `- text: "Let me look."`,
			want: []string{"text:Let me look."},
		},
		{
			name: "reasoning before text",
			step: "- text: answer\n  reasoning: thinking",
			want: []string{"reasoning:thinking", "text:answer"},
		},
		{
			name: "empty text streams nothing",
			step: `- text: ""`,
			want: nil,
		},
		{
			name: "tool call with args keeps key order and types",
			step: `- tool_calls:
    - name: read_file
      id: call_x
      args: {path: notes.txt, lines: [1, 2.5], opts: {follow: true, max: null}, html: "<a&b>"}`,
			want: []string{
				"tool_call_start:call_x:read_file",
				`tool_call_delta:call_x:{"path":"notes.txt","lines":[1,2.5],"opts":{"follow":true,"max":null},"html":"<a&b>"}`,
				"tool_call_end:call_x:read_file",
			},
		},
		{
			name: "default ids count calls from 1",
			step: `- tool_calls:
    - {name: a, args: {}}
    - {name: b}
    - {name: c, id: mine}`,
			want: []string{
				"tool_call_start:call_1_1_1:a", "tool_call_delta:call_1_1_1:{}", "tool_call_end:call_1_1_1:a",
				"tool_call_start:call_1_1_2:b", "tool_call_delta:call_1_1_2:{}", "tool_call_end:call_1_1_2:b",
				"tool_call_start:mine:c", "tool_call_delta:mine:{}", "tool_call_end:mine:c",
			},
		},
		{
			name: "raw malformed arguments pass verbatim",
			step: `- tool_calls:
    - name: broken
      arguments: '{"path": '`,
			want: []string{
				"tool_call_start:call_1_1_1:broken",
				`tool_call_delta:call_1_1_1:{"path": `,
				"tool_call_end:call_1_1_1:broken",
			},
		},
		{
			name: "empty raw arguments stream no delta",
			step: `- tool_calls: [{name: none, arguments: ""}]`,
			want: []string{"tool_call_start:call_1_1_1:none", "tool_call_end:call_1_1_1:none"},
		},
		{
			name: "usage",
			step: `- usage: {input_tokens: 10, output_tokens: 5, cache_read_tokens: 3, cache_write_tokens: 2}`,
			want: []string{"usage:10/5/3/2"},
		},
		{
			name: "error alone",
			step: `- error: simulated provider failure`,
			want: []string{"error:simulated provider failure"},
		},
		{
			name: "every field in order",
			step: `- error: boom
  usage: {input_tokens: 1, output_tokens: 2}
  tool_calls: [{name: t, id: c1, args: {k: v}}]
  text: hello
  reasoning: hmm`,
			want: []string{
				"reasoning:hmm", "text:hello",
				"tool_call_start:c1:t", `tool_call_delta:c1:{"k":"v"}`, "tool_call_end:c1:t",
				"usage:1/2/0/0", "error:boom",
			},
		},
		{
			name: "merge key",
			step: `- <<: {text: merged, usage: {input_tokens: 1}}
  reasoning: r`,
			want: []string{"reasoning:r", "text:merged", "usage:1/0/0/0"},
		},
		{
			name: "anchors and aliases",
			step: `- tool_calls:
    - {name: a, args: &common {dir: /tmp}}
    - {name: b, args: *common}`,
			want: []string{
				"tool_call_start:call_1_1_1:a", `tool_call_delta:call_1_1_1:{"dir":"/tmp"}`, "tool_call_end:call_1_1_1:a",
				"tool_call_start:call_1_1_2:b", `tool_call_delta:call_1_1_2:{"dir":"/tmp"}`, "tool_call_end:call_1_1_2:b",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "agents:\n  a:\n    turns:\n      - steps:\n" + indent(tt.step, "          ")
			s := mustParse(t, src)
			equal(t, drain(t, s, request("a", 1, 1)), tt.want)
		})
	}
}

// indent prefixes every line of s with pre.
func indent(s, pre string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
}

const selectionScript = `
agents:
  assistant:
    turns:
      - steps:
          - text: one.1
          - text: one.2
      - match: "(?i)weather"
        steps:
          - text: weather
      - steps:
          - text: two.1
      - match: "rain|weather"
        steps:
          - text: rain
    fallback:
      steps:
        - text: fallback
        - tool_calls: [{name: t}, {name: u, id: mine}, {name: v, arguments: "{}"}]
  strict:
    turns:
      - steps:
          - text: only
  matcher:
    turns:
      - match: hello
        steps:
          - text: hi
`

func TestScriptedSelection(t *testing.T) {
	s := mustParse(t, selectionScript)
	tests := []struct {
		name  string
		agent string
		turn  int
		step  int
		msgs  []pipeline.Message
		want  []string
	}{
		{name: "turn 1 step 1", agent: "assistant", turn: 1, step: 1, want: []string{"text:one.1"}},
		{name: "turn 1 step 2", agent: "assistant", turn: 1, step: 2, want: []string{"text:one.2"}},
		{name: "match entries do not count as turns", agent: "assistant", turn: 2, step: 1, want: []string{"text:two.1"}},
		{name: "match wins over the turn number", agent: "assistant", turn: 1, step: 1,
			msgs: []pipeline.Message{user("How is the WEATHER?")}, want: []string{"text:weather"}},
		{name: "first matching entry wins", agent: "assistant", turn: 2, step: 1,
			msgs: []pipeline.Message{user("weather and rain")}, want: []string{"text:weather"}},
		{name: "later match entry", agent: "assistant", turn: 2, step: 1,
			msgs: []pipeline.Message{user("rain")}, want: []string{"text:rain"}},
		{name: "input is the last user message", agent: "assistant", turn: 1, step: 1,
			msgs: []pipeline.Message{user("weather"), user("hello"), tool("weather")}, want: []string{"text:one.1"}},
		{name: "input survives tool messages", agent: "assistant", turn: 1, step: 1,
			msgs: []pipeline.Message{user("rain"), tool("result")}, want: []string{"text:rain"}},
		{name: "fallback beyond the turns", agent: "assistant", turn: 3, step: 1, want: []string{"text:fallback"}},
		{name: "fallback default ids use the request's turn", agent: "assistant", turn: 7, step: 2,
			want: []string{
				"tool_call_start:call_7_2_1:t", "tool_call_delta:call_7_2_1:{}", "tool_call_end:call_7_2_1:t",
				"tool_call_start:mine:u", "tool_call_delta:mine:{}", "tool_call_end:mine:u",
				"tool_call_start:call_7_2_3:v", "tool_call_delta:call_7_2_3:{}", "tool_call_end:call_7_2_3:v",
			}},
		{name: "the same step in another turn", agent: "assistant", turn: 8, step: 2,
			want: []string{
				"tool_call_start:call_8_2_1:t", "tool_call_delta:call_8_2_1:{}", "tool_call_end:call_8_2_1:t",
				"tool_call_start:mine:u", "tool_call_delta:mine:{}", "tool_call_end:mine:u",
				"tool_call_start:call_8_2_3:v", "tool_call_delta:call_8_2_3:{}", "tool_call_end:call_8_2_3:v",
			}},
		{name: "match entry as the only entry", agent: "matcher", turn: 5, step: 1,
			msgs: []pipeline.Message{user("hello there")}, want: []string{"text:hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equal(t, drain(t, s, request(tt.agent, tt.turn, tt.step, tt.msgs...)), tt.want)
		})
	}
}

// kindScript picks turns by what started them.
const kindScript = `
agents:
  assistant:
    turns:
      - kind: resume
        match: "(?i)denied"
        steps: [{text: "resume after a denial"}]
      - kind: resume
        steps:
          - text: "{{ .Kind }}: {{ .ToolResult }}"
      - kind: delegation_report
        steps: [{text: "report"}]
      - kind: agent_request
        steps: [{text: "request: {{ .Input }}"}]
      - kind: user_message
        match: "^hi"
        steps: [{tool_calls: [{name: greet}]}]
      - steps: [{text: "turn one"}]
    fallback:
      steps:
        - tool_calls: [{name: read_file, args: {path: a.txt}}]
`

func TestScriptedKind(t *testing.T) {
	s := mustParse(t, kindScript)
	kind := func(k pipeline.InputKind, turn int, msgs ...pipeline.Message) *model.Request {
		r := request("assistant", turn, 1, msgs...)
		r.InputKind = k
		return r
	}
	approved := []pipeline.Message{user("read a.txt"), tool("alpha"), user("A human approved the call of read_file; it ran.")}
	tests := []struct {
		name string
		req  *model.Request
		want []string
	}{
		{name: "kind entries do not count as turns", req: kind(pipeline.InputUserMessage, 1, user("read a.txt")), want: []string{"text:turn one"}},
		{name: "a user's turn beyond the turns", req: kind(pipeline.InputUserMessage, 2, user("read a.txt")),
			want: []string{"tool_call_start:call_2_1_1:read_file", `tool_call_delta:call_2_1_1:{"path":"a.txt"}`, "tool_call_end:call_2_1_1:read_file"}},
		{name: "the resume, not the fallback", req: kind(pipeline.InputResume, 3, approved...), want: []string{"text:resume: alpha"}},
		{name: "kind and match both hold", req: kind(pipeline.InputResume, 3, user("read a.txt"), tool("denied"), user("A human denied the call of read_file; it did not run.")),
			want: []string{"text:resume after a denial"}},
		{name: "a delegation report", req: kind(pipeline.InputDelegationReport, 4, user("[Delegation report]")), want: []string{"text:report"}},
		{name: "an agent's request", req: kind(pipeline.InputAgentRequest, 1, user("plan it")), want: []string{"text:request: plan it"}},
		{name: "kind and match on a user message", req: kind(pipeline.InputUserMessage, 5, user("hi there")),
			want: []string{"tool_call_start:call_5_1_1:greet", "tool_call_delta:call_5_1_1:{}", "tool_call_end:call_5_1_1:greet"}},
		{name: "the match alone is not enough", req: kind(pipeline.InputAgentRequest, 5, user("hi there")), want: []string{"text:request: hi there"}},
		{name: "a request without a kind takes no kind entry", req: kind("", 1, approved...), want: []string{"text:turn one"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equal(t, drain(t, s, tt.req), tt.want)
		})
	}
	t.Run("no step in a kind entry", func(t *testing.T) {
		r := kind(pipeline.InputDelegationReport, 4)
		r.Step = 2
		_, err := s.Stream(context.Background(), r)
		if want := `scripted model: agent "assistant" turn 4 (kind delegation_report) has no step 2 in script.yaml (1 step)`; err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
		r = kind(pipeline.InputResume, 4, user("denied"))
		r.Step = 2
		_, err = s.Stream(context.Background(), r)
		if want := `scripted model: agent "assistant" turn 4 (kind resume, match "(?i)denied") has no step 2 in script.yaml (1 step)`; err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
	})
}

func TestScriptedNoResponse(t *testing.T) {
	s := mustParse(t, selectionScript)
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{name: "unknown agent", req: request("x", 1, 1),
			want: `scripted model: no agent "x" in script.yaml (agents: assistant, matcher, strict)`},
		{name: "no turn", req: request("strict", 3, 1),
			want: `scripted model: agent "strict" has no turn 3 in script.yaml (1 turn, no fallback)`},
		{name: "no turn with match entries", req: request("matcher", 1, 1, user("bye")),
			want: `scripted model: agent "matcher" has no turn 1 in script.yaml (0 turns, 1 entry with match or kind that did not apply, no fallback)`},
		{name: "no step", req: request("assistant", 1, 4),
			want: `scripted model: agent "assistant" turn 1 has no step 4 in script.yaml (2 steps)`},
		{name: "no step in one-step turn", req: request("strict", 1, 2),
			want: `scripted model: agent "strict" turn 1 has no step 2 in script.yaml (1 step)`},
		{name: "no step in match entry", req: request("assistant", 2, 2, user("weather")),
			want: `scripted model: agent "assistant" turn 2 (match "(?i)weather") has no step 2 in script.yaml (1 step)`},
		{name: "no step in fallback", req: request("assistant", 9, 3),
			want: `scripted model: agent "assistant" turn 9 (fallback) has no step 3 in script.yaml (2 steps)`},
		{name: "turn 0", req: request("assistant", 0, 1),
			want: `scripted model: agent "assistant": invalid turn 0 (turns count from 1)`},
		{name: "step 0", req: request("assistant", 1, 0),
			want: `scripted model: agent "assistant": invalid step 0 (steps count from 1)`},
		{name: "nil request", req: nil, want: `scripted model: nil request`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := s.Stream(context.Background(), tt.req)
			if err == nil {
				st.Close()
				t.Fatalf("Stream: no error, want %q", tt.want)
			}
			if st != nil {
				t.Errorf("Stream returned a stream with its error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestScriptedTemplates(t *testing.T) {
	src := `
agents:
  bot:
    turns:
      - steps:
          - text: "{{ .Agent }}|{{ .Instance }}|{{ .Turn }}|{{ .Step }}|{{ .Kind }}|{{ .Input }}|{{ .LastMessage }}|{{ .ToolResult }}"
            reasoning: "thinking about {{ printf \"%q\" .Input }}"
          - text: "fails: {{ .Nope }}"
          - text: "{{ if .Input }}{{ else }}{{ end }}"
          - reasoning: "{{ .Nope }}"
            text: never
          - text: "no braces here: { .Input }"
          - text: "  {{- .Agent }}:{{ .Turn }}:{{ .Step }} [{{ .Input -}}  ] {{ .LastMessage }}"
          - text: "  {{- print .Agent }}:{{ print .Turn }}:{{ print .Step }} [{{ print .Input -}}  ] {{ .LastMessage | print }}"
`
	s := mustParse(t, src)
	msgs := []pipeline.Message{tool("an older result"), user("héllo"), tool("the result")}
	tests := []struct {
		name string
		step int
		want []string
	}{
		{name: "fields", step: 1, want: []string{
			`reasoning:thinking about "héllo"`,
			"text:bot|bot/main|1|1|resume|héllo|the result|the result",
		}},
		{name: "execution error ends the stream", step: 2, want: []string{
			`error:scripted model: script.yaml:8:19: template: text:1:10: executing "text" at <.Nope>: can't evaluate field Nope in type scripted.templateData`,
		}},
		{name: "empty output streams nothing", step: 3, want: nil},
		{name: "reasoning error stops before text", step: 4, want: []string{
			`error:scripted model: script.yaml:10:24: template: reasoning:1:3: executing "reasoning" at <.Nope>: can't evaluate field Nope in type scripted.templateData`,
		}},
		{name: "single braces are not a template", step: 5, want: []string{"text:no braces here: { .Input }"}},
		// Plain field references render without text/template; the result
		// must be the same.
		{name: "plain fields", step: 6, want: []string{"text:bot:1:6 [héllo] the result"}},
		{name: "same through text/template", step: 7, want: []string{"text:bot:1:7 [héllo] the result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("bot", 1, tt.step, msgs...)
			req.InputKind = pipeline.InputResume
			equal(t, drain(t, s, req), tt.want)
		})
	}
}

func TestScriptedChunkSize(t *testing.T) {
	tests := []struct {
		name string
		size int
		text string
		want []string
	}{
		{name: "zero keeps one chunk", size: 0, text: "hello world", want: []string{"text:hello world"}},
		{name: "ascii", size: 4, text: "hello world", want: []string{"text:hell", "text:o wo", "text:rld"}},
		{name: "exact multiple", size: 5, text: "helloworld", want: []string{"text:hello", "text:world"}},
		// "é" is 2 bytes, "世" 3, "🙂" 4.
		{name: "two-byte runes", size: 3, text: "ééé", want: []string{"text:é", "text:é", "text:é"}},
		{name: "mixed runes", size: 4, text: "a世b🙂c", want: []string{"text:a世", "text:b", "text:🙂", "text:c"}},
		{name: "rune longer than the size stays whole", size: 1, text: "a世b", want: []string{"text:a", "text:世", "text:b"}},
		{name: "size larger than text", size: 100, text: "世界", want: []string{"text:世界"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf("chunk_size: %d\nagents:\n  a:\n    turns:\n      - steps:\n          - text: %q\n            reasoning: %q\n",
				tt.size, tt.text, tt.text)
			s := mustParse(t, src)
			var want []string
			for _, w := range tt.want {
				want = append(want, "reasoning:"+strings.TrimPrefix(w, "text:"))
			}
			want = append(want, tt.want...)
			got := drain(t, s, request("a", 1, 1))
			equal(t, got, want)
		})
	}
	t.Run("templates are split after rendering", func(t *testing.T) {
		s := mustParse(t, "chunk_size: 2\nagents:\n  a:\n    fallback:\n      steps:\n        - text: \"{{ .Input }}\"\n")
		equal(t, drain(t, s, request("a", 1, 1, user("añb"))), []string{"text:a", "text:ñ", "text:b"})
	})
}

// loadErrorCases are scripts that fail to load, with the first line of their
// error; the whole error text is in testdata/load_errors/<name>.golden.
var loadErrorCases = []struct {
	name string
	src  string
	want string
}{
	{name: "empty", src: "", want: "script.yaml:1:1: script is empty (want a mapping with agents)"},
	{name: "comment_only", src: "# nothing\n", want: "script.yaml:1:1: script is empty (want a mapping with agents)"},
	{name: "syntax", src: "agents:\n  a: [\n", want: "script.yaml:2:6: sequence end token ']' not found"},
	{name: "two_documents", src: "agents: {a: {fallback: {steps: [{text: x}]}}}\n---\nagents: {}\n",
		want: "script.yaml:3:1: script holds 2 YAML documents (want one)"},
	{name: "not_a_mapping", src: "- agents\n", want: "script.yaml:1:1: script: want a mapping, got a sequence"},
	{name: "unknown_top_key", src: "agent:\n  a: {}\n",
		want: `script.yaml:1:1: unknown key "agent" in script (known keys: chunk_size, agents)`},
	{name: "no_agents", src: "chunk_size: 2\n", want: "script.yaml:1:1: script has no agents"},
	{name: "empty_agents", src: "agents: {}\n", want: "script.yaml:1:9: script has no agents"},
	{name: "agents_not_mapping", src: "agents: [a, b]\n", want: "script.yaml:1:9: agents: want a mapping, got a sequence"},
	{name: "chunk_size_type", src: "chunk_size: big\nagents: {}\n", want: "script.yaml:1:13: chunk_size: want an integer, got a string"},
	{name: "chunk_size_negative", src: "chunk_size: -1\nagents: {}\n", want: "script.yaml:1:13: chunk_size: -1 is negative"},
	{name: "duplicate_key", src: "agents:\n  a:\n    fallback: {steps: [{text: x}]}\n  a:\n    fallback: {steps: [{text: y}]}\n",
		want: `script.yaml:4:3: mapping key "a" already defined at [2:3]`},
	{name: "agents_merge_key", src: "agents:\n  <<: {a: {fallback: {steps: [{text: x}]}}}\n",
		want: "script.yaml:2:3: agents: merge keys are not supported here"},
	{name: "agent_without_turns", src: "agents:\n  a: {}\n", want: `script.yaml:2:3: agent "a" has no turns and no fallback`},
	{name: "agent_null", src: "agents:\n  a:\n", want: `script.yaml:2:3: agent "a" has no turns and no fallback`},
	{name: "unknown_agent_key", src: "agents:\n  a:\n    turn:\n      - steps: [{text: x}]\n",
		want: `script.yaml:3:5: unknown key "turn" in agent (known keys: turns, fallback)`},
	{name: "turns_not_sequence", src: "agents:\n  a:\n    turns: {steps: []}\n",
		want: "script.yaml:3:12: turns: want a sequence, got a mapping"},
	{name: "turn_without_steps", src: "agents:\n  a:\n    turns:\n      - match: x\n",
		want: "script.yaml:4:9: turn has no steps"},
	{name: "turn_null", src: "agents:\n  a:\n    turns:\n      -\n",
		want: "script.yaml:4:7: turn has no steps"},
	{name: "unknown_turn_key", src: "agents:\n  a:\n    turns:\n      - stepz: [{text: x}]\n",
		want: `script.yaml:4:9: unknown key "stepz" in turn (known keys: match, kind, steps)`},
	{name: "invalid_kind", src: "agents:\n  a:\n    turns:\n      - kind: resumed\n        steps: [{text: x}]\n",
		want: `script.yaml:4:15: kind: "resumed" is not a turn's kind (want user_message, agent_request, delegation_report or resume)`},
	{name: "empty_kind", src: "agents:\n  a:\n    turns:\n      - steps: [{text: x}]\n        kind: ''\n",
		want: `script.yaml:5:15: kind: "" is not a turn's kind (want user_message, agent_request, delegation_report or resume)`},
	{name: "kind_not_string", src: "agents:\n  a:\n    turns:\n      - kind: [resume]\n        steps: [{text: x}]\n",
		want: "script.yaml:4:15: kind: want a string, got a sequence"},
	{name: "fallback_with_kind", src: "agents:\n  a:\n    fallback:\n      kind: resume\n      steps: [{text: x}]\n",
		want: "script.yaml:4:13: fallback cannot have kind (it answers the turns no entry does)"},
	{name: "invalid_match", src: "agents:\n  a:\n    turns:\n      - match: \"(unclosed\"\n        steps: [{text: x}]\n",
		want: "script.yaml:4:16: match: error parsing regexp: missing closing ): `(unclosed`"},
	{name: "match_not_string", src: "agents:\n  a:\n    turns:\n      - match: [x]\n        steps: [{text: x}]\n",
		want: "script.yaml:4:16: match: want a string, got a sequence"},
	{name: "fallback_with_match", src: "agents:\n  a:\n    fallback:\n      match: x\n      steps: [{text: x}]\n",
		want: "script.yaml:4:14: fallback cannot have match"},
	{name: "fallback_without_steps", src: "agents:\n  a:\n    fallback: {steps: []}\n",
		want: "script.yaml:3:15: fallback has no steps"},
	{name: "empty_step", src: "agents:\n  a:\n    turns:\n      - steps:\n          - {}\n",
		want: "script.yaml:5:13: step has nothing in it (want one of text, reasoning, tool_calls, usage, error)"},
	{name: "null_step", src: "agents:\n  a:\n    turns:\n      - steps:\n          - text: x\n          -\n",
		want: "script.yaml:6:11: step has nothing in it (want one of text, reasoning, tool_calls, usage, error)"},
	{name: "step_with_empty_tool_calls", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: []\n",
		want: "script.yaml:5:13: step has nothing in it (want one of text, reasoning, tool_calls, usage, error)"},
	{name: "unknown_step_key", src: "agents:\n  a:\n    turns:\n      - steps:\n          - text: x\n            txt: y\n",
		want: `script.yaml:6:13: unknown key "txt" in step (known keys: text, reasoning, tool_calls, usage, error)`},
	{name: "text_not_string", src: "agents:\n  a:\n    turns:\n      - steps:\n          - text: {a: b}\n",
		want: "script.yaml:5:19: text: want a string, got a mapping"},
	{name: "invalid_template", src: "agents:\n  a:\n    turns:\n      - steps:\n          - text: \"hi {{ .Input \"\n",
		want: `script.yaml:5:19: text: invalid template: text:1: unclosed action`},
	{name: "invalid_reasoning_template", src: "agents:\n  a:\n    turns:\n      - steps:\n          - reasoning: \"{{ nofunc }}\"\n",
		want: `script.yaml:5:24: reasoning: invalid template: reasoning:1: function "nofunc" not defined`},
	{name: "empty_error", src: "agents:\n  a:\n    turns:\n      - steps:\n          - error: \"\"\n",
		want: "script.yaml:5:20: error: message is empty"},
	{name: "tool_calls_not_sequence", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: {name: x}\n",
		want: "script.yaml:5:25: tool_calls: want a sequence, got a mapping"},
	{name: "tool_call_without_name", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls:\n              - args: {a: 1}\n",
		want: "script.yaml:6:17: tool call has no name"},
	{name: "tool_call_args_and_arguments", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls:\n              - name: t\n                args: {a: 1}\n                arguments: '{}'\n",
		want: `script.yaml:8:28: tool call "t" has both args and arguments (give one)`},
	{name: "tool_call_args_not_mapping", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: [{name: t, args: [1, 2]}]\n",
		want: "script.yaml:5:42: args: want a mapping, got a sequence"},
	{name: "tool_call_args_nan", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: [{name: t, args: {x: .nan}}]\n",
		want: "script.yaml:5:42: args: NaN has no JSON encoding"},
	{name: "unknown_tool_call_key", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: [{name: t, arg: {}}]\n",
		want: `script.yaml:5:36: unknown key "arg" in tool call (known keys: name, id, args, arguments)`},
	{name: "duplicate_tool_call_id", src: "agents:\n  a:\n    turns:\n      - steps:\n          - tool_calls: [{name: t, id: c}, {name: u, id: c}]\n",
		want: `script.yaml:5:58: duplicate tool call id "c" in step`},
	{name: "unknown_usage_key", src: "agents:\n  a:\n    turns:\n      - steps:\n          - usage: {input: 1}\n",
		want: `script.yaml:5:21: unknown key "input" in usage (known keys: input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)`},
	{name: "usage_type", src: "agents:\n  a:\n    turns:\n      - steps:\n          - usage: {input_tokens: many}\n",
		want: "script.yaml:5:35: input_tokens: want an integer, got a string"},
	{name: "usage_negative", src: "agents:\n  a:\n    turns:\n      - steps:\n          - usage: {output_tokens: -5}\n",
		want: "script.yaml:5:36: output_tokens: -5 is negative"},
	{name: "usage_overflow", src: "agents:\n  a:\n    turns:\n      - steps:\n          - usage: {output_tokens: 99999999999999999999}\n",
		want: "script.yaml:5:36: output_tokens: 99999999999999999999 is out of range"},
	{name: "alias_cycle", src: "agents: {x: {fallback: {steps: [{tool_calls: [{name: t, args: &a {v: *a}}]}]}}}\n",
		want: "script.yaml:1:70: alias *a refers to its own anchor"},
	{name: "alias_expansion_too_large", src: laughs, want: "script.yaml:7:9: script is too large with its aliases expanded (over 262144 nodes)"},
}

// laughs expands to a million nodes through nested aliases.
const laughs = `agents: {x: {fallback: {steps: [{tool_calls: [{name: t, args: {
  a: &a [x, x, x, x, x, x, x, x, x, x],
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a],
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b],
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c],
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d],
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}}]}]}}}
`

func TestParseErrors(t *testing.T) {
	for _, tt := range loadErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scripted.Parse("script.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse: no error, want %q (agents %v)", tt.want, s.Agents())
			}
			if s != nil {
				t.Errorf("Parse returned a script with its error")
			}
			got := err.Error()
			if first, _, _ := strings.Cut(got, "\n"); first != tt.want {
				t.Errorf("first line:\n got %s\nwant %s", first, tt.want)
			}
			golden(t, filepath.Join("testdata", "load_errors", tt.name+".golden"), got)
		})
	}
}

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("error text differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestLoad(t *testing.T) {
	s, err := scripted.Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := s.Agents(), []string{"assistant", "echo"}; !slices.Equal(got, want) {
		t.Errorf("Agents() = %q, want %q", got, want)
	}
	s.Agents()[0] = "changed"
	if s.Agents()[0] != "assistant" {
		t.Errorf("Agents() returned the script's own slice")
	}

	tests := []struct {
		name string
		req  *model.Request
		want []string
	}{
		{name: "turn 1 step 1", req: request("assistant", 1, 1, user("read my notes")), want: []string{
			"reasoning:The user wants the notes.", "text:Let me look.",
			"tool_call_start:call_1:read_file", `tool_call_delta:call_1:{"path":"notes.txt"}`, "tool_call_end:call_1:read_file",
			"tool_call_start:call_1_1_2:broken", `tool_call_delta:call_1_1_2:{"path": `, "tool_call_end:call_1_1_2:broken",
			"usage:10/5/0/0",
		}},
		{name: "turn 1 step 2", req: request("assistant", 1, 2, user("read my notes"), tool("buy milk")),
			want: []string{"text:The file says: buy milk"}},
		{name: "turn 2", req: request("assistant", 2, 1, user("hi")), want: []string{`text:Turn 2: you said "hi".`}},
		{name: "match", req: request("assistant", 2, 1, user("Weather today?")),
			want: []string{"text:Checking the sky...", "error:simulated provider failure"}},
		{name: "fallback", req: request("assistant", 3, 1, user("hi")), want: []string{"text:I have nothing scripted for that."}},
		{name: "resume", req: func() *model.Request {
			r := request("assistant", 3, 1, user("read my notes"), tool("buy milk"), user("A human approved the call of read_file; it ran."))
			r.InputKind = pipeline.InputResume
			return r
		}(), want: []string{"text:A human approved the call of read_file; it ran. It returned: buy milk"}},
		{name: "failed report", req: func() *model.Request {
			r := request("assistant", 4, 1, user("[Delegation report]\n\n## coder, task task_1 (failed)\nTask failed"))
			r.InputKind = pipeline.InputDelegationReport
			return r
		}(), want: []string{"text:A delegated task failed; let me say what is missing."}},
		{name: "echo", req: request("echo", 42, 1, user("ping")), want: []string{"text:echo: ping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equal(t, drain(t, s, tt.req), tt.want)
		})
	}

	t.Run("missing file", func(t *testing.T) {
		_, err := scripted.Load(filepath.Join("testdata", "missing.yaml"))
		want := "scripted model: open testdata/missing.yaml: no such file or directory"
		if err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v is not os.ErrNotExist", err)
		}
	})
	t.Run("errors name the path", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte("agents: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := scripted.Load(path)
		want := path + ":1:9: script has no agents"
		if err == nil || !strings.HasPrefix(err.Error(), want+"\n") {
			t.Errorf("error = %v, want first line %s", err, want)
		}
	})
}

const twoChunks = "agents:\n  a:\n    turns:\n      - steps:\n          - {reasoning: r, text: t}\n"

func TestStreamLifecycle(t *testing.T) {
	s := mustParse(t, twoChunks)

	t.Run("cancelled before Stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		st, err := s.Stream(ctx, request("a", 1, 1))
		if !errors.Is(err, context.Canceled) || st != nil {
			t.Fatalf("Stream = %v, %v; want nil, context.Canceled", st, err)
		}
	})
	t.Run("cancelled while streaming", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		st, err := s.Stream(ctx, request("a", 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if c, err := st.Recv(); err != nil || c.Kind != model.KindReasoning {
			t.Fatalf("Recv = %v, %v; want the reasoning chunk", show(c), err)
		}
		cancel()
		for range 2 {
			if _, err := st.Recv(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Recv after cancel: %v, want context.Canceled", err)
			}
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		<-ctx.Done()
		if _, err := s.Stream(ctx, request("a", 1, 1)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stream: %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("EOF repeats", func(t *testing.T) {
		st, err := s.Stream(context.Background(), request("a", 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if _, err := st.Recv(); err != io.EOF {
				t.Fatalf("Recv: %v, want io.EOF", err)
			}
		}
	})
	t.Run("Close is idempotent", func(t *testing.T) {
		st, err := s.Stream(context.Background(), request("a", 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := st.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		if _, err := st.Recv(); err == nil || err.Error() != "scripted model: stream closed" {
			t.Fatalf("Recv after Close: %v, want scripted model: stream closed", err)
		}
	})
	t.Run("streams are independent", func(t *testing.T) {
		st1, _ := s.Stream(context.Background(), request("a", 1, 1))
		st2, _ := s.Stream(context.Background(), request("a", 1, 1))
		c1, _ := st1.Recv()
		c2, _ := st2.Recv()
		c3, _ := st1.Recv()
		if show(c1) != "reasoning:r" || show(c2) != "reasoning:r" || show(c3) != "text:t" {
			t.Fatalf("got %s, %s, %s", show(c1), show(c2), show(c3))
		}
	})
}

// TestScriptedConcurrent streams one script from many goroutines; run with -race.
func TestScriptedConcurrent(t *testing.T) {
	s, err := scripted.Load(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		drain(t, s, request("assistant", 1, 1, user("x"))),
		drain(t, s, request("assistant", 1, 2, user("x"), tool("y"))),
		drain(t, s, request("echo", 3, 1, user("z"))),
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % 3
				var req *model.Request
				switch k {
				case 0:
					req = request("assistant", 1, 1, user("x"))
				case 1:
					req = request("assistant", 1, 2, user("x"), tool("y"))
				default:
					req = request("echo", 3, 1, user("z"))
				}
				if got := drain(t, s, req); !slices.Equal(got, want[k]) {
					errs <- fmt.Sprintf("goroutine %d: got %q, want %q", g, got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "example.yaml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(selectionScript))
	f.Add([]byte(kindScript))
	f.Add([]byte("agents: {a: {turns: [{kind: resume, match: x, steps: [{text: \"{{ .ToolResult }}{{ .Kind }}\"}]}]}}}\n"))
	f.Add([]byte(twoChunks))
	f.Add([]byte("chunk_size: 1\nagents: {a: {fallback: {steps: [{text: \"é{{ .Input }}\"}]}}}\n"))
	f.Add([]byte("agents: {a: &x {fallback: {steps: [*x]}}}\n"))
	for _, c := range loadErrorCases {
		f.Add([]byte(c.src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scripted.Parse("fuzz.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatal("script and error both returned")
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, agent := range s.Agents() {
			for turn := 1; turn <= 3; turn++ {
				for step := 1; step <= 3; step++ {
					req := request(agent, turn, step, user("fuzz input"), tool("fuzz result"))
					req.InputKind = []pipeline.InputKind{pipeline.InputUserMessage, pipeline.InputResume, pipeline.InputDelegationReport}[turn-1]
					st, err := s.Stream(context.Background(), req)
					if err != nil {
						continue
					}
					for n := 0; ; n++ {
						c, err := st.Recv()
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Fatalf("Recv: %v", err)
						}
						if c.Kind == model.KindError && c.Err == nil {
							t.Fatal("error chunk without an error")
						}
						if n > 1<<20 {
							t.Fatal("endless stream")
						}
					}
					st.Close()
				}
			}
		}
	})
}

// BenchmarkScriptedStream streams and drains one step (a text and one tool
// call), as the runtime does for each model call.
func BenchmarkScriptedStream(b *testing.B) {
	s := mustParse(b, `
agents:
  numbered:
    turns:
      - steps:
          - text: "Let me read the file."
            tool_calls:
              - name: read_file
                args: {path: notes.txt}
  fallback:
    fallback:
      steps:
        - text: "Let me read the file."
          tool_calls:
            - name: read_file
              args: {path: notes.txt}
  template:
    fallback:
      steps:
        - text: "You said: {{ .Input }}"
          tool_calls:
            - name: read_file
              id: call_1
              args: {path: notes.txt}
`)
	for _, agent := range []string{"numbered", "fallback", "template"} {
		b.Run(agent, func(b *testing.B) {
			req := request(agent, 1, 1, user("read my notes"))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				st, err := s.Stream(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := st.Recv(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
				st.Close()
			}
		})
	}
}

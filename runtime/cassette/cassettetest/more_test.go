package cassettetest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// A lead that delegates to three agents at once, whose turns run in
// parallel, then merges their reports.
const fanOutConfig = `
model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
    description: writes the code
  - name: tester
    description: tests the code
  - name: writer
    description: writes the docs
`

const fanOutScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "All done: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}
            - {name: call_agent, id: d3, args: {agent_id: writer, message: "document the parser"}}
        - text: "Delegated."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
  writer: {fallback: {steps: [{text: "docs written"}]}}
`

// TestFanOutReplaysTheSameEveryTime: children that run at once in the
// recording and in each replay give one transcript, with the recorded
// task IDs.
func TestFanOutReplaysTheSameEveryTime(t *testing.T) {
	_, cfg := writeSession(t, fanOutConfig, fanOutScript)
	live, tape := record(t, cfg, []cassette.Input{{Op: "ask", Agent: "lead", Instance: "k", Text: "build a parser"}})
	if !strings.Contains(live, "-> report of task task_") || !strings.Contains(live, "docs written") {
		t.Fatalf("the live session:\n%s", live)
	}
	c, err := cassette.Read(bytes.NewReader(tape))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Divergences) > 0 {
			t.Fatalf("divergences: %v", res.Divergences)
		}
		if res.Transcript != live {
			t.Fatalf("a replay differs:\n%s", golden.Diff("recording", "replay", live, res.Transcript))
		}
	}
}

// shout is a native extension under test: it upper-cases the turn's
// answer when its config says so.
func shout(upper bool) extensions.Factory {
	return func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				res, err := tc.Next(ctx)
				if err == nil && upper {
					cp := *res
					cp.Response.Content = strings.ToUpper(cp.Response.Content)
					res = &cp
				}
				return res, err
			})
			return nil
		}), nil
	}
}

// TestNativeExtensionUnderTest: an extension a Go test registers replays
// like any other, and a change in what it does shows in the transcript.
func TestNativeExtensionUnderTest(t *testing.T) {
	const cfgText = `
model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    extensions: [{name: shout}]
`
	_, cfg := writeSession(t, cfgText, "agents: {a: {fallback: {steps: [{text: 'hello there'}]}}}\n")
	inputs := []cassette.Input{{Op: "send", Agent: "a", Instance: "k", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"}}}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	live, err := cassettetest.Record(t.Context(), rec, inputs, cassettetest.Options{Config: cfg, Runtime: []runtime.Option{runtime.WithExtension("shout", shout(true))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(live.Transcript, `-> text_response turn-1 answered by shout: "HELLO THERE"`) {
		t.Fatalf("the live session:\n%s", live.Transcript)
	}
	c, err := cassette.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg, Runtime: []runtime.Option{runtime.WithExtension("shout", shout(false))}})
	if err != nil {
		t.Fatal(err)
	}
	// The model was asked the same: no divergence; the answer differs.
	if len(res.Divergences) > 0 {
		t.Errorf("divergences: %v", res.Divergences)
	}
	diff := golden.Diff("recording", "replay", live.Transcript, res.Transcript)
	if !strings.Contains(diff, "\n--> text_response turn-1 answered by shout: \"HELLO THERE\"\n") ||
		!strings.Contains(diff, "\n+-> text_response turn-1: \"hello there\"\n") || !strings.Contains(diff, "\n-msg-1 assistant [extension shout]: \"HELLO THERE\"\n") {
		t.Errorf("the diff does not show the changed answer:\n%s", diff)
	}
}

// TestApprovalSessionReplays: calls the rules ask about pause the turn
// (they run at once, so their pending items are made at once); a human
// approves one and denies the other; the replay makes the same
// decisions, pauses and answers.
func TestApprovalSessionReplays(t *testing.T) {
	const cfgText = `
workspace: ws
model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    tools: [read_file, execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`
	const script = `
agents:
  a:
    turns:
      - steps:
          - tool_calls:
              - {name: read_file, id: r1, args: {path: notes.txt}}
              - {name: execute_command, id: x1, args: {command: "echo one"}}
              - {name: execute_command, id: x2, args: {command: "echo two"}}
      - steps:
          - text: "Results: {{ .LastMessage }}"
`
	dir, _ := writeSession(t, cfgText, script)
	must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("default: ask\nrules:\n  - name: reads\n    when: tool.category == \"read\"\n    decision: approve\n"), 0o644))
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	must(t, err)
	inputs := []cassette.Input{
		{Op: "send", Agent: "a", Instance: "k", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "go"}},
		{Op: "answer", Text: "approve"},
		{Op: "answer", Text: "deny"},
	}
	live, tape := record(t, cfg, inputs)
	for _, want := range []string{`approval.decided a/k turn-1 (approval) {"call_id":"r1","decision":"approve"`, "-> paused turn-1",
		`"call_id":"x1","content":"one\n"`, "denied it", `-> text_response turn-2: "Results: `} {
		if !strings.Contains(live, want) {
			t.Errorf("the live transcript lacks %q:\n%s", want, live)
		}
	}
	c, err := cassette.Read(bytes.NewReader(tape))
	must(t, err)
	for range 3 {
		res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg})
		must(t, err)
		if len(res.Divergences) > 0 {
			t.Fatalf("divergences: %v", res.Divergences)
		}
		if res.Transcript != live {
			t.Fatalf("the replay differs:\n%s", golden.Diff("recording", "replay", live, res.Transcript))
		}
	}
}

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// charPattern returns n characters, cycling through chars.
func charPattern(n int, chars string) string {
	rs := []rune(chars)
	var b strings.Builder
	for i := range n {
		b.WriteRune(rs[i%len(rs)])
	}
	return b.String()
}

// TestDelegationLongReport: a response over 2000 characters is saved to a
// file, and the report gives its path and first 500 characters.
func TestDelegationLongReport(t *testing.T) {
	const ascii = "0123456789abcdefghijklmnopqrstuvwxyz "
	const wide = "éà€𝄞x" // 2-, 3- and 4-byte characters: the limit counts characters
	tests := []struct {
		name     string
		response string
		file     bool
		outputs  string // "": WithOutputsDir(t.TempDir()); else the config's outputs
	}{
		{"2000 characters whole", charPattern(2000, ascii), false, ""},
		{"2001 characters to a file", charPattern(2001, ascii), true, ""},
		{"2000 wide characters whole", charPattern(2000, wide), false, ""},
		{"2001 wide characters to a file", charPattern(2001, wide), true, ""},
		{"5000 characters to a file", charPattern(5000, ascii), true, ""},
		{"outputs from the config", charPattern(3000, ascii), true, "out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := `
agents:
  - name: lead
    tools: [call_agent]
  - name: writer
`
			var opts []runtime.Option
			dir := t.TempDir()
			if tt.outputs == "" {
				opts = append(opts, runtime.WithOutputsDir(dir))
			} else {
				cfg = "outputs: " + tt.outputs + "\n" + cfg
			}
			h := newHarness(t, cfg, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Got it."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: writer, message: "write a lot"}}]
        - text: "waiting"
  writer: {fallback: {steps: [{text: `+strconv.Quote(tt.response)+`}]}}
`, opts...)
			if tt.outputs != "" {
				dir = filepath.Join(h.dir, tt.outputs)
			}
			if rep := mustAsk(t, h.rt, "lead", "k", "write"); rep.Response != "Got it." {
				t.Errorf("Ask = %q", rep.Response)
			}
			lead := mustHistory(t, h.rt, "lead", "k")
			child := delegatedTo(t, lead, "d1")
			reps := reportInputs(lead)
			if len(reps) != 1 {
				t.Fatalf("%d reports", len(reps))
			}
			path := filepath.Join(dir, "result_"+child+".txt")
			wantResp := tt.response
			if tt.file {
				wantResp = "[Task complete] Full result: " + path + "\n\nSummary:\n" + string([]rune(tt.response)[:500]) + "..."
			}
			want := wantReminder("user", "write", "writer: write a lot") + "[Delegation report]\n" + wantSection("writer", child, wantResp, false)
			if reps[0].Content != want {
				t.Errorf("report:\n%q\nwant:\n%q", reps[0].Content, want)
			}
			got, err := os.ReadFile(path)
			switch {
			case !tt.file && !errors.Is(err, os.ErrNotExist):
				t.Errorf("a response reported whole was saved too: %v", err)
			case tt.file && err != nil:
				t.Errorf("the long response is not saved: %v", err)
			case tt.file && string(got) != tt.response:
				t.Errorf("the file holds %d bytes, want the %d of the response", len(got), len(tt.response))
			}
			if tt.file && !filepath.IsAbs(path) {
				t.Errorf("path %s is not absolute", path)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(leftovers) != 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// TestDelegationOutputsBesideData: a config built in code without
// outputs saves long reports in "outputs" beside the data directory, as
// the runtime's setOutputs documents.
func TestDelegationOutputsBesideData(t *testing.T) {
	dir := t.TempDir()
	sc, err := scripted.Parse("script.yaml", []byte(`
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Got it."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: writer, message: "write a lot"}}]
        - text: "waiting"
  writer: {fallback: {steps: [{text: `+strconv.Quote(charPattern(2500, "abc"))+`}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.File{Data: filepath.Join(dir, "data"), Agents: []config.Agent{{Name: "lead", Tools: []string{"call_agent"}, MaxSteps: 5}, {Name: "writer", MaxSteps: 5}}}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithModel(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	mustAsk(t, rt, "lead", "k", "write")
	child := delegatedTo(t, mustHistory(t, rt, "lead", "k"), "d1")
	want := filepath.Join(dir, "outputs", "result_"+child+".txt")
	if _, err := os.Stat(want); err != nil {
		wrong := filepath.Join(os.TempDir(), "ganglion-outputs", "result_"+child+".txt")
		if _, err := os.Stat(wrong); err == nil {
			os.Remove(wrong)
			t.Fatalf("the long report went to %s, not beside the data directory (%s)", wrong, want)
		}
		t.Errorf("no file %s: %v", want, err)
	}
}

// TestDelegationChildFails: a child whose turn fails reports the failure;
// the parent still answers.
func TestDelegationChildFails(t *testing.T) {
	h := newHarness(t, fanOutConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Partly done."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}
        - text: "waiting"
  coder: {fallback: {steps: [{error: "boom"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskCompleted)
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "Partly done." || rep.Error != "" {
		t.Errorf("Ask = %+v", rep)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	c1, c2 := delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2")
	want := wantReminder("user", "build a parser", "coder: write the parser", "tester: test the parser") +
		"[Merged report of 2 parallel delegations]\n" +
		wantSection("coder", c1, `Task failed: agent coder could not finish it: agent "coder" instance "k" turn-1: model: boom`, true) +
		wantSection("tester", c2, "all tests pass", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
	var failed []string
	for _, ev := range log.get(events.TaskCompleted) {
		failed = append(failed, fmt.Sprint(ev.Agent, " ", evData(ev)["failed"]))
	}
	slices.Sort(failed)
	checkLines(t, "completions", failed, []string{"coder true", "lead false", "tester false"})
	waitNoTasks(t, h.rt)
}

// TestDelegationRootFails: a root task whose report turn fails answers
// Ask with the error.
func TestDelegationRootFails(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{error: "report lost"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	if rep == nil || err == nil {
		t.Fatalf("Ask = %+v, %v; want the task's failure", rep, err)
	}
	wantErr := `agent "lead" instance "k" turn-2: model: report lost`
	if rep.Error != wantErr || rep.Response != "" || err.Error() != "task "+rep.TaskID+": "+wantErr {
		t.Errorf("Ask = %+v, %v", rep, err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if evs := log.get(events.TaskAnswered); len(evs) != 1 || evData(evs[0])["error"] != wantErr {
		t.Errorf("task.answered = %+v", evs)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationTurnFailsAfterDelegating: a turn that fails after its
// call_agent still delegated: its history says so, its task waits, and the
// report turn answers it.
func TestDelegationTurnFailsAfterDelegating(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Recovered: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}]
        - error: "model down"
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	res, err := h.send(context.Background(), "lead", "k", "build a parser")
	if err == nil || err.Error() != `agent "lead" instance "k" turn-1: model: model down` || res.FinishReason != pipeline.FinishError || res.TaskID == "" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	lead := mustHistory(t, h.rt, "lead", "k")
	child := delegatedTo(t, lead, "d1")
	want := "Recovered: " + wantReminder("user", "build a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", child, "parser written", false)
	if d := evData(log.get(events.TaskAnswered)[0]); d["task_id"] != res.TaskID || d["response"] != want || d["error"] != nil {
		t.Errorf("task.answered = %v\nwant the response %q", d, want)
	}
	waitNoTasks(t, h.rt)
}

// slowLanding is a Transport whose Deliver, for the turns of one agent's
// own tasks, returns only once until() holds: a networked transport's
// latency between a turn's end and its caller learning of it.
type slowLanding struct {
	rt    *runtime.Runtime
	agent string
	until func() bool
}

func (s *slowLanding) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	res, err := s.rt.Deliver(ctx, agent, key, in)
	if agent == s.agent && in.Kind == pipeline.InputAgentRequest {
		for deadline := time.Now().Add(askTimeout); !s.until() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	return res, err
}

// TestDelegationReportWhileTurnLands: a child reports before the turn of
// its parent's task that delegated to it has landed (its Deliver has not
// returned); the parent's merged report must still be handed over.
func TestDelegationReportWhileTurnLands(t *testing.T) {
	slow := &slowLanding{agent: "b"}
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: b, message: "ask c"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: c, message: "answer"}}]
        - text: "asked c"
  c: {fallback: {steps: [{text: "C says 42"}]}}
`, runtime.WithTransport(slow))
	slow.rt = h.rt
	// b's turn lands only once c reported and b's task waits for its
	// report turn.
	slow.until = func() bool {
		ts, err := h.rt.Tasks(context.Background(), "b", "")
		return err == nil && len(ts) == 1 && ts[0].State == runtime.TaskReporting
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "a", "k", "question")
	if err != nil {
		// Seen at 89e1e35: b's task stayed reporting, as background() found
		// its ID in flight and dropped the report turn.
		t.Fatalf("Ask: %v\n%s", err, dumpTasks(h.rt))
	}
	if !strings.Contains(rep.Response, "C says 42") || !strings.Contains(rep.Response, "B relays: ") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
}

package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// partialConfig has coder load a WASM module the test swaps for an
// invalid one, and lead delegate to coder.
const partialConfig = modelLine + `
agents:
  - name: lead
    tools: [call_agent, list_agents]
  - name: coder
    description: writes the code
    extensions: [{name: protocol}, {name: guard, wasm: guard.wasm}]
`

const partialScript = `
agents:
  lead:
    turns:
      - match: "^delegate"
        steps:
          - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write it"}}]
          - text: "delegated: {{ .LastMessage }}"
      - match: "^who"
        steps:
          - tool_calls: [{name: list_agents, id: l1}]
          - text: "agents: {{ .LastMessage }}"
      - match: "Delegation report"
        steps: [{text: "final: {{ .Input }}"}]
    fallback: {steps: [{text: "lead heard {{ .Input }}"}]}
  coder:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: choice
              question: Which language?
              options: [Go, Rust]
              default: Go
              required: false
              [/USER_QUESTION]
    fallback: {steps: [{text: "coder wrote it in {{ .Input }}"}]}
`

// TestPartialLoad: an agent whose module fails to load leaves the others
// usable and its own stored work readable and intact; a runtime that loads
// it again carries on from there.
func TestPartialLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ganglion.yaml"), partialConfig)
	writeFile(t, filepath.Join(dir, "script.yaml"), partialScript)
	module := func(name string) {
		b, err := os.ReadFile(filepath.Join("..", "extensions", "wasm", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "guard.wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := store.NewMemory()
	c := &clock{}
	open := func(opts ...runtime.Option) (*runtime.Runtime, error) {
		return runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")),
			runtime.WithStore(st), runtime.WithClock(c.now), runtime.WithoutExpiryTimer()}, opts...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Before: coder loads; lead delegates, and coder pauses on a question.
	module("noop.wasm")
	rt, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("delegate the parser")); err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("delegating turn: %+v, %v", res, err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	items, err := rt.Pending(ctx, ledger.Filter{Agent: "coder", Status: ledger.Pending})
	if err != nil || len(items) != 1 {
		t.Fatalf("coder's pending items: %v, %v", items, err)
	}
	item := items[0]
	if !runtime.HasDeadline(rt) {
		t.Fatal("the question's deadline is not waited for")
	}
	tasksBefore, err := rt.Tasks(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	histBefore, err := rt.History(ctx, "coder", "k")
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, rt)

	// The module is replaced by one that fails validation.
	module("refuse_fuel.wasm")
	c.advance(2 * time.Hour) // past the question's deadline
	if _, err := open(); err == nil || !strings.Contains(err.Error(), `agent "coder": extension "guard"`) {
		t.Fatalf("New without WithPartialLoad: err = %v, want the agent and extension named", err)
	}
	rt, err = open(runtime.WithPartialLoad())
	if err != nil {
		t.Fatalf("New with WithPartialLoad: %v", err)
	}
	un := rt.Unavailable()
	if len(un) != 1 || un["coder"] == nil || !strings.Contains(un["coder"].Error(), `extension "guard"`) {
		t.Fatalf("Unavailable() = %v, want coder's load error", un)
	}
	if got := rt.Agents(); len(got) != 2 {
		t.Errorf("Agents() = %v, want both", got)
	}

	// The other agent runs.
	if res, err := rt.Send(ctx, "lead", "k2", runtime.UserMessage("hello")); err != nil || res.Response.Content != "lead heard hello" {
		t.Fatalf("lead's turn: %+v, %v", res, err)
	}
	// The model is told coder is unavailable, in list_agents and when it delegates.
	res, err := rt.Send(ctx, "lead", "k2", runtime.UserMessage("who is there"))
	if err != nil || !strings.Contains(res.Response.Content, `"name":"coder","description":"writes the code","unavailable":true`) {
		t.Fatalf("list_agents: %+v, %v", res, err)
	}
	res, err = rt.Send(ctx, "lead", "k2", runtime.UserMessage("delegate again"))
	if err != nil || !strings.Contains(res.Response.Content, `agent "coder" is unavailable: it failed to load`) {
		t.Fatalf("delegating to coder: %+v, %v", res, err)
	}
	if strings.Contains(res.Response.Content, "guard") {
		t.Errorf("the model saw the load error: %q", res.Response.Content)
	}

	// coder runs nothing, and says why.
	for name, call := range map[string]func() error{
		"Send": func() error {
			_, err := rt.Send(ctx, "coder", "k", runtime.UserMessage("hi"))
			return err
		},
		"Answer": func() error {
			_, err := rt.Answer(ctx, item.ID, "Rust")
			return err
		},
	} {
		err := call()
		if !errors.Is(err, runtime.ErrAgentUnavailable) || !strings.Contains(err.Error(), `extension "guard"`) {
			t.Errorf("%s: err = %v, want ErrAgentUnavailable with the load error", name, err)
		}
	}
	// Its deadline waits: the expiry loop has nothing to wait for (it would
	// spin on a deadline it cannot act on), and recovery leaves it alone.
	if runtime.HasDeadline(rt) {
		t.Error("the expiry loop waits for the deadline of an unavailable agent's item")
	}
	if expired, err := rt.ExpirePending(ctx); err != nil || len(expired) != 0 {
		t.Errorf("ExpirePending = %v, %v; want nothing expired", expired, err)
	}
	if err := rt.Recover(ctx); err != nil {
		t.Errorf("Recover: %v", err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	// What it has stored reads as before.
	if it, err := rt.PendingItem(ctx, item.ID); err != nil || it.Status != ledger.Pending {
		t.Errorf("item after the attempts: %+v, %v; want still pending", it, err)
	}
	if hist, err := rt.History(ctx, "coder", "k"); err != nil || len(hist) != len(histBefore) {
		t.Errorf("coder's history: %d messages, %v; want the %d stored", len(hist), err, len(histBefore))
	}
	if tasks, err := rt.Tasks(ctx, "", ""); err != nil || len(tasks) != len(tasksBefore) {
		t.Errorf("tasks: %v, %v; want the %d stored", tasks, err, len(tasksBefore))
	}
	mustClose(t, rt)

	// Fixed: the question expires with its default, coder answers, and the
	// report reaches lead.
	module("noop.wasm")
	rt, err = open()
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, rt)
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if it, err := rt.PendingItem(ctx, item.ID); err != nil || it.Status != ledger.Timeout {
		t.Errorf("item once coder loads: %+v, %v; want timeout", it, err)
	}
	hist, err := rt.History(ctx, "lead", "k")
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1].Content; !strings.HasPrefix(last, "final: ") || !strings.Contains(last, "coder wrote it in") {
		t.Errorf("lead's last message = %q, want the final answer with coder's report", last)
	}
}

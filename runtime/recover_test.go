package runtime_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// countingModel counts the model calls per agent.
type countingModel struct {
	model.Provider
	mu    sync.Mutex
	calls map[string]int
}

func (m *countingModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	m.mu.Lock()
	m.calls[req.Agent]++
	m.mu.Unlock()
	return m.Provider.Stream(ctx, req)
}

func (m *countingModel) count(agent string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[agent]
}

// TestRecoverAnsweredTask: a process that stopped after a child's turn
// answered but before its task recorded the answer (simulated by putting
// the tasks back as they were before the child ran) does not run the
// child again at the next start: the answer in its history completes the
// task, and the report reaches the parent.
func TestRecoverAnsweredTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	st, err := badger.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc, err := scripted.Parse("script.yaml", []byte(fanOutScript))
	if err != nil {
		t.Fatal(err)
	}
	open := func(m *countingModel) *runtime.Runtime {
		t.Helper()
		rt, err := runtime.New(ctx, runtime.WithConfig(parseConfig(t, dir, modelLine+fanOutConfig)), runtime.WithStore(st),
			runtime.WithModel(m), runtime.WithOutputsDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}

	first := &countingModel{Provider: sc, calls: map[string]int{}}
	rt := open(first)
	var snapshot []store.TaskRecord
	var once sync.Once
	rt.Events().Subscribe(events.TaskDelegated, func(events.Event) {
		once.Do(func() { snapshot, _ = st.ListTasks(context.Background(), "", "") })
	})
	rep, err := rt.Ask(ctx, "lead", "k", "build a parser")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Response, "parser written") {
		t.Fatalf("first answer = %q", rep.Response)
	}
	mustClose(t, rt)
	if len(snapshot) != 3 {
		t.Fatalf("snapshot of %d tasks, want the lead's and two children", len(snapshot))
	}
	if err := st.CommitTasks(ctx, snapshot, nil); err != nil {
		t.Fatal(err)
	}

	second := &countingModel{Provider: sc, calls: map[string]int{}}
	answered := make(chan events.Event, 1)
	bus := events.NewBus()
	bus.Subscribe(events.TaskAnswered, func(ev events.Event) { answered <- ev })
	rt, err = runtime.New(ctx, runtime.WithConfig(parseConfig(t, dir, modelLine+fanOutConfig)), runtime.WithStore(st),
		runtime.WithModel(second), runtime.WithEvents(bus))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	select {
	case ev := <-answered:
		if got := ev.Data.(events.TaskAnsweredData).Response; !strings.Contains(got, "parser written") || !strings.Contains(got, "all tests pass") {
			t.Errorf("recovered answer = %q", got)
		}
	case <-ctx.Done():
		t.Fatal("no answer after the restart")
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if n := second.count("coder") + second.count("tester"); n != 0 {
		t.Errorf("the children's model ran %d times after the restart, want 0: their answers were stored", n)
	}
	for _, child := range []string{"coder", "tester"} {
		inputs := 0
		for _, m := range mustHistory(t, rt, child, "k") {
			if m.Role == "user" {
				inputs++
			}
		}
		if inputs != 1 {
			t.Errorf("%s has %d inputs, want 1", child, inputs)
		}
	}
	if ts, err := rt.Tasks(ctx, "", ""); err != nil || len(ts) != 0 {
		t.Errorf("tasks left: %v, %v", ts, err)
	}
}

// TestReportWhileTheDelegatingTurnReturns: a middle agent's child can
// report before the middle agent's own turn has returned (here its
// turn.finished handler is slow); the report turn then runs after that
// turn, instead of being skipped because the task's turn was running.
func TestReportWhileTheDelegatingTurnReturns(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: planner
    tools: [call_agent]
  - name: architect
    tools: [call_agent]
  - name: engineer
`, `
agents:
  planner:
    turns: [{match: "report", steps: [{text: "planner: {{ .Input }}"}]}]
    fallback: {steps: [{tool_calls: [{name: call_agent, args: {agent_id: architect, message: "design it"}}]}, {text: "asked the architect"}]}
  architect:
    turns: [{match: "report", steps: [{text: "design approved by the engineer"}]}]
    fallback: {steps: [{tool_calls: [{name: call_agent, args: {agent_id: engineer, message: "check it"}}]}, {text: "asked the engineer"}]}
  engineer: {fallback: {steps: [{text: "checked"}]}}
`)
	slow := make(chan struct{})
	h.rt.Events().Subscribe(events.TurnFinished, func(ev events.Event) {
		if ev.Agent == "architect" && ev.TurnID == "turn-1" {
			<-slow // until the engineer has reported
		}
	})
	h.rt.Events().Subscribe(events.TaskCompleted, func(ev events.Event) {
		if ev.Agent == "engineer" {
			// Its report is committed, and the architect's report turn
			// asked for, right after this event: let that happen while the
			// architect's first turn has still not returned.
			go func() {
				time.Sleep(50 * time.Millisecond)
				close(slow)
			}()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "planner", "k", "plan it")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Response, "design approved by the engineer") {
		t.Errorf("answer = %q", rep.Response)
	}
}

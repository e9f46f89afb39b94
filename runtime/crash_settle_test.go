package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// A task's turn stores its answer in one commit, and the task records what
// the answer did to it (completed, reported to its parent, paused) in the
// next. These tests kill the process between the two, for each kind of
// turn a task runs: the next process must find the answer in the history
// and settle the task with it, not run the turn again, and not leave the
// task waiting for a turn that will never come.

const settleConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: mid
    tools: [call_agent, effect]
    extensions: [{name: protocol}]
  - name: worker
    extensions: [{name: protocol}]
`

// settleScript is a chain lead → mid → worker. mid's report turn runs the
// effect, then answers MID_REPORT (replaced per case); worker answers
// WORKER_REQUEST, and its resume turn answers "worker resumed".
const settleScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "LEAD DONE"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: mid, message: "plan it"}}]
        - text: "lead delegated"
  mid:
    turns:
      - match: "Delegation report"
        steps:
          - tool_calls: [{name: effect, id: r1}]
          - text: MID_REPORT
      - match: "Answer to your question"
        steps: [{text: "MID DONE"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d2, args: {agent_id: worker, message: "build it"}}]
        - text: "mid delegated"
  worker:
    turns:
      - match: "Answer to your question"
        steps: [{text: "worker resumed"}]
    fallback:
      steps: [{text: WORKER_REQUEST}]
`

const settleQuestion = `"[USER_QUESTION]\ncategory: choice\nquestion: Which way?\noptions: [Left, Right]\nrequired: true\n[/USER_QUESTION]"`

// TestCrashBetweenAnswerAndTask: the process dies right after the commit
// that stores a task turn's answer (or its question), before the task
// records it. After the restart the chain finishes with each turn run once.
func TestCrashBetweenAnswerAndTask(t *testing.T) {
	tests := []struct {
		name          string
		midReport     string // mid's report turn's answer
		workerRequest string // worker's answer to its request
		dieAfter      string // the stored message the process dies after
		// answerFirst: the question to answer before the death (its
		// resume turn's answer is dieAfter); answerAfter: the question
		// to answer after the restart.
		answerFirst, answerAfter string
		// inputs are the turn inputs each history must hold once each
		// (and no other), by a text they contain.
		inputs map[string][]string
	}{
		{name: "request turn of a child", midReport: `"MID DONE"`, workerRequest: `"worker done"`, dieAfter: "worker done",
			inputs: map[string][]string{"worker": {"build it"}, "mid": {"plan it", "Delegation report"}}},
		{name: "report turn of a child", midReport: `"MID DONE"`, workerRequest: `"worker done"`, dieAfter: "MID DONE",
			inputs: map[string][]string{"worker": {"build it"}, "mid": {"plan it", "Delegation report"}}},
		{name: "report turn of the root", midReport: `"MID DONE"`, workerRequest: `"worker done"`, dieAfter: "LEAD DONE",
			inputs: map[string][]string{"worker": {"build it"}, "mid": {"plan it", "Delegation report"}}},
		{name: "resume turn of a paused child", midReport: `"MID DONE"`, workerRequest: settleQuestion, answerFirst: "worker",
			dieAfter: "worker resumed",
			inputs:   map[string][]string{"worker": {"build it", "Answer to your question"}, "mid": {"plan it", "Delegation report"}}},
		{name: "report turn that asks", midReport: settleQuestion, workerRequest: `"worker done"`, dieAfter: "[USER_QUESTION]",
			answerAfter: "mid",
			inputs:      map[string][]string{"worker": {"build it"}, "mid": {"plan it", "Delegation report", "Answer to your question"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			script := strings.NewReplacer("MID_REPORT", tt.midReport, "WORKER_REQUEST", tt.workerRequest).Replace(settleScript)
			mem := store.NewMemory()
			var died string
			ds := &dyingStore{Store: mem}
			ds.dieAfter = func(b store.Batch) bool {
				for _, r := range b.Put {
					if m := r.Message; m.Role == pipeline.RoleAssistant && strings.Contains(m.Content, tt.dieAfter) {
						died = m.Content
						return true
					}
				}
				return false
			}
			e := newEffectTool()
			e.runs.Store(1) // never blocks
			rt, _ := newCrashRuntime(t, settleConfig, script, ds, runtime.WithTool(e.tool()))
			if _, err := rt.Send(ctx, "lead", "k", runtime.UserMessage("go")); err != nil {
				t.Fatal(err)
			}
			if tt.answerFirst != "" {
				if err := rt.WaitTasks(ctx); err != nil {
					t.Fatal(err)
				}
				// The resume turn answers, and the process dies: the
				// answer fails to reach the task.
				if err := answerOpen(t, rt, tt.answerFirst); !errors.Is(err, errDied) {
					t.Fatalf("Answer before the death = %v, want %v", err, errDied)
				}
			}
			waitUntil(t, "the process dies after "+tt.dieAfter, ds.dead.Load)
			if err := rt.WaitTasks(ctx); err != nil {
				t.Fatal(err)
			}
			mustClose(t, rt)
			if died == "" {
				t.Fatal("died after no message")
			}

			bus, answered := answeredEvents()
			rt2, _ := newCrashRuntime(t, settleConfig, script, mem, runtime.WithTool(e.tool()), runtime.WithEvents(bus))
			if tt.answerAfter != "" {
				if err := rt2.WaitTasks(ctx); err != nil {
					t.Fatal(err)
				}
				if err := answerOpen(t, rt2, tt.answerAfter); err != nil {
					t.Fatalf("Answer: %v", err)
				}
			}
			ev := awaitEvent(t, answered, "the chain's answer after the restart")
			waitNoTasks(t, rt2)
			if d := evData(ev); d["response"] != "LEAD DONE" {
				t.Errorf("task.answered = %+v, want the response LEAD DONE", d)
			}
			select {
			case ev := <-answered:
				t.Errorf("a second task.answered: %+v", evData(ev))
			case <-time.After(50 * time.Millisecond):
			}
			if n := e.runs.Load() - 1; n != 1 {
				t.Errorf("mid's report turn ran the effect %d times, want once", n)
			}
			for _, agent := range []string{"lead", "mid", "worker"} {
				msgs := mustHistory(t, rt2, agent, "k")
				want := tt.inputs[agent]
				if agent == "lead" {
					want = []string{"go", "Delegation report"}
				}
				if got := turnInputs(msgs); !matchInputs(got, want) {
					t.Errorf("%s's turn inputs:\n%s\nwant one each of %q; history:\n%s", agent, strings.Join(got, "\n"), want, strings.Join(describeAll(msgs), "\n"))
				}
			}
			if items, err := rt2.Pending(ctx, ledger.Filter{Open: true}); err != nil || len(items) != 0 {
				t.Errorf("open items = %+v, %v", items, err)
			}
		})
	}
}

// answerOpen answers agent's one open question with its first option, and
// returns Answer's error.
func answerOpen(t *testing.T, rt *runtime.Runtime, agent string) error {
	t.Helper()
	items, err := rt.Pending(context.Background(), ledger.Filter{Agent: agent, Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("open items of %s = %+v, %v", agent, items, err)
	}
	_, err = rt.Answer(context.Background(), items[0].ID, "left")
	return err
}

// turnInputs returns the first line of each turn input of msgs.
func turnInputs(msgs []pipeline.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == pipeline.RoleUser {
			first, _, _ := strings.Cut(m.Content, "\n")
			if strings.HasPrefix(first, "[System notice") {
				first = "Delegation report"
			}
			out = append(out, first)
		}
	}
	return out
}

// matchInputs reports whether got holds, in order, one input containing
// each of want, and nothing else.
func matchInputs(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.Contains(got[i], want[i]) {
			return false
		}
	}
	return true
}

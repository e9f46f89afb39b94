package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

const askerConfig = `
agents:
  - name: lead
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: asker
    extensions: [{name: protocol}]
`

// askerScript: lead delegates to asker, which asks a human when told to.
const askerScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: asker, message: "the task"}}]
        - text: "waiting"
  asker:
    turns:
      - match: "^Answer to your question"
        steps: [{text: "resumed"}]
      - match: "^please ask"
        steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old?
              default: 30
              required: true
              [/USER_QUESTION]
    fallback: {steps: [{text: "task done"}]}
`

// TestDelegationPausedChild: a child that asks the human reports only
// once the human answered.
func TestDelegationPausedChild(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, askerConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: asker, message: "find out the age"}}]
        - text: "waiting"
  asker:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old?
              default: 30
              required: true
              [/USER_QUESTION]
      - steps:
          - text: "Got {{ .LastMessage }}"
`, runtime.WithoutExpiryTimer())
	asked := goAsk(h.rt, "lead", "k", "how old is the user?")
	var items []ledger.Item
	waitUntil(t, "the asker asks", func() bool {
		items, _ = h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
		return len(items) == 1
	})
	waitUntil(t, "the asker's task is paused", func() bool {
		ts := mustTasks(t, h.rt, "asker", "k")
		return len(ts) == 1 && ts[0].State == runtime.TaskPaused
	})
	child := taskOf(t, h.rt, "asker")
	if child.Turn != "turn-1" || items[0].Kind != protocol.ItemQuestion || items[0].TurnID != "turn-1" {
		t.Errorf("paused task = %+v, item = %+v", child, items[0])
	}
	if root := taskOf(t, h.rt, "lead"); root.State != runtime.TaskWaiting || root.Pending != 1 || len(root.Context.Responses) != 0 {
		t.Errorf("root task = %+v", root)
	}
	select {
	case r := <-asked:
		t.Fatalf("Ask returned before the human answered: %+v, %v", r.rep, r.err)
	default:
	}
	if turns := h.rec.turnsOf("lead", "k", ""); len(turns) != 1 {
		t.Errorf("lead turns before the answer = %v, want one", turns)
	}

	res, err := h.rt.Answer(ctx, items[0].ID, "32")
	if err != nil || res.FinishReason != pipeline.FinishText || res.TaskID != child.ID || res.Response.Content != `Got Answer to your question "How old?": 32` {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	r := awaitAsk(t, asked)
	if r.err != nil || !strings.Contains(r.rep.Response, wantSection("asker", child.ID, `Got Answer to your question "How old?": 32`, false)) {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationPausedParent: a parent that delegates and asks the human
// in one turn gets its report after the human answered, whichever comes
// first: the child's report or the answer.
func TestDelegationPausedParent(t *testing.T) {
	const script = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
      - match: "Answer to your question"
        steps: [{text: "Noted the answer."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: asker, message: "do the work"}}]
        - text: |
            While that runs:
            [USER_QUESTION]
            category: clarification
            question: Which colour?
            default: blue
            required: true
            [/USER_QUESTION]
  asker: {fallback: {steps: [{text: "work done"}]}}
`
	for _, childFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("child first %v", childFirst), func(t *testing.T) {
			ctx := context.Background()
			h, gm := newGatedHarness(t, askerConfig, script, runtime.WithoutExpiryTimer())
			g := gm.hold("asker", "")
			log := watchEvents(h.rt.Events(), events.TaskAnswered)
			_, err := h.rt.Ask(ctx, "lead", "k", "paint it")
			if !errors.Is(err, runtime.ErrPaused) || err.Error() != `agent "lead" instance "k" turn-1: paused: answer its pending items (ganglion pending)` {
				t.Fatalf("Ask = %v, want paused", err)
			}
			root := taskOf(t, h.rt, "lead")
			if root.State != runtime.TaskPaused || root.Turn != "turn-1" || root.Pending != 1 {
				t.Errorf("root task = %+v", root)
			}
			items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "lead", Instance: "k", Open: true})
			if err != nil || len(items) != 1 {
				t.Fatalf("pending = %+v, %v", items, err)
			}
			g.waitStarted(t, "the asker")
			if childFirst {
				g.open()
				waitUntil(t, "the child reports", func() bool { return len(mustTasks(t, h.rt, "asker", "")) == 0 })
				root = taskOf(t, h.rt, "lead")
				if root.State != runtime.TaskPaused || root.Pending != 0 || len(root.Context.Responses) != 1 {
					t.Errorf("root task after the report = %+v", root)
				}
				if turns := h.rec.turnsOf("lead", "k", "Delegation report"); len(turns) != 0 {
					t.Errorf("a report turn ran while the lead was paused: %v", turns)
				}
			}
			res, err := h.rt.Answer(ctx, items[0].ID, "red")
			if err != nil || res.FinishReason != pipeline.FinishDelegated || res.TaskID != root.ID || res.Response.Content != "Noted the answer." {
				t.Fatalf("Answer = %+v, %v", res, err)
			}
			if !childFirst {
				if root := taskOf(t, h.rt, "lead"); root.State != runtime.TaskWaiting || root.Pending != 1 {
					t.Errorf("root task after the answer = %+v", root)
				}
				g.open()
			}
			waitUntil(t, "the root answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
			d := evData(log.get(events.TaskAnswered)[0])
			if resp, _ := d["response"].(string); !strings.HasPrefix(resp, "Final: "+wantReminder("user", "paint it", "asker: do the work")) ||
				!strings.Contains(resp, "work done") || d["task_id"] != root.ID {
				t.Errorf("task.answered = %v", d)
			}
			waitNoTasks(t, h.rt)
			if turns := h.rec.turnsOf("lead", "k", "Delegation report"); len(turns) != 1 {
				t.Errorf("report turns = %v, want one", turns)
			}
		})
	}
}

// TestDelegationToPausedInstance: a task for an instance paused by a
// human's pending item waits, and runs once the instance resumes.
func TestDelegationToPausedInstance(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, askerConfig, askerScript, runtime.WithoutExpiryTimer())
	if res := h.mustSend("asker", "k", "please ask"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("asker = %+v", res)
	}
	asked := goAsk(h.rt, "lead", "k", "go")
	waitUntil(t, "the asker's task is stored", func() bool { return len(mustTasks(t, h.rt, "asker", "k")) == 1 })
	// The task cannot start while the instance is paused: its turn is
	// refused, and nothing runs in the background any more.
	if err := h.rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if tk := taskOf(t, h.rt, "asker"); tk.State != runtime.TaskQueued {
		t.Errorf("task of the paused instance = %+v", tk)
	}
	if turns := h.rec.turnsOf("asker", "k", "the task"); len(turns) != 0 {
		t.Fatalf("the task ran on a paused instance: %v", turns)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	if res, err := h.rt.Answer(ctx, items[0].ID, "40"); err != nil || res.Response.Content != "resumed" || res.TaskID != "" {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	r := awaitAsk(t, asked)
	if r.err != nil || !strings.Contains(r.rep.Response, "task done") {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
}

// pausedHook is a Transport that delivers in process and, the first time a
// turn is refused because its instance is paused, runs onPaused before
// returning the refusal: what a human answering at that moment does.
type pausedHook struct {
	rt       *runtime.Runtime
	mu       sync.Mutex
	onPaused func()
}

func (p *pausedHook) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	res, err := p.rt.Deliver(ctx, agent, key, in)
	if errors.Is(err, runtime.ErrPaused) {
		p.mu.Lock()
		f := p.onPaused
		p.onPaused = nil
		p.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return res, err
}

// TestDelegationPausedInstanceResumesMeanwhile: the instance a task waits
// for resumes between the task's refused turn and the runtime noting that
// the task waits: the task must still run.
func TestDelegationPausedInstanceResumesMeanwhile(t *testing.T) {
	ctx := context.Background()
	hook := &pausedHook{}
	h := newHarness(t, askerConfig, askerScript, runtime.WithoutExpiryTimer(), runtime.WithTransport(hook))
	hook.rt = h.rt
	if res := h.mustSend("asker", "k", "please ask"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("asker = %+v", res)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	answered := make(chan error, 1)
	hook.onPaused = func() {
		_, err := h.rt.Answer(ctx, items[0].ID, "40")
		answered <- err
	}
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel() // the Ask is left waiting when the bug shows
	asked := make(chan askResult, 1)
	go func() {
		rep, err := h.rt.Ask(askCtx, "lead", "k", "go")
		asked <- askResult{rep, err}
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("Answer: %v", err)
		}
	case <-time.After(askTimeout):
		t.Fatal("the task's turn was never refused")
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(mustTasks(t, h.rt, "", "")) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ts := mustTasks(t, h.rt, "", ""); len(ts) > 0 {
		var states []string
		for _, tk := range ts {
			states = append(states, tk.Agent+" "+string(tk.State))
		}
		t.Fatalf("a task refused while its instance was paused did not run after the instance resumed: "+
			"tasks left: %v", states)
	}
	if r := awaitAsk(t, asked); r.err != nil || !strings.Contains(r.rep.Response, "task done") {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
}

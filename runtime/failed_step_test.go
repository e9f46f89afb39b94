package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// secretsDown is a store whose listing of secrets fails once armed, as a
// NATS server's stop makes a request fail.
type secretsDown struct {
	store.Store
	armed atomic.Bool
}

func (s *secretsDown) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	if s.armed.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("store: list secrets of agent %q instance %q: the server did not answer within 10s (test): %w", agent, key, store.ErrUnavailable)
	}
	return s.Store.ListSecrets(ctx, agent, key)
}

const failedStepScript = `
agents:
  a:
    turns:
      - match: "first"
        steps:
          - tool_calls: [{name: effect, id: c1}]
          - text: "first answered"
      - match: "second"
        steps: [{text: "second answered"}]
`

// TestTurnAfterAFailedStep: a turn that fails between storing a step's
// tool calls and their results (the instance's secrets, which commands
// get, could not be read) leaves no call without its result before the
// next turn's input: the calls get their "interrupted" result first. The
// cluster soak saw worker/w-1's turn fail so ("list secrets: ... the
// server did not answer within 10s"), and the next turn's user message
// stored while the call waited for its result, which a later load gave it
// after three more messages.
func TestTurnAfterAFailedStep(t *testing.T) {
	var ran atomic.Int32
	effect := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "effect", Description: "Has an effect.", Category: pipeline.CategoryOther},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			ran.Add(1)
			return &pipeline.ToolResult{Content: "done"}, nil
		}}
	st := &secretsDown{Store: store.NewMemory()}
	rt, _ := newCrashRuntime(t, "agents:\n  - name: a\n    tools: [effect]\n", failedStepScript, st, runtime.WithTool(effect))
	ctx := context.Background()
	st.armed.Store(true)
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("first")); err == nil || !strings.Contains(err.Error(), "list secrets") {
		t.Fatalf("the turn whose secrets could not be read: %v, want its error", err)
	}
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("second")); err != nil || res.Response.Content != "second answered" {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
	msgs, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	open := map[string]bool{}
	for _, m := range msgs {
		lines = append(lines, fmt.Sprintf("%s: %q %v %q", m.Role, m.Content, m.ToolCalls, m.ToolCallID))
		switch {
		case m.Role == pipeline.RoleTool && !open[m.ToolCallID]:
			t.Errorf("a result for call %s, which has one or was not just made", m.ToolCallID)
		case m.Role == pipeline.RoleTool:
			delete(open, m.ToolCallID)
		case len(open) > 0:
			t.Errorf("a %s message comes while calls %v wait for their results", m.Role, open)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if len(open) > 0 {
		t.Errorf("calls %v have no result", open)
	}
	if t.Failed() {
		t.Logf("history:\n%s", joinLines(lines))
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times; want never: its turn failed before it", n)
	}
}

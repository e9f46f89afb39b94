package pipeline_test

import (
	"testing"

	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// TestTurnHost checks the runtime's internal way to its turn state: what
// Set stores in a turn is read from the turn and its steps, what it stores
// in a tool call from the call, a reset forgets it, and neither call
// allocates.
func TestTurnHost(t *testing.T) {
	state := new(int)
	tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a"})
	sc := pipeline.NewStepContext(tc, 1, nil)
	cc := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Agent: "a"})
	for _, tt := range []struct {
		name string
		c    any
	}{{"turn", tc}, {"step", sc}, {"tool call", cc}, {"other", new(int)}, {"nil", nil}} {
		if got := turnhost.Get(tt.c); got != nil {
			t.Errorf("%s: Get before Set = %v, want nil", tt.name, got)
		}
	}
	turnhost.Set(tc, state)
	turnhost.Set(cc, state)
	for _, tt := range []struct {
		name string
		c    any
	}{{"turn", tc}, {"step", sc}, {"tool call", cc}} {
		if got := turnhost.Get(tt.c); got != state {
			t.Errorf("%s: Get = %v, want the state set", tt.name, got)
		}
	}
	tc.Reset(pipeline.TurnInfo{Agent: "a"})
	cc.Reset(pipeline.ToolCallInfo{Agent: "a"})
	for _, c := range []any{tc, sc, cc} {
		if got := turnhost.Get(c); got != nil {
			t.Errorf("Get(%T) after Reset = %v, want nil", c, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		turnhost.Set(tc, state)
		turnhost.Set(cc, state)
		_ = turnhost.Get(sc)
		_ = turnhost.Get(cc)
	}); n != 0 {
		t.Errorf("Set and Get allocate %v times, want 0", n)
	}
	func() {
		defer func() {
			r := recover()
			if want := "turnhost.Set: *pipeline.StepContext holds no turn state"; r != want {
				t.Errorf("Set on a step panics with %v, want %q", r, want)
			}
		}()
		turnhost.Set(sc, state)
	}()
}

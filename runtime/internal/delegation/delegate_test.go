package delegation

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// errNoModule is why the fixture's agent "broken" failed to load.
var errNoModule = errors.New(`extension "guard": no such module`)

// delegationFixture is a fixture with a system-level agent lead (peers
// worker and broken, and call_team_agent), worker, broken (failed to
// load), loner (nobody's peer), and the teams eng (dev, qa; qa's peer is
// dev) and ops (sre).
func delegationFixture(t *testing.T, opts ...option) *fixture {
	f := newFixture(t, []config.Team{{Name: "eng", Agents: []string{"dev", "qa"}}, {Name: "ops", Agents: []string{"sre"}}}, opts...)
	f.member("lead", Member{Peers: []string{"worker", "broken"}, CallsTeams: true})
	f.member("worker", Member{})
	f.member("broken", Member{Unavailable: errNoModule})
	f.member("loner", Member{})
	f.member("dev", Member{Team: "eng"})
	f.member("qa", Member{Team: "eng", Peers: []string{"dev"}})
	f.member("sre", Member{Team: "ops"})
	return f
}

// callArgs are a call_agent's or call_team_agent's arguments.
type callArgs struct {
	Team    string `json:"team,omitempty"`
	AgentID string `json:"agent_id"`
	Message string `json:"message"`
}

// TestDelegateRefusals: call_agent and call_team_agent refuse, with the
// exact error the model reads, a delegation to nobody, to itself, to an
// unknown or unavailable agent, outside the caller's peers (with the hint
// to use call_team_agent for a team's agent), into or out of a team the
// rules forbid, deeper than agent_calls.max_depth; and a refused call
// records no delegation.
func TestDelegateRefusals(t *testing.T) {
	f := delegationFixture(t, func(e *Env) { e.Depth = 2 })
	tests := []struct {
		name   string
		caller string
		meta   map[string]any // the turn's input metadata
		tool   string
		args   callArgs
		is     error
		want   string
	}{
		{"empty message", "lead", nil, ToolCallAgent, callArgs{AgentID: "worker", Message: " \n\t"}, nil,
			"message is empty: say what the agent is to do, with everything it needs"},
		{"to itself", "lead", nil, ToolCallAgent, callArgs{AgentID: "lead", Message: "do it"}, nil,
			"you cannot delegate to yourself (lead): do the task yourself, or delegate to another agent"},
		{"unknown agent", "lead", nil, ToolCallAgent, callArgs{AgentID: "ghost", Message: "do it"}, nil,
			`no agent "ghost"; you may delegate to: worker, broken, team eng (dev, qa), team ops (sre)`},
		{"unknown agent, caller without peers", "loner", nil, ToolCallAgent, callArgs{AgentID: "ghost", Message: "do it"}, nil,
			`no agent "ghost"; you may delegate to: nobody`},
		{"unavailable agent", "lead", nil, ToolCallAgent, callArgs{AgentID: "broken", Message: "do it"}, nil,
			`agent "broken" is unavailable: it failed to load; delegate to another agent or do the task yourself`},
		{"team's agent by call_agent", "lead", nil, ToolCallAgent, callArgs{AgentID: "dev", Message: "do it"}, nil,
			`agent "dev" is in team "eng": use call_team_agent with team "eng"`},
		{"system-level agent not a peer", "lead", nil, ToolCallAgent, callArgs{AgentID: "loner", Message: "do it"}, nil,
			`you may not delegate to "loner"; you may delegate to: worker, broken, team eng (dev, qa), team ops (sre)`},
		{"team's agent out of its team", "qa", nil, ToolCallAgent, callArgs{AgentID: "worker", Message: "do it"}, nil,
			`you are in team "eng" and may delegate only within it, to: dev`},
		{"team's agent to another team's", "qa", nil, ToolCallAgent, callArgs{AgentID: "sre", Message: "do it"}, nil,
			`you are in team "eng" and may delegate only within it, to: dev`},
		{"team's agent by call_team_agent", "qa", nil, ToolCallTeamAgent, callArgs{Team: "eng", AgentID: "dev", Message: "do it"}, nil,
			`you are in team "eng": a team's agents cannot delegate up or into another team`},
		{"no team named", "lead", nil, ToolCallTeamAgent, callArgs{AgentID: "dev", Message: "do it"}, nil,
			"team is empty: name a team that list_agents shows"},
		{"no such team", "lead", nil, ToolCallTeamAgent, callArgs{Team: "sales", AgentID: "dev", Message: "do it"}, nil,
			`no team "sales" (teams: eng, ops)`},
		{"agent not in the team", "lead", nil, ToolCallTeamAgent, callArgs{Team: "ops", AgentID: "dev", Message: "do it"}, nil,
			`team "ops" has no agent "dev" (its agents: sre)`},
		{"unknown agent by call_team_agent", "lead", nil, ToolCallTeamAgent, callArgs{Team: "ops", AgentID: "ghost", Message: "do it"}, nil,
			`no agent "ghost"; you may delegate to: worker, broken, team eng (dev, qa), team ops (sre)`},
		{"too deep", "lead", map[string]any{"taskChain": []any{"boss/k", "chief/k"}}, ToolCallAgent, callArgs{AgentID: "worker", Message: "do it"}, ErrDepth,
			"agent call chain too deep: boss/k → chief/k → lead/k → worker/k is deeper than 2; do the task yourself"},
		{"too deep through the callers waiting", "lead", map[string]any{"chain": []string{"boss/k", "chief/k"}}, ToolCallAgent, callArgs{AgentID: "worker", Message: "do it"}, ErrDepth,
			"agent call chain too deep: boss/k → chief/k → lead/k → worker/k is deeper than 2; do the task yourself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := f.turn(tt.caller, "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi", Metadata: tt.meta})
			res, err := f.call(ts, tt.tool, "call-1", tt.args, "call-1")
			if res != nil || errText(err) != tt.want {
				t.Fatalf("%s = %+v, %v\nwant nil, %s", tt.tool, res, err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not match %v", err, tt.is)
			}
			if n := len(turnOf(ts).delegs); n != 0 {
				t.Errorf("%d delegations recorded, want none", n)
			}
		})
	}
}

// TestDelegateAccepted: an accepted call_agent answers the model that the
// task starts when the turn ends, and records the delegation with its
// child's ID, the caller's instance key, the clock's time and its order
// within the step; call_team_agent records the team; a team's agent may
// call its peers.
func TestDelegateAccepted(t *testing.T) {
	f := delegationFixture(t)
	ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	res, err := f.call(ts, ToolCallAgent, "call-b", callArgs{AgentID: "worker", Message: "count the files"}, "call-a", "call-b")
	if err != nil {
		t.Fatal(err)
	}
	want := "Delegated to worker as task task_1. It starts when your turn ends; its report comes back to you as a new message. " +
		"Until then, do not say you have its result."
	if res.Content != want {
		t.Errorf("result = %q\nwant %q", res.Content, want)
	}
	if _, err := f.call(ts, ToolCallTeamAgent, "call-a", callArgs{Team: "eng", AgentID: "dev", Message: "fix the bug"}, "call-a", "call-b"); err != nil {
		t.Fatal(err)
	}
	wantDelegs := []delegation{
		{call: "call-b", child: "task_1", agent: "worker", key: "k", msg: "count the files", at: fixedNow, order: 1<<16 + 1},
		{call: "call-a", child: "task_2", agent: "dev", key: "k", team: "eng", msg: "fix the bug", at: fixedNow, order: 1 << 16},
	}
	if got := turnOf(ts).delegs; !reflect.DeepEqual(got, wantDelegs) {
		t.Errorf("delegations = %+v\nwant %+v", got, wantDelegs)
	}

	qa := f.turn("qa", "k2", "turn-2", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	if _, err := f.call(qa, ToolCallAgent, "call-1", callArgs{AgentID: "dev", Message: "review"}, "call-1"); err != nil {
		t.Errorf("a team's agent delegating to its peer: %v", err)
	}
}

// TestDelegateBudget: a turn that would take its tree past
// task_budget.delegations is refused, counting the delegations the turn
// made already and those its tree made, and task.budget_spent says so.
func TestDelegateBudget(t *testing.T) {
	f := delegationFixture(t)
	f.member("lead", Member{Peers: []string{"worker"}, Budget: config.Budget{Delegations: 2, Turns: 10, Tokens: 1000}})
	f.member("worker", Member{Peers: []string{"helper"}})
	f.member("helper", Member{})
	ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	for _, id := range []string{"call-1", "call-2"} {
		if _, err := f.call(ts, ToolCallAgent, id, callArgs{AgentID: "worker", Message: "do it"}, "call-1", "call-2", "call-3"); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	_, err := f.call(ts, ToolCallAgent, "call-3", callArgs{AgentID: "worker", Message: "do it"}, "call-1", "call-2", "call-3")
	want := "the delegation budget is spent: this request's tasks have delegated 2 times, and task_budget.delegations of agent lead allows 2. " +
		"Do the rest yourself, or answer with what the reports gave you"
	if errText(err) != want {
		t.Fatalf("third delegation: %v\nwant %s", err, want)
	}
	if got := len(turnOf(ts).delegs); got != 2 {
		t.Errorf("%d delegations recorded, want 2", got)
	}
	evs := f.published(events.TaskBudgetSpent)
	if len(evs) != 1 {
		t.Fatalf("%d task.budget_spent events, want 1", len(evs))
	}
	wantData := events.TaskBudgetSpentData{RootAgent: "lead", Budget: "delegations"}
	if got := evs[0].Data; got != wantData || evs[0].Agent != "lead" || evs[0].Instance != "k" || evs[0].TurnID != "turn-1" {
		t.Errorf("task.budget_spent = %+v, data %+v; want lead/k turn-1, %+v", evs[0], got, wantData)
	}

	// The two delegations are the tree's: its child may not delegate.
	f.commit(ts, nil)
	if _, err := f.d.End(ts, pipeline.InputEvent{}, &pipeline.TurnResult{FinishReason: pipeline.FinishText}, nil); err != nil {
		t.Fatal(err)
	}
	f.wait()
	child := f.delivered()[0]
	cts := f.turn(child.agent, child.key, "turn-2", child.in)
	_, err = f.call(cts, ToolCallAgent, "call-1", callArgs{AgentID: "helper", Message: "help"}, "call-1")
	want = "the delegation budget is spent: this request's tasks have delegated 2 times, and task_budget.delegations of agent lead allows 2. " +
		"Do the rest yourself, or answer with what the reports gave you"
	if errText(err) != want {
		t.Errorf("the child's delegation: %v\nwant %s", err, want)
	}
}

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// The teams of the team tests.
const teamConfig = `
agents:
  - name: boss
    tools: [call_agent, call_team_agent, list_agents]
  - name: helper
    description: helps the boss
    tools: [call_agent, list_agents]
  - name: dev
    description: develops
    tools: [call_agent, list_agents]
  - name: qa
    description: checks
    tools: [call_agent]
  - name: ops
    tools: [call_agent]
teams:
  - name: web
    description: builds the web app
    agents: [dev, qa]
  - name: infra
    agents: [ops]
`

// TestTeamDelegation: a system-level agent delegates into a team, whose
// agent delegates within it; a team agent cannot delegate up.
func TestTeamDelegation(t *testing.T) {
	h := newHarness(t, teamConfig, `
agents:
  boss:
    turns:
      - match: "Delegation report"
        steps: [{text: "Boss: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_team_agent, id: t1, args: {team: web, agent_id: dev, message: "build the site"}}]
        - text: "the web team is on it"
  dev:
    turns:
      - match: "Delegation report"
        steps: [{text: "site built, and qa says: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: up, args: {agent_id: boss, message: "help me"}}
            - {name: call_agent, id: side, args: {agent_id: helper, message: "help me"}}
            - {name: call_agent, id: other, args: {agent_id: ops, message: "deploy"}}
            - {name: call_agent, id: in, args: {agent_id: qa, message: "check the site"}}
        - text: "qa is on it"
  qa: {fallback: {steps: [{text: "the site checks out"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TeamActivated)
	rep := mustAsk(t, h.rt, "boss", "k", "make a website")
	if !strings.HasPrefix(rep.Response, "Boss: "+wantReminder("user", "make a website", "dev: build the site")) ||
		!strings.Contains(rep.Response, "site built, and qa says: ") || !strings.Contains(rep.Response, "the site checks out") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	dev := mustHistory(t, h.rt, "dev", "k")
	for id, want := range map[string]string{
		"up":    `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
		"side":  `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
		"other": `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
	} {
		if m := toolResult(t, dev, id); !m.IsError || m.Content != want {
			t.Errorf("dev's call %s = %s\nwant %s", id, describe(m), want)
		}
	}
	qaTask := delegatedTo(t, dev, "in")
	if got := reportInputs(dev); len(got) != 1 || got[0].Content != wantReminder("boss/k", "build the site", "qa: check the site")+"[Delegation report]\n"+
		wantSection("qa", qaTask, "the site checks out", false) {
		t.Errorf("dev's report = %+v", got)
	}
	if got := fmt.Sprint(dev[0].Metadata["team"], " ", dev[0].Metadata["callerAgent"]); got != "web boss" {
		t.Errorf("dev's input metadata = %v", dev[0].Metadata)
	}
	if qa := mustHistory(t, h.rt, "qa", "k"); qa[0].Metadata["team"] != nil || fmt.Sprint(qa[0].Metadata["taskChain"]) != "[boss/k dev/k]" {
		t.Errorf("qa's input metadata = %v", qa[0].Metadata)
	}
	for _, a := range []string{"helper", "boss"} {
		if turns := h.rec.turnsOf(a, "", "help me"); len(turns) != 0 {
			t.Errorf("%s ran a refused delegation: %v", a, turns)
		}
	}
	evs := log.get(events.TeamActivated)
	if len(evs) != 1 || evs[0].Instance != "k" || evData(evs[0])["team"] != "web" || fmt.Sprint(evData(evs[0])["agents"]) != "[dev qa]" {
		t.Errorf("team.activated = %+v", evs)
	}
	// The whole team started: qa's instance exists; ops' team did not.
	if keys, _ := h.rt.Instances(context.Background(), "ops"); len(keys) != 0 {
		t.Errorf("ops instances = %v", keys)
	}
}

// TestTeamRules: what call_agent and call_team_agent refuse around teams.
func TestTeamRules(t *testing.T) {
	tests := []struct{ name, agent, tool, args, want string }{
		{"system agent call_agent into a team", "boss", "call_agent", `{"agent_id":"dev","message":"x"}`,
			`tool "call_agent" failed: agent "dev" is in team "web": use call_team_agent with team "web"`},
		{"system agent without call_team_agent", "helper", "call_agent", `{"agent_id":"qa","message":"x"}`,
			`tool "call_agent" failed: agent "qa" is in team "web": use call_team_agent with team "web"`},
		{"unknown agent lists teams", "boss", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: helper, team web (dev, qa), team infra (ops)`},
		{"unknown agent without call_team_agent", "helper", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: boss`},
		{"team agent up", "qa", "call_agent", `{"agent_id":"boss","message":"x"}`,
			`tool "call_agent" failed: you are in team "web" and may delegate only within it, to: dev`},
		{"team agent into another team", "qa", "call_agent", `{"agent_id":"ops","message":"x"}`,
			`tool "call_agent" failed: you are in team "web" and may delegate only within it, to: dev`},
		{"team agent unknown", "qa", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: dev`},
		{"team agent to itself", "qa", "call_agent", `{"agent_id":"qa","message":"x"}`,
			`tool "call_agent" failed: you cannot delegate to yourself (qa): do the task yourself, or delegate to another agent`},
		{"unknown team", "boss", "call_team_agent", `{"team":"nope","agent_id":"dev","message":"x"}`,
			`tool "call_team_agent" failed: no team "nope" (teams: web, infra)`},
		{"empty team", "boss", "call_team_agent", `{"team":"","agent_id":"dev","message":"x"}`,
			`tool "call_team_agent" failed: team is empty: name a team that list_agents shows`},
		{"agent not in the team", "boss", "call_team_agent", `{"team":"web","agent_id":"ops","message":"x"}`,
			`tool "call_team_agent" failed: team "web" has no agent "ops" (its agents: dev, qa)`},
		{"system agent through call_team_agent", "boss", "call_team_agent", `{"team":"web","agent_id":"helper","message":"x"}`,
			`tool "call_team_agent" failed: team "web" has no agent "helper" (its agents: dev, qa)`},
		{"unknown agent in a team", "boss", "call_team_agent", `{"team":"web","agent_id":"ghost","message":"x"}`,
			`tool "call_team_agent" failed: no agent "ghost"; you may delegate to: helper, team web (dev, qa), team infra (ops)`},
		{"empty message", "boss", "call_team_agent", `{"team":"web","agent_id":"dev","message":""}`,
			`tool "call_team_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"itself through a team", "boss", "call_team_agent", `{"team":"web","agent_id":"boss","message":"x"}`,
			`tool "call_team_agent" failed: you cannot delegate to yourself (boss): do the task yourself, or delegate to another agent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, teamConfig, oneCallScript(tt.agent, tt.tool, tt.args))
			checkRefused(t, h, tt.agent, tt.want)
		})
	}
}

// TestTeamConfigRefusesCallTeamAgent: a team's agent may not list
// call_team_agent.
func TestTeamConfigRefusesCallTeamAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := parseConfig(t, dir, modelLine+`
agents:
  - name: boss
    tools: [call_team_agent]
  - name: dev
    tools: [call_agent, call_team_agent]
teams:
  - name: web
    agents: [dev]
`)
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(&recorder{}))
	if err == nil {
		rt.Close()
		t.Fatal("New accepted a team agent with call_team_agent")
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("New: %v, want a config error", err)
	}
	const msg = `agent "dev": call_team_agent is for agents in no team; "dev" is in team "web", and a team's agents cannot delegate up or into another team`
	if ce.Msg != msg || ce.Path != "$.agents[1].tools[1]" || ce.Line != 7 {
		t.Errorf("config error = %s at %s line %d\nwant %s at $.agents[1].tools[1] line 7", ce.Msg, ce.Path, ce.Line, msg)
	}
	if first, _, _ := strings.Cut(err.Error(), "\n"); first != filepath.Join(dir, "ganglion.yaml")+":7:25: "+msg {
		t.Errorf("err = %s", first)
	}
}

// TestTeamListAgents: list_agents shows a system-level agent its peers and
// the teams, a team agent its teammates only.
func TestTeamListAgents(t *testing.T) {
	tests := []struct{ agent, want string }{
		{"boss", `{"agents":[{"name":"helper","description":"helps the boss"}],"teams":[` +
			`{"team":"web","description":"builds the web app","agents":[{"name":"dev","description":"develops"},{"name":"qa","description":"checks"}]},` +
			`{"team":"infra","agents":[{"name":"ops"}]}]}`},
		{"helper", `{"agents":[{"name":"boss"}]}`},
		{"dev", `{"agents":[{"name":"qa","description":"checks"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			h := newHarness(t, teamConfig, oneCallScript(tt.agent, "list_agents", `{}`))
			h.mustSend(tt.agent, "k", "who?")
			if got := toolResult(t, mustHistory(t, h.rt, tt.agent, "k"), "c1"); got.IsError || got.Content != tt.want {
				t.Errorf("list_agents = %s\nwant %s", got.Content, tt.want)
			}
		})
	}
}

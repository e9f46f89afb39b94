package runtime_test

import (
	"encoding/json"
	"testing"
)

// TestDescribe: the agents in config order, with their description, team
// and tools, and the teams.
func TestDescribe(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: boss
    description: runs the show
    tools: [call_team_agent, read_file]
  - name: dev
    description: writes code
    tools: [read_file]
  - name: qa
teams:
  - name: eng
    description: builds things
    agents: [dev, qa]
`, "agents: {boss: {fallback: {steps: [{text: ok}]}}}\n")
	agents, teams := h.rt.Describe()
	got, _ := json.Marshal(map[string]any{"agents": agents, "teams": teams})
	want := `{"agents":[` +
		`{"name":"boss","description":"runs the show","tools":["call_team_agent","read_file"]},` +
		`{"name":"dev","description":"writes code","team":"eng","tools":["read_file"]},` +
		`{"name":"qa","team":"eng","tools":[]}],` +
		`"teams":[{"name":"eng","description":"builds things","agents":["dev","qa"]}]}`
	if string(got) != want {
		t.Errorf("Describe =\n%s\nwant\n%s", got, want)
	}
}

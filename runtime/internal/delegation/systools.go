package delegation

import (
	"context"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
)

// The names of the system tools, the runtime's own, which an agent may list
// in its tools: list_agents shows the agents it could delegate to,
// get_my_tools the tools it has, so that it can tell whether to delegate at
// all; call_agent and call_team_agent delegate (delegation.go).
const (
	toolListAgents    = "list_agents"
	toolGetMyTools    = "get_my_tools"
	ToolCallAgent     = "call_agent"
	ToolCallTeamAgent = config.ToolCallTeamAgent
)

// ToolNames are the system tools' names.
var ToolNames = []string{toolGetMyTools, toolListAgents, ToolCallAgent, ToolCallTeamAgent}

type agentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Unavailable marks an agent that failed to load: delegating to it fails.
	Unavailable bool `json:"unavailable,omitempty"`
}

type teamInfo struct {
	Team        string      `json:"team"`
	Description string      `json:"description,omitempty"`
	Agents      []agentInfo `json:"agents"`
}

type agentList struct {
	Agents []agentInfo `json:"agents"`
	// Teams are listed for an agent that may call_team_agent.
	Teams []teamInfo `json:"teams,omitempty"`
}

type toolInfo struct {
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Category    pipeline.ToolCategory `json:"category"`
}

var noArgs = []byte(`{"type":"object","properties":{},"additionalProperties":false}`)

// systemTools returns the system tools of d.
func (d *Tasks) systemTools() []pipeline.Tool {
	return []pipeline.Tool{
		{ToolSpec: pipeline.ToolSpec{Name: toolListAgents, Category: pipeline.CategoryRead, Parameters: noArgs,
			Description: "List the agents you may delegate to (call_agent), with what each is for, and the teams you may delegate into (call_team_agent) if any."},
			Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				a, ok := d.member(c.Agent())
				if !ok {
					return nil, fmt.Errorf("no agent %q", c.Agent())
				}
				out := agentList{Agents: d.agentInfos(a.Peers)}
				if a.CallsTeams {
					for _, t := range d.teams {
						out.Teams = append(out.Teams, teamInfo{Team: t.Name, Description: t.Description, Agents: d.agentInfos(t.Agents)})
					}
				}
				return jsonResult(out)
			}},
		{ToolSpec: pipeline.ToolSpec{Name: toolGetMyTools, Category: pipeline.CategoryRead, Parameters: noArgs,
			Description: "List the tools you have in this step, to tell whether you can do a task yourself."},
			Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				ts, ok := turnhost.Get(c).(*engine.Turn)
				if !ok {
					return nil, errors.New("get_my_tools runs only in a turn")
				}
				out := []toolInfo{}
				for _, t := range ts.Step.Tools().Tools() {
					out = append(out, toolInfo{Name: t.Name, Description: t.Description, Category: t.Category})
				}
				return jsonResult(out)
			}},
	}
}

func (d *Tasks) agentInfos(names []string) []agentInfo {
	out := make([]agentInfo, 0, len(names))
	for _, n := range names {
		a, _ := d.member(n)
		out = append(out, agentInfo{Name: n, Description: a.Description, Unavailable: a.Unavailable != nil})
	}
	return out
}

// jsonResult is a result the model reads as JSON.
func jsonResult(v any) (*pipeline.ToolResult, error) {
	b, err := plainjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &pipeline.ToolResult{Content: string(b)}, nil
}

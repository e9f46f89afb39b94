package runtime

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The names of the system tools of seed 002 an agent may list in its
// tools: list_agents shows the agents it could delegate to, get_my_tools
// the tools it has, so that it can tell whether to delegate at all.
const (
	ToolListAgents = "list_agents"
	ToolGetMyTools = "get_my_tools"
)

// systemToolNames are the system tools' names.
var systemToolNames = []string{ToolGetMyTools, ToolListAgents}

type agentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type toolInfo struct {
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Category    pipeline.ToolCategory `json:"category"`
}

var noArgs = []byte(`{"type":"object","properties":{},"additionalProperties":false}`)

// systemTools returns the system tools of r.
func (r *Runtime) systemTools() []pipeline.Tool {
	return []pipeline.Tool{
		{ToolSpec: pipeline.ToolSpec{Name: ToolListAgents, Category: pipeline.CategoryRead, Parameters: noArgs,
			Description: "List the other agents of this runtime, with what each is for: the agents you could ask for help."},
			Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				out := []agentInfo{}
				for _, name := range r.order {
					if name != c.Agent() {
						out = append(out, agentInfo{Name: name, Description: r.agents[name].description})
					}
				}
				return jsonResult(out)
			}},
		{ToolSpec: pipeline.ToolSpec{Name: ToolGetMyTools, Category: pipeline.CategoryRead, Parameters: noArgs,
			Description: "List the tools you have in this step, to tell whether you can do a task yourself."},
			Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				ts, ok := c.Host().(*turnState)
				if !ok {
					return nil, errors.New("get_my_tools runs only in a turn")
				}
				out := []toolInfo{}
				for _, t := range ts.step.Tools().Tools() {
					out = append(out, toolInfo{Name: t.Name, Description: t.Description, Category: t.Category})
				}
				return jsonResult(out)
			}},
	}
}

func jsonResult(v any) (*pipeline.ToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &pipeline.ToolResult{Content: string(b)}, nil
}

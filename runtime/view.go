package runtime

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

var _ seam.Held = (*instance)(nil)

// linked is config.Known.Import: the import that links the config's part
// at key, "" when the program linked it.
func linked(key string) string {
	switch {
	case key == "mcp_servers" && seam.MCP == nil:
		return seam.MCPImport
	case key == "cluster" && seam.Cluster == nil:
		return seam.ClusterImport
	}
	return ""
}

// stepTools is engine.Agent.StepTools for an agent with tool sources: its
// own tools, and those its sources list now. The caller holds the
// instance's slot.
func (a *agent) stepTools(ctx context.Context, in *instance) []pipeline.Tool {
	tools := append(make([]pipeline.Tool, 0, len(a.Tools)+16), a.Tools...)
	for _, st := range a.sourced {
		tools = append(tools, st(ctx, in)...)
	}
	return tools
}

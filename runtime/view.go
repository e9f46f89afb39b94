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

// stepTools returns the tools a step of instance in offers: the agent's,
// and those its tool sources list now. The caller holds the instance's
// slot.
func (a *agent) stepTools(ctx context.Context, in *instance) []pipeline.Tool {
	if len(a.sourced) == 0 {
		return a.Tools
	}
	tools := append(make([]pipeline.Tool, 0, len(a.Tools)+16), a.Tools...)
	for _, st := range a.sourced {
		tools = append(tools, st(ctx, in)...)
	}
	return tools
}

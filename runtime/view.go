package runtime

import (
	"context"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// instanceView is an instance as the features see it (seam.Instance): a
// conversion of the pointer, which allocates nothing.
type instanceView instance

var _ seam.Instance = (*instanceView)(nil)

func (v *instanceView) Agent() string { return v.agent.name }
func (v *instanceView) Key() string   { return v.key }

func (v *instanceView) Secrets(ctx context.Context) (map[string]string, error) {
	in := (*instance)(v)
	if err := in.loadSecrets(ctx); err != nil {
		return nil, err
	}
	return in.secrets.values, nil
}

func (v *instanceView) Redact(s string) string { return v.secrets.redactor.Redact(s) }

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
		return a.tools
	}
	tools := append(make([]pipeline.Tool, 0, len(a.tools)+16), a.tools...)
	for _, st := range a.sourced {
		tools = append(tools, st(ctx, (*instanceView)(in))...)
	}
	return tools
}

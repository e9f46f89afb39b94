package approval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the approval extension's name in an agent's config.
const Name = "approval"

// Settings are the extension's config:
//
//	extensions:
//	  - name: approval
//	    config:
//	      rules: rules.yaml   # relative to the config file
type Settings struct {
	Rules string `yaml:"rules"`
}

// Extension is the built-in approval extension: a toolCall middleware that
// decides approve, deny or ask for every tool call with the rules of a
// file, before the tool runs. Editing the file takes effect at the next
// tool call; an edit that does not load is refused, the rules in force
// stay, and an "approval.reload_failed" event says why.
type Extension struct {
	path string
	api  *extensions.API

	mu    sync.Mutex
	rules *Rules
	mtime time.Time
	size  int64
}

// dirConfig is implemented by the runtime's extension configs.
type dirConfig interface{ Dir() string }

// New returns the extension with the settings cfg holds.
func New(cfg extensions.Config) (extensions.Extension, error) {
	var s Settings
	if cfg != nil {
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
	}
	if s.Rules == "" {
		return nil, fmt.Errorf("rules: name the rules file (config: {rules: rules.yaml})")
	}
	path := s.Rules
	if d, ok := cfg.(dirConfig); ok && d.Dir() != "" && !filepath.IsAbs(path) {
		path = filepath.Join(d.Dir(), path)
	}
	x := &Extension{path: path}
	if err := x.reload(); err != nil {
		return nil, err
	}
	return x, nil
}

// Rules returns the rules in force.
func (x *Extension) Rules() *Rules {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rules
}

// reload loads the file if it changed since the last load.
func (x *Extension) reload() error {
	fi, err := os.Stat(x.path)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rules != nil && fi.ModTime().Equal(x.mtime) && fi.Size() == x.size {
		return nil
	}
	r, err := Load(x.path, WithWorkspace(x.workspace()))
	if err != nil {
		// Keep what is in force; remember the file, so that a broken
		// edit is reported once, not at every call.
		x.mtime, x.size = fi.ModTime(), fi.Size()
		return err
	}
	x.rules, x.mtime, x.size = r, fi.ModTime(), fi.Size()
	return nil
}

func (x *Extension) workspace() string {
	if x.api == nil {
		return ""
	}
	return x.api.Workspace
}

// Register installs the toolCall middleware.
func (x *Extension) Register(api *extensions.API) error {
	x.api = api
	api.Pipeline.ToolCall(x.toolCall)
	return nil
}

func (x *Extension) toolCall(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	if err := x.reload(); err != nil {
		x.api.Logger.Warn("rules file not reloaded; the rules in force stay", "err", err)
		x.api.Events.Publish("approval.reload_failed", c.InstanceKey(), map[string]any{"file": x.path, "error": err.Error()})
	}
	rules := x.Rules()
	t, _ := c.Tool()
	res := rules.Decide(Call{Tool: c.Name(), Category: t.Category, Args: c.Arguments(), Agent: c.Agent(),
		Instance: c.InstanceKey(), Turn: c.TurnID(), Step: c.Step(), Workspace: x.api.Workspace})
	x.api.Events.Publish("approval.decided", c.InstanceKey(), map[string]any{
		"turn_id": c.TurnID(), "call_id": c.CallID(), "tool": c.Name(), "decision": res.Decision,
		"matched": res.Matched, "explanation": res.Explanation})
	for _, e := range res.Errors {
		x.api.Events.Publish("approval.rule_error", c.InstanceKey(), map[string]any{"turn_id": c.TurnID(), "tool": c.Name(), "error": e})
	}
	switch res.Decision {
	case Approve:
		return c.Next(ctx)
	case Deny:
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true,
			Content: fmt.Sprintf("tool call denied: %s", res.Explanation)}, nil
	}
	// Ask: pausing for a human's approval lands next (issue 6); until
	// then the call is not run, and the model is told so.
	return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true,
		Content: fmt.Sprintf("tool call needs a human's approval, which this runtime cannot ask for yet: %s", res.Explanation)}, nil
}

var _ extensions.Extension = (*Extension)(nil)

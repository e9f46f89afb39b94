package tool

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The options and methods below are test seams: the runtime opens its
// workspace with the defaults and reads its registry through Select only.

// WithCommandTimeout sets how long execute_command lets a command run
// (default 60s). It is both the default and the maximum:
// a model may ask for less, not more.
func WithCommandTimeout(d time.Duration) WorkspaceOption {
	return workspaceOptionFunc(func(c *workspaceConfig) error {
		if d <= 0 {
			return fmt.Errorf("command timeout must be positive, got %v", d)
		}
		c.timeout = d
		return nil
	})
}

// WithMaxOutput sets how many bytes of file content read_file returns and how
// many bytes of output execute_command keeps (default 64 KiB).
// A result that was cut says so in its text.
func WithMaxOutput(bytes int) WorkspaceOption {
	return workspaceOptionFunc(func(c *workspaceConfig) error {
		if bytes <= 0 {
			return fmt.Errorf("max output must be positive, got %d", bytes)
		}
		c.maxOutput = bytes
		return nil
	})
}

// WithEnv sets the environment of execute_command's commands, as "KEY=value"
// entries. Commands see only these and PATH (the runtime's own, unless env
// sets PATH). The slice is copied.
func WithEnv(env []string) WorkspaceOption {
	env = slices.Clone(env)
	return workspaceOptionFunc(func(c *workspaceConfig) error {
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("environment entry %q is not KEY=value", kv)
			}
		}
		c.env = env
		return nil
	})
}

// Lookup returns the tool called name and whether there is one.
func (r *Registry) Lookup(name string) (pipeline.Tool, bool) {
	r.mu.RLock()
	t, ok := r.tools[name]
	r.mu.RUnlock()
	return t, ok
}

// Names returns the names of the registered tools in the order they were
// added. The slice is the caller's.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.names)
}

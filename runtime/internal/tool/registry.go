package tool

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// Registry holds the tools a runtime knows, by name, in the order they were
// added. Agents pick their tools from it with [Registry.Select].
//
// # Concurrency
//
// A Registry is safe for concurrent use. The usual pattern is to fill it at
// setup and only read it afterwards; reads never block each other.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]pipeline.Tool
	names []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: make(map[string]pipeline.Tool)}
}

// Add registers t. It fails if t is invalid ([pipeline.Tool.Validate]), if
// its parameters schema does not compile, or if a tool of that name is
// already registered.
func (r *Registry) Add(t pipeline.Tool) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if len(t.Parameters) > 0 {
		if cs := schemas.get(t.Parameters); cs.err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, cs.err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[t.Name]; ok {
		return fmt.Errorf("tool %q is already registered", t.Name)
	}
	r.tools[t.Name] = t
	r.names = append(r.names, t.Name)
	return nil
}

// Select returns the tools called names, in that order, for an agent's
// catalog. It fails on an unknown or repeated name; the error for an unknown
// name lists the known ones:
//
//	unknown tool "grep" (known: read_file, write_file)
func (r *Registry) Select(names []string) ([]pipeline.Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	tools := make([]pipeline.Tool, 0, len(names))
	for i, name := range names {
		t, ok := r.tools[name]
		if !ok {
			known := "none"
			if len(r.names) > 0 {
				known = strings.Join(r.names, ", ")
			}
			return nil, fmt.Errorf("unknown tool %q (known: %s)", name, known)
		}
		if slices.Contains(names[:i], name) {
			return nil, fmt.Errorf("tool %q is selected twice", name)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

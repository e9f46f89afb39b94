package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// ToolCategory groups tools for approval decisions.
type ToolCategory string

// The tool categories.
const (
	CategoryRead    ToolCategory = "read"
	CategoryWrite   ToolCategory = "write"
	CategoryExecute ToolCategory = "execute"
	CategoryBrowser ToolCategory = "browser"
	CategoryMCP     ToolCategory = "mcp"
	CategoryOther   ToolCategory = "other"
)

// valid reports whether c is one of the known categories.
func (c ToolCategory) valid() bool {
	switch c {
	case CategoryRead, CategoryWrite, CategoryExecute, CategoryBrowser, CategoryMCP, CategoryOther:
		return true
	}
	return false
}

// ToolSpec is what a model is told about a tool.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is a JSON Schema; empty: any object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Category   ToolCategory    `json:"category"`
}

// ToolFunc runs a tool, the innermost toolCall layer; its error becomes an
// error result the model reads, and the turn goes on.
type ToolFunc func(ctx context.Context, c *ToolCallContext) (*ToolResult, error)

// Tool is a tool a model can call: its spec and its implementation.
type Tool struct {
	ToolSpec
	Func ToolFunc `json:"-"`
}

// Validate checks the name ([ValidateToolName]), category and function.
func (t Tool) Validate() error {
	if err := ValidateToolName(t.Name); err != nil {
		return err
	}
	if t.Category != "" && !t.Category.valid() {
		return fmt.Errorf("tool %q: unknown category %q (want read, write, execute, browser, mcp or other)", t.Name, t.Category)
	}
	if t.Func == nil {
		return fmt.Errorf("tool %q: no function", t.Name)
	}
	if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
		return fmt.Errorf("tool %q: parameters schema is not valid JSON", t.Name)
	}
	return nil
}

// ValidateToolName checks that name is 1–64 letters, digits, '_' or '-'.
func ValidateToolName(name string) error {
	if name == "" {
		return fmt.Errorf("tool name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("tool name %q is longer than 64 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("tool name %q: character %q at offset %d is not a letter, digit, '_' or '-'", name, c, i)
		}
	}
	return nil
}

// ToolCatalog is the tools offered for one step, which a step middleware may
// change for that step; not safe for concurrent use.
type ToolCatalog struct {
	tools []Tool
	owned bool
}

// reset points c at tools again, dropping any change.
func (c *ToolCatalog) reset(tools []Tool) { c.tools, c.owned = tools, false }

// Tools returns the tools in order. The slice is read-only.
func (c *ToolCatalog) Tools() []Tool { return c.tools }

// Lookup returns the tool called name.
func (c *ToolCatalog) Lookup(name string) (Tool, bool) {
	for i := range c.tools {
		if c.tools[i].Name == name {
			return c.tools[i], true
		}
	}
	return Tool{}, false
}

// Remove hides the tool called name for this step; false if absent.
func (c *ToolCatalog) Remove(name string) bool {
	i := slices.IndexFunc(c.tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return false
	}
	c.own()
	c.tools = slices.Delete(c.tools, i, i+1)
	return true
}

// Filter keeps only the tools for which keep returns true.
func (c *ToolCatalog) Filter(keep func(ToolSpec) bool) {
	if !slices.ContainsFunc(c.tools, func(t Tool) bool { return !keep(t.ToolSpec) }) {
		return
	}
	c.own()
	c.tools = slices.DeleteFunc(c.tools, func(t Tool) bool { return !keep(t.ToolSpec) })
}

// Add offers t for this step, unless invalid or its name is taken.
func (c *ToolCatalog) Add(t Tool) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if _, ok := c.Lookup(t.Name); ok {
		return fmt.Errorf("tool %q is already in the catalog", t.Name)
	}
	c.own()
	c.tools = append(c.tools, t)
	return nil
}

func (c *ToolCatalog) own() {
	if !c.owned {
		c.tools = slices.Clone(c.tools)
		c.owned = true
	}
}

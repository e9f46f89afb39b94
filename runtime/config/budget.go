package config

import (
	"fmt"
	"time"
)

// AgentCalls bounds the calls between agents: ctx.agents requests and
// delegation chains.
type AgentCalls struct {
	// MaxDepth bounds a chain of waiting agents: 1 to 32; default 5.
	MaxDepth int `yaml:"max_depth"`
	// Timeout is ctx.agents.request's: a duration up to 1h; default 15s.
	Timeout string `yaml:"timeout"`
}

// Bounds of [AgentCalls].
const (
	maxCallDepth   = 32
	maxCallTimeout = time.Hour
)

// callTimeout parses an agent_calls timeout.
func callTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxCallTimeout {
		return 0, fmt.Errorf("timeout must be a positive duration of at most 1h, such as 15s or 2m, got %q", s)
	}
	return d, nil
}

// Budget bounds what one delegation task tree may spend; a field left 0
// takes the default. Past Delegations, call_agent refuses more; past Turns
// or Tokens, the tree's tasks fail with a message naming the budget, which
// the root task's requester gets as the answer.
type Budget struct {
	// Delegations: default 100.
	Delegations int `yaml:"delegations"`
	// Turns: default 500.
	Turns int `yaml:"turns"`
	// Tokens, input and output: default 10,000,000.
	Tokens int64 `yaml:"tokens"`
}

// budget checks a task_budget at path.
func (v *validator) budget(b *Budget, path, pre string) {
	if b == nil {
		return
	}
	if b.Delegations < 0 {
		v.errorf(path+".delegations", "%stask_budget: delegations must be positive (0 or absent: the default), got %d", pre, b.Delegations)
	}
	if b.Turns < 0 {
		v.errorf(path+".turns", "%stask_budget: turns must be positive (0 or absent: the default), got %d", pre, b.Turns)
	}
	if b.Tokens < 0 {
		v.errorf(path+".tokens", "%stask_budget: tokens must be positive (0 or absent: the default), got %d", pre, b.Tokens)
	}
}

// agentCalls checks the file's agent_calls.
func (v *validator) agentCalls(c *AgentCalls) {
	if c == nil {
		return
	}
	if c.MaxDepth < 0 || c.MaxDepth > maxCallDepth {
		v.errorf("$.agent_calls.max_depth", "agent_calls: max_depth must be between 1 and %d (0 or absent: the default), got %d", maxCallDepth, c.MaxDepth)
	}
	if c.Timeout != "" {
		if _, err := callTimeout(c.Timeout); err != nil {
			v.errorf("$.agent_calls.timeout", "agent_calls: %v", err)
		}
	}
}

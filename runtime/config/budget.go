package config

import (
	"fmt"
	"time"
)

// AgentCalls bounds the calls between agents: the requests extensions make
// with ctx.agents and the chains of delegation tasks (call_agent).
type AgentCalls struct {
	// MaxDepth is the longest chain of agents that wait on one another: an
	// agent call or a delegation that would make the chain longer fails
	// with a message saying so. 1 to 32; default 5.
	MaxDepth int `yaml:"max_depth"`
	// Timeout is the default timeout of ctx.agents.request, as a Go
	// duration ("15s", "2m"); at most 1h. Default 15s.
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

// Budget bounds what one delegation task tree may spend: a root task (the
// request an agent delegated from) with every task delegated under it,
// however deep. A field left 0 takes the default: for an agent's, the
// file's task_budget field, else the runtime's default.
//
// When the tree has made Delegations delegations, call_agent refuses more
// and the model is told to finish with what it has. When its turns reach
// Turns, or its model usage (input and output tokens) reaches Tokens, no
// task of the tree starts another turn: each fails with a message naming
// the budget, and so, report by report, does the root task, whose
// requester gets that message as the answer.
type Budget struct {
	// Delegations bounds the delegations of the tree. Default 100.
	Delegations int `yaml:"delegations"`
	// Turns bounds the turns the tree's tasks run (requests, merged
	// reports and resumes). Default 500.
	Turns int `yaml:"turns"`
	// Tokens bounds the model tokens, input and output, of those turns.
	// Default 10,000,000.
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

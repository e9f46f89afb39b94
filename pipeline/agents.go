package pipeline

import (
	"context"
	"errors"
	"time"
)

// Agents lets turn and step middleware call other agents
// (ctx.agents): the calls go through the runtime's orchestrator and never
// appear in the calling agent's conversation or its model's context; only
// what the middleware does with the answer does. ToolCall contexts do not
// offer it.
//
// An Agents is safe for concurrent use during its turn.
type Agents interface {
	// Request runs a turn of target with input and returns its response
	// text, or an error: the target failed, the call timed out (the
	// target's turn is then aborted), or the call would close a cycle or
	// exceed the depth limit.
	Request(ctx context.Context, target, input string, opts AgentCallOptions) (string, error)
	// Send starts a turn of target with input and returns once it is
	// accepted, without waiting for it.
	Send(ctx context.Context, target, input string, opts AgentCallOptions) error
}

// AgentCallOptions tune an agent call.
type AgentCallOptions struct {
	// InstanceKey is the target's instance; empty: the caller's key.
	InstanceKey string
	// Timeout bounds a Request; zero: the runtime's default (15 s).
	Timeout time.Duration
	// Metadata is added to the call's input metadata, beside the caller's
	// (callerAgent, callerInstanceKey, callerTurnId, callSource).
	Metadata map[string]any
}

// ErrNoAgents is returned by the Agents of a context whose runtime offers
// no agent calls.
var ErrNoAgents = errors.New("this context cannot call agents")

type noAgents struct{}

func (noAgents) Request(context.Context, string, string, AgentCallOptions) (string, error) {
	return "", ErrNoAgents
}

func (noAgents) Send(context.Context, string, string, AgentCallOptions) error { return ErrNoAgents }

// Agents returns what calls other agents from this turn.
func (t *TurnContext) Agents() Agents {
	if t.info.Agents == nil {
		return noAgents{}
	}
	return t.info.Agents
}

// Agents returns what calls other agents from this step's turn.
func (s *StepContext) Agents() Agents { return s.turn.Agents() }

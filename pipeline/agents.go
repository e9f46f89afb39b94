package pipeline

import (
	"context"
	"errors"
	"time"
)

// Agents lets turn and step middleware call other agents, outside the
// conversation; safe for concurrent use during its turn.
type Agents interface {
	// Request runs a turn of target and returns its answer; a timeout aborts it.
	Request(ctx context.Context, target, input string, opts AgentCallOptions) (string, error)
	// Send starts a turn of target without waiting.
	Send(ctx context.Context, target, input string, opts AgentCallOptions) error
}

// AgentCallOptions tune an agent call: InstanceKey ("" the caller's), a
// Request's Timeout (0: 15 s), Metadata added to the input's.
type AgentCallOptions struct {
	InstanceKey string
	Timeout     time.Duration
	Metadata    map[string]any
}

// ErrNoAgents is returned when the runtime offers no agent calls.
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

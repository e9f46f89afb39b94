package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/delegation"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// Delegation (runtime/internal/delegation) runs the tasks that call_agent
// makes and the agent calls of middleware (ctx.agents); these are the
// runtime's names for its records (package runtime/task) and its methods.

// The records of delegation, as package task defines them (with what a
// task remembers of its delegations, and what a tree of tasks spent).
type (
	// Task is a delegation task, as stored: the input of a turn that
	// called call_agent, or one such call.
	Task = task.Task
	// Report is a root task's final answer, handed to its requester's
	// channel.
	Report = task.Report
	// A Channel takes root tasks' answers to their requesters.
	Channel = task.Channel
	// ChannelFunc makes a function a [Channel].
	ChannelFunc = task.ChannelFunc
)

// The states of a task.
const (
	TaskQueued    = task.Queued
	TaskWaiting   = task.Waiting
	TaskReporting = task.Reporting
	TaskPaused    = task.Paused
	TaskAnswered  = task.Answered
)

// Channels the runtime names; apps add theirs with [WithChannel].
const (
	// ChannelAPI answers [Runtime.Ask]; after Send, it only publishes.
	ChannelAPI = task.ChannelAPI
	// ChannelAgent marks a child task, which reports to its parent.
	ChannelAgent = task.ChannelAgent
)

var (
	// ErrDeliverLater keeps an answer for [Runtime.DeliverAnswers] or the
	// next start.
	ErrDeliverLater = task.ErrDeliverLater
	// ErrNoTask is returned for a task ID not stored: unknown, or completed.
	ErrNoTask = task.ErrNotFound
	// ErrCycle is returned for an agent call back into its own chain.
	ErrCycle = delegation.ErrCycle
	// ErrDepth is returned for a chain deeper than agent_calls.max_depth.
	ErrDepth = delegation.ErrDepth
)

// Defaults of agent calls, for a config whose agent_calls leaves them out.
const (
	defaultAgentTimeout = 15 * time.Second
	defaultAgentDepth   = 5
)

// Transport carries agent calls and delegated tasks' turns to the
// [Runtime.Deliver] of the runtime that runs the target; the default is in
// process.
type Transport interface {
	// Deliver runs a turn of agent's instance key with in, and returns its
	// result when it ends or ctx does.
	Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error)
}

var _ Transport = (*Runtime)(nil)

// Deliver is [Runtime.Send] for the runtime's own input, carried by a
// [Transport]: it does not check the key and metadata. Input from people
// and programs goes to Send.
func (r *Runtime) Deliver(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	return r.send(ctx, agentName, instanceKey, in)
}

// WithChannel makes ch the channel of tasks whose input metadata says
// channel: name. "agent" and "api" are the runtime's.
func WithChannel(name string, ch Channel) Option {
	return optionFunc(func(o *options) {
		if o.channels == nil {
			o.channels = map[string]Channel{}
		}
		o.channels[name] = ch
	})
}

// WithOutputsDir saves long delegation reports under dir, not outputs.
func WithOutputsDir(dir string) Option { return optionFunc(func(o *options) { o.outputs = dir }) }

// Ask sends text as a user's message and returns the final answer, after
// every delegation reported (Report.TaskID "" if none). A pause returns
// [ErrPaused]; the resumed task's answer is then published as an event.
// Cancelling ctx stops the wait; the task goes on.
func (r *Runtime) Ask(ctx context.Context, agentName, instanceKey, text string) (*Report, error) {
	if err := checkInput(agentName, instanceKey, nil); err != nil {
		return nil, err
	}
	if r.obs.tape != nil {
		r.obs.tape.Input(tape.Input{Op: "ask", Agent: agentName, Instance: instanceKey, Text: text})
	}
	return r.tasks.Ask(ctx, agentName, instanceKey, UserMessage(text), func(ctx context.Context, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
		return r.sendAsked(ctx, agentName, instanceKey, in)
	})
}

// Tasks returns the open tasks by ID, of agentName and instanceKey if set.
func (r *Runtime) Tasks(ctx context.Context, agentName, instanceKey string) ([]Task, error) {
	return r.tasks.List(ctx, agentName, instanceKey)
}

// Task returns the open task with id, or an error wrapping [ErrNoTask].
func (r *Runtime) Task(ctx context.Context, id string) (Task, error) {
	return r.tasks.Task(ctx, id)
}

// WaitTasks waits until no turn runs in the background: each delegation
// chain has completed, paused or stopped, and middleware's agent sends
// have ended. It does not return while a chain still moves.
func (r *Runtime) WaitTasks(ctx context.Context) error { return r.tasks.Wait(ctx) }

// DeliverAnswers hands channel the answers it deferred ([ErrDeliverLater])
// again, in the background ([Runtime.WaitTasks]).
func (r *Runtime) DeliverAnswers(ctx context.Context, channel string) error {
	return r.tasks.DeliverAnswers(ctx, channel)
}

// newID returns a new ID for what key names (see tape.Tape.ID): prefix
// and 12 random hex digits, or, replaying, the recorded ID.
func (r *Runtime) newID(prefix, key string) string {
	if r.obs.tape == nil {
		return newID(prefix)
	}
	return r.obs.tape.ID(key, func() string { return newID(prefix) })
}

// newID returns prefix and 12 random hex digits.
func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b[:])
}

// newTasks returns the runtime's delegation: its channels (o's, besides
// the runtime's own), agent_calls' bounds, and where long reports are
// saved: the option, else the config's outputs, else "outputs" beside the
// data directory, else in the system's temporary directory.
func (r *Runtime) newTasks(o *options, cfg *config.File, dataDir string) (*delegation.Tasks, error) {
	for name := range o.channels {
		if name == ChannelAPI || name == ChannelAgent {
			return nil, fmt.Errorf("runtime: channel %q is the runtime's own; name yours otherwise", name)
		}
	}
	dir := o.outputs
	if dir == "" {
		dir = cfg.Outputs
	}
	if dir == "" {
		if dataDir != "" {
			dir = filepath.Join(filepath.Dir(dataDir), "outputs")
		} else {
			dir = filepath.Join(os.TempDir(), "ganglion-outputs")
		}
	}
	outputs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("outputs directory: %w", err)
	}
	depth := defaultAgentDepth
	if c := cfg.AgentCalls; c != nil && c.MaxDepth > 0 {
		depth = c.MaxDepth
	}
	deliver := r.Deliver
	if o.transport != nil {
		deliver = o.transport.Deliver
	}
	return delegation.New(delegation.Env{
		Engine: &r.env, Logger: r.logger, Place: func() seam.Placement { return r.place },
		Members: r.member, NewID: r.newID, Traced: r.obs.tel != nil, Gate: &r.life.gate,
		Closed: ErrClosed, Paused: ErrPaused, Deliver: deliver,
		Hold: func(ctx context.Context, what, agent, key string) (func(), error) {
			_, _, done, err := r.holdInstance(ctx, what, agent, key)
			return done, err
		},
		Waiting: func(ctx context.Context, agent, key string) (bool, error) {
			open, err := r.pauses.Ledger().List(ctx, ledger.Filter{Agent: agent, Instance: key, Open: true})
			return len(open) > 0, err
		},
		Runnable: func(agent string) error { _, err := r.runnable(agent); return err },
		Fence:    r.fence,
		Depth:    depth, Timeout: callTimeout(cfg),
		Channels: o.channels, Outputs: outputs,
	}, cfg.Teams), nil
}

// callTimeout is the default timeout of ctx.agents.request: agent_calls'
// timeout, or defaultAgentTimeout.
func callTimeout(cfg *config.File) time.Duration {
	if c := cfg.AgentCalls; c != nil {
		if d, err := time.ParseDuration(c.Timeout); err == nil {
			return d // Validate checked it
		}
	}
	return defaultAgentTimeout
}

// member is the agent called name as delegation sees it.
func (r *Runtime) member(name string) (delegation.Member, bool) {
	a, ok := r.agents.byName[name]
	if !ok {
		return delegation.Member{}, false
	}
	return delegation.Member{Description: a.description, Team: a.team, Peers: a.peers, CallsTeams: a.canCallTeams,
		Unavailable: a.loadErr, Budget: r.agents.budgets[name]}, true
}

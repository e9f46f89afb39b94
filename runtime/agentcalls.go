package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// Defaults of agent calls, for a config whose agent_calls leaves them out.
const (
	defaultAgentTimeout = 15 * time.Second
	defaultAgentDepth   = 5
)

var (
	// ErrCycle is returned for an agent call back into its own chain.
	ErrCycle = errors.New("agent call cycle")
	// ErrDepth is returned for a chain deeper than agent_calls.max_depth.
	ErrDepth = errors.New("agent call chain too deep")
)

// Call sources, in a called turn's input metadata under callSource.
const (
	sourceMiddleware = "extension-middleware"
	sourceTool       = "tool"
	sourceAPI        = "api"
)

// Transport carries agent calls and delegated tasks' turns to the
// [Runtime.Deliver] of the runtime that runs the target; the default is in
// process.
type Transport interface {
	// Deliver runs a turn of agent's instance key with in, and returns its
	// result when it ends or ctx does.
	Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error)
}

// inProcess is the default Transport: the runtime itself.
// agentCalls is the runtime's side of ctx.agents: the defaults and the
// wait-for graph of the requests in flight.
type agentCalls struct {
	timeout   time.Duration             // default timeout of ctx.agents.request
	depth     int                       // longest chain of agent calls
	transport Transport                 // carries agent calls; default in process
	mu        sync.Mutex                // guards waits
	waits     map[string]map[string]int // instance → the instances its turns wait for
	sends     atomic.Int64              // agent sends so far, to name each in flight
}

// Deliver is [Runtime.Send] for the runtime's own input, carried by a
// [Transport]: it does not check the key and metadata. Input from people
// and programs goes to Send.
func (r *Runtime) Deliver(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	return r.send(ctx, agentName, instanceKey, in)
}

// callerAgents is the pipeline.Agents of a running turn: the orchestrator's
// entry for middleware. Every call carries the caller's metadata and the
// chain of instances waiting on it, which detects cycles and bounds depth.
type callerAgents struct {
	a     *agent
	key   string
	turn  string
	chain []string // "agent/instance" of the callers before this turn
	// taskChain is the turn's delegation ancestry, passed on so that
	// the called agent's approval rules see who is behind the call.
	taskChain []string
}

var _ pipeline.Agents = (*callerAgents)(nil)

// reset makes c the agents of the turn ts starts with input in.
func (c *callerAgents) reset(a *agent, key, turn string, in pipeline.InputEvent) {
	c.a, c.key, c.turn = a, key, turn
	c.chain = appendStrings(c.chain[:0], in.Metadata["chain"])
	c.taskChain = appendStrings(c.taskChain[:0], in.Metadata["taskChain"])
}

// appendStrings appends the strings of a metadata list to dst: a []string
// in process, a []any after a JSON round trip.
func appendStrings(dst []string, v any) []string {
	switch l := v.(type) {
	case []string:
		dst = append(dst, l...)
	case []any:
		for _, e := range l {
			if s, ok := e.(string); ok {
				dst = append(dst, s)
			}
		}
	}
	return dst
}

// input builds the called turn's input, or refuses the call.
func (c *callerAgents) input(target, text string, o pipeline.AgentCallOptions, source string) (string, pipeline.InputEvent, error) {
	r := c.a.rt
	if _, err := r.runnable(target); err != nil {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w", target, err)
	}
	key := o.InstanceKey
	if key == "" {
		key = c.key // the caller's, which may be older than the rule for new keys
	} else if err := store.ValidateInstanceKey(key); err != nil {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w", target, err)
	}
	if err := pipeline.CheckMetadata("the call's metadata", nil, o.Metadata); err != nil {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w", target, err)
	}
	self := c.a.Name + "/" + c.key
	chain := append(slices.Clone(c.chain), self)
	to := target + "/" + key
	if slices.Contains(chain, to) {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w: %s → %s", target, ErrCycle, strings.Join(chain, " → "), to)
	}
	if len(chain) > r.calls.depth {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w: %s → %s is deeper than %d", target, ErrDepth, strings.Join(chain, " → "), to, r.calls.depth)
	}
	md := maps.Clone(o.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	md["callerAgent"], md["callerInstanceKey"], md["callerTurnId"], md["callSource"] = c.a.Name, c.key, c.turn, source
	md["chain"] = chain
	if len(c.taskChain) > 0 {
		md["taskChain"] = slices.Clone(c.taskChain)
	}
	return key, pipeline.InputEvent{Kind: pipeline.InputAgentRequest, Text: text, Metadata: md}, nil
}

// Request runs a turn of target and returns its response text.
func (c *callerAgents) Request(ctx context.Context, target, text string, o pipeline.AgentCallOptions) (string, error) {
	key, in, err := c.input(target, text, o, sourceMiddleware)
	if err != nil {
		return "", err
	}
	self, to := c.a.Name+"/"+c.key, target+"/"+key
	if err := c.a.rt.waitFor(self, to); err != nil {
		return "", fmt.Errorf("call agent %q: %w", target, err)
	}
	defer c.a.rt.stopWaiting(self, to)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.a.rt.calls.timeout
	}
	done, err := c.a.rt.place.WaitFor(ctx, self, to, timeout)
	if err != nil {
		return "", fmt.Errorf("call agent %q: %w", target, err)
	}
	defer done()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.a.rt.calls.transport.Deliver(cctx, target, key, in)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return "", fmt.Errorf("call agent %q instance %q: no answer within %v (its turn was aborted): %w", target, key, timeout, context.DeadlineExceeded)
		}
		return "", fmt.Errorf("call agent %q instance %q: %w", target, key, err)
	}
	return res.Response.Content, nil
}

// waitFor records that a turn of instance self waits for one of instance
// to, unless to's turn already waits, directly or through others, for
// self's: each would hold its instance's slot waiting for the other until
// the timeout. The chain carried in the input catches a cycle within one
// chain of calls; this wait-for graph catches the cycle of two independent
// turns calling each other.
func (r *Runtime) waitFor(self, to string) error {
	r.calls.mu.Lock()
	defer r.calls.mu.Unlock()
	if path := r.waitPath(to, self, nil); path != nil {
		return fmt.Errorf("%w: %s → %s (a turn of %s waits for %s already)", ErrCycle, self, strings.Join(path, " → "), to, self)
	}
	if r.calls.waits == nil {
		r.calls.waits = map[string]map[string]int{}
	}
	if r.calls.waits[self] == nil {
		r.calls.waits[self] = map[string]int{}
	}
	r.calls.waits[self][to]++
	return nil
}

// waitPath returns the instances from "from" to "to" along the wait-for
// graph, both included, or nil if to is not reached. r.calls.mu is held.
func (r *Runtime) waitPath(from, to string, seen map[string]bool) []string {
	if from == to {
		return []string{to}
	}
	if seen[from] {
		return nil
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	seen[from] = true
	for next := range r.calls.waits[from] {
		if p := r.waitPath(next, to, seen); p != nil {
			return append([]string{from}, p...)
		}
	}
	return nil
}

func (r *Runtime) stopWaiting(self, to string) {
	r.calls.mu.Lock()
	defer r.calls.mu.Unlock()
	if r.calls.waits[self][to]--; r.calls.waits[self][to] <= 0 {
		delete(r.calls.waits[self], to)
		if len(r.calls.waits[self]) == 0 {
			delete(r.calls.waits, self)
		}
	}
}

// Send starts a turn of target without waiting for it. The runtime's Close
// waits for it.
func (c *callerAgents) Send(ctx context.Context, target, text string, o pipeline.AgentCallOptions) error {
	key, in, err := c.input(target, text, o, sourceMiddleware)
	if err != nil {
		return err
	}
	r := c.a.rt
	if !r.gate.enter() {
		return ErrClosed
	}
	// WaitTasks waits for the send's turn as for a task's.
	flight := "send-" + strconv.FormatInt(r.calls.sends.Add(1), 10)
	r.tasks.flightMu.Lock()
	r.tasks.inFlight[flight] = true
	r.tasks.flightMu.Unlock()
	bg := context.WithoutCancel(ctx)
	go func() {
		defer r.gate.leave()
		defer r.land(flight)
		if _, err := r.calls.transport.Deliver(bg, target, key, in); err != nil {
			r.logger.Warn("agent send failed", "agent", c.a.Name, "target", target, "instance", key, "err", err)
		}
	}()
	return nil
}

var _ Transport = (*Runtime)(nil)

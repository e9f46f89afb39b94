package delegation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
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
)

// callerAgents is the pipeline.Agents of a running turn: the orchestrator's
// entry for middleware. Every call carries the caller's metadata and the
// chain of instances waiting on it, which detects cycles and bounds depth.
type callerAgents struct {
	d     *Tasks
	agent string // the caller
	key   string
	turn  string
	chain []string // "agent/instance" of the callers before this turn
	// taskChain is the turn's delegation ancestry, passed on so that
	// the called agent's approval rules see who is behind the call.
	taskChain []string
}

var _ pipeline.Agents = (*callerAgents)(nil)

// reset makes c the agents of the turn ts starts with input in.
func (c *callerAgents) reset(d *Tasks, agent, key, turn string, in pipeline.InputEvent) {
	c.d, c.agent, c.key, c.turn = d, agent, key, turn
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
	if err := c.d.env.Runnable(target); err != nil {
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
	self := c.agent + "/" + c.key
	chain := append(slices.Clone(c.chain), self)
	to := target + "/" + key
	if slices.Contains(chain, to) {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w: %s → %s", target, ErrCycle, strings.Join(chain, " → "), to)
	}
	if len(chain) > c.d.env.Depth {
		return "", pipeline.InputEvent{}, fmt.Errorf("call agent %q: %w: %s → %s is deeper than %d", target, ErrDepth, strings.Join(chain, " → "), to, c.d.env.Depth)
	}
	md := maps.Clone(o.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	md["callerAgent"], md["callerInstanceKey"], md["callerTurnId"], md["callSource"] = c.agent, c.key, c.turn, source
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
	self, to := c.agent+"/"+c.key, target+"/"+key
	if err := c.d.waitFor(self, to); err != nil {
		return "", fmt.Errorf("call agent %q: %w", target, err)
	}
	defer c.d.stopWaiting(self, to)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.d.env.Timeout
	}
	done, err := c.d.place().WaitFor(ctx, self, to, timeout)
	if err != nil {
		return "", fmt.Errorf("call agent %q: %w", target, err)
	}
	defer done()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := c.d.env.Deliver(cctx, target, key, in)
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
func (d *Tasks) waitFor(self, to string) error {
	d.waitMu.Lock()
	defer d.waitMu.Unlock()
	if path := d.waitPath(to, self, nil); path != nil {
		return fmt.Errorf("%w: %s → %s (a turn of %s waits for %s already)", ErrCycle, self, strings.Join(path, " → "), to, self)
	}
	if d.waits == nil {
		d.waits = map[string]map[string]int{}
	}
	if d.waits[self] == nil {
		d.waits[self] = map[string]int{}
	}
	d.waits[self][to]++
	return nil
}

// waitPath returns the instances from "from" to "to" along the wait-for
// graph, both included, or nil if to is not reached. d.waitMu is held.
func (d *Tasks) waitPath(from, to string, seen map[string]bool) []string {
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
	for next := range d.waits[from] {
		if p := d.waitPath(next, to, seen); p != nil {
			return append([]string{from}, p...)
		}
	}
	return nil
}

func (d *Tasks) stopWaiting(self, to string) {
	d.waitMu.Lock()
	defer d.waitMu.Unlock()
	if d.waits[self][to]--; d.waits[self][to] <= 0 {
		delete(d.waits[self], to)
		if len(d.waits[self]) == 0 {
			delete(d.waits, self)
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
	d := c.d
	if !d.env.Gate.Enter() {
		return d.env.Closed
	}
	// Wait waits for the send's turn as for a task's.
	flight := "send-" + strconv.FormatInt(d.sends.Add(1), 10)
	d.flightMu.Lock()
	d.inFlight[flight] = true
	d.flightMu.Unlock()
	bg := context.WithoutCancel(ctx)
	go func() {
		defer d.env.Gate.Leave()
		defer d.land(flight)
		if _, err := d.env.Deliver(bg, target, key, in); err != nil {
			d.env.Logger.Warn("agent send failed", "agent", c.agent, "target", target, "instance", key, "err", err)
		}
	}()
	return nil
}

package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// Env is what delegation asks of the runtime that embeds it.
type Env struct {
	// Engine holds the store, the bus and the clock the turns use.
	Engine *engine.Env
	Logger *slog.Logger
	// Place is the runtime's placement: where instances live, and the
	// reports, answers and spending that cross processes. The runtime
	// sets its placement after it makes Tasks, so it is asked each time.
	Place func() seam.Placement
	// Members looks up an agent the config defines.
	Members Members
	// NewID mints the ID of a task or an Ask (the tape's when replaying).
	NewID func(prefix, key string) string
	// Traced is set when the turns are traced: tasks then carry the
	// traceparent of what started them.
	Traced bool
	// Gate admits the work of a running runtime.
	Gate Gate
	// Closed is the error of a call the stopping runtime refuses; Paused
	// is the error of a turn refused because its instance waits for a
	// human.
	Closed, Paused error
	// Deliver runs a turn of agent's instance key, wherever the instance
	// lives, without checking its input: the runtime's own turns.
	Deliver func(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error)
	// Hold loads agent's instance key in this process and holds its turn
	// slot until done; its error wraps seam.ErrMoved when another process
	// owns the instance.
	Hold func(ctx context.Context, what, agent, key string) (done func(), err error)
	// Waiting reports whether agent's instance key has open pending items.
	Waiting func(ctx context.Context, agent, key string) (bool, error)
	// Runnable says why agent cannot run turns, or nil.
	Runnable func(agent string) error
	// Fence is the fence of agent's instance key for a write its owner
	// alone makes: zero when the runtime runs alone.
	Fence func(agent, key string) uint64
	// Depth bounds a chain of agent calls and delegations; Timeout is the
	// default timeout of ctx.agents.request (agent_calls).
	Depth   int
	Timeout time.Duration
	// Channels take root tasks' answers, by name, besides the runtime's
	// own (task.ChannelAPI); Outputs is where long reports are saved,
	// absolute.
	Channels map[string]task.Channel
	Outputs  string
}

// Gate is the runtime's count of the work it runs, which its stop waits
// for.
type Gate interface {
	Enter() bool
	Leave()
}

// Members looks up the agents a config defines, by name.
type Members func(name string) (Member, bool)

// Member is what delegation knows of an agent.
type Member struct {
	Description string
	// Team is its team, "" for a system-level agent; Peers are the agents
	// it may call_agent; CallsTeams is set when it has call_team_agent.
	Team       string
	Peers      []string
	CallsTeams bool
	// Unavailable is why it failed to load, nil if it loaded.
	Unavailable error
	// Budget bounds the task trees it starts.
	Budget config.Budget
}

// Tasks runs delegation: it keeps where tasks' answers go, the stored
// tasks being changed, the task turns running in the background and the
// instances they wait for, and the agent calls in flight. It is the
// engine.Hook by which every turn takes part in delegation.
type Tasks struct {
	env      Env
	eng      *engine.Env
	teams    []config.Team
	channels map[string]task.Channel
	api      *apiChannel
	mu       sync.Mutex                 // serialises changes to stored tasks; guards cache
	cache    map[string]*task.Task      // parents waiting for reports, as stored (completeTask)
	trees    map[string]*tree           // root task → its budget and spending (budget.go); guarded by mu
	reportMu sync.Mutex                 // guards reports
	reports  map[string][]*queuedReport // parent → reports waiting for its next write
	flightMu sync.Mutex                 // guards inFlight, again, blocked and idle
	inFlight map[string]bool            // tasks whose turn a goroutine runs
	again    map[string]bool            // tasks asked to run while in flight: run again after
	blocked  map[engine.ID]bool         // paused instances that tasks wait for
	nBlocked atomic.Int32               // len(blocked), read without the lock by every turn
	idle     chan struct{}              // closed when inFlight empties; nil if nobody waits
	bg       context.Context            // task turns run under it; Stop cancels it
	cancel   context.CancelFunc
	waitMu   sync.Mutex                // guards waits
	waits    map[string]map[string]int // instance → the instances its turns wait for
	sends    atomic.Int64              // agent sends so far, to name each in flight
}

var _ engine.Hook = (*Tasks)(nil)

// New returns the delegation of a runtime whose teams are teams.
func New(env Env, teams []config.Team) *Tasks {
	d := &Tasks{env: env, eng: env.Engine, teams: teams,
		cache: map[string]*task.Task{}, trees: map[string]*tree{}, reports: map[string][]*queuedReport{},
		inFlight: map[string]bool{}, again: map[string]bool{}, blocked: map[engine.ID]bool{}}
	d.bg, d.cancel = context.WithCancel(context.Background())
	d.api = &apiChannel{remote: func(ctx context.Context, a seam.Answer) error { return env.Place().Answer(ctx, a) }}
	d.channels = map[string]task.Channel{task.ChannelAPI: d.api}
	for name, ch := range env.Channels {
		d.channels[name] = ch
	}
	return d
}

// Bg is the context the task turns run under; Stop ends it.
func (d *Tasks) Bg() context.Context { return d.bg }

// Stop aborts the task turns running in the background: their tasks stay
// stored and run again at the next start.
func (d *Tasks) Stop() { d.cancel() }

// Turn is a turn's part in delegation (engine.Turn.Ext): the task it works
// on, the delegations it made, and its ctx.agents.
type Turn struct {
	id       string       // the task the turn works on, "" if none
	chain    []string     // the tasks above it, "agent/instance", root first
	mu       sync.Mutex   // guards delegs: parallel tool calls delegate
	delegs   []delegation // made by the turn's tool calls, not yet committed
	children []*task.Task // committed: to start when the turn ends
	// While a step's commit is staged: what to restore if it fails, and
	// whether the stage holds the task lock.
	locked     bool
	nChildren  int
	stagedTask string
	staged     int    // delegations counted against the tree's budget
	stagedRoot string // that tree's root task
	agents     callerAgents
}

// turnOf returns ts's part in delegation.
func turnOf(ts *engine.Turn) *Turn { return ts.Ext.(*Turn) }

// member returns the agent called name, as the config defines it.
func (d *Tasks) member(name string) (Member, bool) { return d.env.Members(name) }

// place returns the runtime's placement.
func (d *Tasks) place() seam.Placement { return d.env.Place() }

// team returns the team called name.
func (d *Tasks) team(name string) (config.Team, bool) {
	i := slices.IndexFunc(d.teams, func(t config.Team) bool { return t.Name == name })
	if i < 0 {
		return config.Team{}, false
	}
	return d.teams[i], true
}

// teamNames returns the teams' names, in config order.
func (d *Tasks) teamNames() []string {
	out := make([]string, len(d.teams))
	for i, t := range d.teams {
		out[i] = t.Name
	}
	return out
}

// Tools returns the system tools: list_agents, get_my_tools, call_agent
// and call_team_agent, named by ToolNames.
func (d *Tasks) Tools() []pipeline.Tool {
	return append(d.systemTools(), d.delegationTools()...)
}

// Forget drops what the task cache holds of agent's instance key: another
// process owns it now, and writes its tasks.
func (d *Tasks) Forget(agent, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, t := range d.cache {
		if t.Agent == agent && t.Instance == key {
			delete(d.cache, id)
		}
	}
}

// Ask sends in (a user's message) with send and returns the final answer,
// after every delegation reported: see the runtime's Ask.
func (d *Tasks) Ask(ctx context.Context, agent, key string, in pipeline.InputEvent,
	send func(context.Context, pipeline.InputEvent) (*pipeline.TurnResult, error)) (*task.Report, error) {
	replyTo := d.env.NewID("ask_", "ask/"+agent+"/"+key)
	wait := make(chan task.Report, 1)
	d.api.waiters.Store(replyTo, wait)
	defer d.api.waiters.Delete(replyTo)
	// The task may end on another process: it sends the answer here.
	stop, err := d.place().AwaitAnswer(replyTo, func(data json.RawMessage) error {
		var rep task.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("malformed answer: %w", err)
		}
		if _, ok := d.api.waiters.LoadAndDelete(replyTo); !ok {
			return errors.New("no caller waits for it any more")
		}
		wait <- rep // buffered, and the waiter was taken: never blocks
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	in.Metadata = map[string]any{"channel": task.ChannelAPI, "replyTo": replyTo}
	res, err := send(ctx, in)
	if err != nil {
		return nil, err
	}
	switch res.FinishReason {
	case pipeline.FinishDelegated:
	case pipeline.FinishPaused:
		return nil, fmt.Errorf("agent %q instance %q %s: %w: answer its pending items (ganglion pending)", agent, key, res.TurnID, d.env.Paused)
	default:
		return &task.Report{Agent: agent, Instance: key, Requester: "user", Channel: task.ChannelAPI, ReplyTo: replyTo,
			Request: in.Text, Response: res.Response.Content, CompletedAt: d.eng.Now()}, nil
	}
	select {
	case rep := <-wait:
		if rep.Error != "" {
			return &rep, fmt.Errorf("task %s: %s", rep.TaskID, rep.Error)
		}
		return &rep, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("agent %q instance %q: waiting for task %s: %w", agent, key, res.TaskID, ctx.Err())
	}
}

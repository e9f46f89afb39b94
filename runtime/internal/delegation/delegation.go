package delegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/telemetry"
	"github.com/ganglion-dev/ganglion/runtime/task"
	"github.com/ganglion-dev/ganglion/store"
)

// The delegation chain: call_agent and call_team_agent record
// delegations in the turn; the step's commit stores them with the tool
// results that announce them (stageDelegations: the turn's task and one
// child task each); when the turn ends, settleTask starts the children. A
// child starts only then, so that it cannot report before a later
// delegation of the same turn is counted. A child that
// answers without delegating reports to its parent (completeTask), and
// when the parent's last report is in, the parent's agent gets one merged
// report, after a reminder of what it delegated (deliverReport).

// The limits of a report.
const (
	// reportLimit is the longest response, in characters, a child reports
	// whole; a longer one is saved to a file under the outputs directory
	// and reported as the file's absolute path and its first
	// reportSummary characters.
	reportLimit   = 2000
	reportSummary = 500
)

// delegation is one call_agent of a running turn.
type delegation struct {
	call  string // the tool call that made it
	child string // the child task's ID
	agent string
	key   string
	team  string
	msg   string
	at    time.Time
	order int    // step × 2^16 + the call's index in the step: parallel calls finish in any order
	trace string // the call's traceparent, when traced
}

var callAgentArgs = []byte(`{"type":"object","properties":{` +
	`"agent_id":{"type":"string","description":"The agent to delegate to: one that list_agents shows."},` +
	`"message":{"type":"string","description":"Everything the agent needs to do the task. Treat it as remembering nothing of earlier tasks: repeat the request's conditions and give absolute file paths."}},` +
	`"required":["agent_id","message"],"additionalProperties":false}`)

var callTeamAgentArgs = []byte(`{"type":"object","properties":{` +
	`"team":{"type":"string","description":"The team, as list_agents shows it."},` +
	`"agent_id":{"type":"string","description":"The team's agent to delegate to."},` +
	`"message":{"type":"string","description":"Everything the agent needs to do the task. Treat it as remembering nothing of earlier tasks."}},` +
	`"required":["team","agent_id","message"],"additionalProperties":false}`)

// delegationTools returns call_agent and call_team_agent.
func (d *Tasks) delegationTools() []pipeline.Tool {
	return []pipeline.Tool{
		{ToolSpec: pipeline.ToolSpec{Name: ToolCallAgent, Category: pipeline.CategoryOther, Parameters: callAgentArgs,
			Description: "Delegate a task to another agent. It works on it after your turn ends, and its report comes back to you as a new message; " +
				"do not claim any result before it arrives. Call it several times in one turn to delegate in parallel: you get one merged report."},
			Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				var args struct{ AgentID, Message string }
				if err := json.Unmarshal(c.Arguments(), &struct {
					AgentID *string `json:"agent_id"`
					Message *string `json:"message"`
				}{&args.AgentID, &args.Message}); err != nil {
					return nil, err
				}
				return d.delegate(ctx, c, "", args.AgentID, args.Message)
			}},
		{ToolSpec: pipeline.ToolSpec{Name: ToolCallTeamAgent, Category: pipeline.CategoryOther, Parameters: callTeamAgentArgs,
			Description: "Delegate a task to an agent of a team; the whole team starts, and the agent may delegate within it. " +
				"Its report comes back to you as a new message; do not claim any result before it arrives."},
			Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				var args struct{ Team, AgentID, Message string }
				if err := json.Unmarshal(c.Arguments(), &struct {
					Team    *string `json:"team"`
					AgentID *string `json:"agent_id"`
					Message *string `json:"message"`
				}{&args.Team, &args.AgentID, &args.Message}); err != nil {
					return nil, err
				}
				if args.Team == "" {
					return nil, errors.New("team is empty: name a team that list_agents shows")
				}
				return d.delegate(ctx, c, args.Team, args.AgentID, args.Message)
			}},
	}
}

// delegate records a call_agent (team "") or call_team_agent of the turn
// c runs in, after checking whom the agent may delegate to.
func (d *Tasks) delegate(ctx context.Context, c *pipeline.ToolCallContext, team, target, msg string) (*pipeline.ToolResult, error) {
	ts, ok := turnhost.Get(c).(*engine.Turn)
	if !ok {
		return nil, errors.New("delegation runs only in a turn")
	}
	a := ts.Agent
	me, _ := d.member(a.Name)
	switch {
	case strings.TrimSpace(msg) == "":
		return nil, errors.New("message is empty: say what the agent is to do, with everything it needs")
	case target == a.Name:
		return nil, fmt.Errorf("you cannot delegate to yourself (%s): do the task yourself, or delegate to another agent", a.Name)
	}
	if t, ok := d.member(target); !ok {
		return nil, fmt.Errorf("no agent %q; you may delegate to: %s", target, d.delegateTargets(me))
	} else if t.Unavailable != nil {
		// The model gets no load error: it could not act on it.
		return nil, fmt.Errorf("agent %q is unavailable: it failed to load; delegate to another agent or do the task yourself", target)
	} else if team == "" && !slices.Contains(me.Peers, target) {
		if t.Team != "" && me.Team == "" {
			return nil, fmt.Errorf("agent %q is in team %q: use %s with team %q", target, t.Team, ToolCallTeamAgent, t.Team)
		}
		if me.Team != "" {
			return nil, fmt.Errorf("you are in team %q and may delegate only within it, to: %s", me.Team, d.delegateTargets(me))
		}
		return nil, fmt.Errorf("you may not delegate to %q; you may delegate to: %s", target, d.delegateTargets(me))
	}
	if team != "" {
		t, ok := d.team(team)
		switch {
		case me.Team != "":
			return nil, fmt.Errorf("you are in team %q: a team's agents cannot delegate up or into another team", me.Team)
		case !ok:
			return nil, fmt.Errorf("no team %q (teams: %s)", team, strings.Join(d.teamNames(), ", "))
		case !slices.Contains(t.Agents, target):
			return nil, fmt.Errorf("team %q has no agent %q (its agents: %s)", team, target, strings.Join(t.Agents, ", "))
		}
	}
	depth := len(turnOf(ts).chain) + 1
	if depth > d.env.Depth {
		return nil, fmt.Errorf("%w: %s → %s/%s is deeper than %d; do the task yourself",
			ErrDepth, strings.Join(append(slices.Clone(turnOf(ts).chain), a.Name+"/"+ts.Inst.Key()), " → "), target, ts.Inst.Key(), d.env.Depth)
	}
	if err := d.checkDelegation(ts); err != nil {
		return nil, err
	}
	dl := delegation{call: c.CallID(), child: d.env.NewID("task_", "task/"+a.Name+"/"+ts.Inst.Key()+"/"+ts.TurnID+"/"+c.CallID()), agent: target, key: ts.Inst.Key(), team: team, msg: msg, at: d.eng.Now(),
		order: ts.Step.Index()<<16 + slices.IndexFunc(ts.StepRes.Message.ToolCalls, func(tc pipeline.ToolCall) bool { return tc.ID == c.CallID() })}
	if d.env.Traced {
		dl.trace = telemetry.Traceparent(ctx)
	}
	turnOf(ts).mu.Lock()
	turnOf(ts).delegs = append(turnOf(ts).delegs, dl)
	turnOf(ts).mu.Unlock()
	return &pipeline.ToolResult{Content: fmt.Sprintf(
		"Delegated to %s as task %s. It starts when your turn ends; its report comes back to you as a new message. "+
			"Until then, do not say you have its result.", target, dl.child)}, nil
}

// delegateTargets lists whom a may delegate to, for errors.
func (d *Tasks) delegateTargets(a Member) string {
	var out []string
	out = append(out, a.Peers...)
	if a.Team == "" && a.CallsTeams {
		for _, t := range d.teams {
			out = append(out, fmt.Sprintf("team %s (%s)", t.Name, strings.Join(t.Agents, ", ")))
		}
	}
	if len(out) == 0 {
		return "nobody"
	}
	return strings.Join(out, ", ")
}

// beginTask reads which task the turn works on, from its input.
func (d *Tasks) beginTask(a *engine.Agent, ts *engine.Turn, in pipeline.InputEvent) {
	clear(turnOf(ts).children)
	turnOf(ts).id, turnOf(ts).delegs, turnOf(ts).children, turnOf(ts).chain = "", turnOf(ts).delegs[:0], turnOf(ts).children[:0], turnOf(ts).chain[:0]
	turnOf(ts).id = d.turnTask(a, ts.StoreCtx, ts.Inst, in)
	turnOf(ts).chain = appendStrings(turnOf(ts).chain, in.Metadata["taskChain"])
	if turnOf(ts).id == "" {
		// A turn that starts a task has no task above it, but it may have
		// callers waiting on it (ctx.agents.request): they come first.
		turnOf(ts).chain = append(turnOf(ts).chain, turnOf(ts).agents.chain...)
	}
}

// turnTask returns the task a turn with input in works on, or "": the
// task its input names, or, for a resume, the task whose turn paused. The
// caller holds the instance's slot.
func (d *Tasks) turnTask(a *engine.Agent, ctx context.Context, inst *engine.Instance, in pipeline.InputEvent) string {
	if id, ok := in.Metadata["taskId"].(string); ok {
		return id
	}
	if in.Kind != pipeline.InputResume {
		return ""
	}
	turn, _ := in.Metadata["resumes"].(string)
	return d.pausedTask(a, ctx, inst.Key(), turn)
}

// pausedTask returns the task whose turn paused as turn, or "".
func (d *Tasks) pausedTask(a *engine.Agent, ctx context.Context, key, turn string) string {
	if turn == "" {
		return ""
	}
	ts, err := d.List(ctx, a.Name, key)
	if err != nil {
		a.Logger.Error("reading the tasks of a resumed turn failed", "instance", key, "err", err)
		return ""
	}
	for _, t := range ts {
		if t.State == task.Paused && t.Turn == turn {
			return t.ID
		}
	}
	return ""
}

// stageDelegations adds the delegations the step's tool calls made to the
// instance's next commit: the turn's task (created if the turn had none)
// with its delegation context and pending count, and one queued child task
// per delegation. The step's tool results and the tasks they announce are
// so stored together, or not at all. The caller holds d.mu until that
// commit, so that no report changes the task in between.
func (d *Tasks) stageDelegations(a *engine.Agent, ts *engine.Turn) error {
	turnOf(ts).mu.Lock()
	delegs := turnOf(ts).delegs
	turnOf(ts).delegs = turnOf(ts).delegs[len(turnOf(ts).delegs):]
	turnOf(ts).mu.Unlock()
	if len(delegs) == 0 {
		return nil
	}
	// Parallel calls finish in any order; the context keeps call order.
	slices.SortStableFunc(delegs, func(x, y delegation) int { return x.order - y.order })
	var t *task.Task
	if turnOf(ts).id != "" {
		got, err := d.Task(ts.StoreCtx, turnOf(ts).id)
		if err != nil {
			return fmt.Errorf("delegating: the turn's %w", err)
		}
		t = &got
	} else {
		t = d.rootTask(a, ts, ts.TurnCtx.Input())
		turnOf(ts).id = t.ID
		d.newTree(t)
	}
	self := a.Name + "/" + ts.Inst.Key()
	for _, d := range delegs {
		t.Context.Delegations = append(t.Context.Delegations, task.Delegation{ChildTaskID: d.child, CallID: d.call, DelegatedTo: d.agent, Instance: d.key, Team: d.team, Message: d.msg, Time: d.at})
		turnOf(ts).children = append(turnOf(ts).children, &task.Task{ID: d.child, Agent: d.agent, Instance: d.key, Requester: self, Channel: task.ChannelAgent,
			OriginalRequest: d.msg, ParentID: t.ID, Root: rootOf(t), CallerTurn: ts.TurnID, Trace: d.trace, Team: d.team, State: task.Queued, Chain: append(slices.Clone(t.Chain), self),
			CreatedAt: d.at, Context: task.DelegationContext{OriginalRequest: d.msg, Requester: self}})
	}
	d.spend(ts.StoreCtx, t, task.Spend{Delegations: len(delegs)})
	turnOf(ts).staged, turnOf(ts).stagedRoot = len(delegs), rootOf(t)
	t.Pending += len(delegs)
	t.State, t.Turn = task.Waiting, ""
	delete(d.cache, t.ID) // written below, through the instance's commit
	put := ts.Inst.Unsaved().Tasks
	for _, c := range append(turnOf(ts).children[len(turnOf(ts).children)-len(delegs):], t) {
		rec, err := encodeTask(c)
		if err != nil {
			return err
		}
		put = append(put, rec)
	}
	ts.Inst.Unsaved().Tasks = put
	return nil
}

// settleTask records what a turn that works on a task, or delegated, did to
// its task, and starts what follows: the children it delegated to, the
// merged report of a task whose reports came in while it paused, or the
// task's completion. The caller holds the instance's slot; res and err are
// the turn's, returned updated.
func (d *Tasks) settleTask(a *engine.Agent, ts *engine.Turn, in pipeline.InputEvent, res *pipeline.TurnResult, turnErr error) (*pipeline.TurnResult, error) {
	var complete func() error
	res, turnErr = d.settleLocked(a, ts, in, res, turnErr, &complete)
	if complete != nil {
		if err := complete(); err != nil {
			// The turn is stored, the task's end is not: its report (or
			// its answer) did not get where it goes, or the task could not
			// be read. The instance is
			// read again at its next turn, which settles the task from
			// the history and sends it again (resettleTask), instead of
			// running the turn a second time; runTask asks for that turn.
			ts.Inst.Unload()
			turnErr = errors.Join(turnErr, fmt.Errorf("%w: %w", errUnsettled, err))
		}
	}
	return res, turnErr
}

// errUnsettled is the error of a task's turn that ended, whose end did
// not reach the task's parent or requester: runTask tries again.
var errUnsettled = errors.New("the task's end was not recorded")

// settleLocked is settleTask under d.mu; a completion of the task is
// left in complete, to run after the lock is released.
func (d *Tasks) settleLocked(a *engine.Agent, ts *engine.Turn, in pipeline.InputEvent, res *pipeline.TurnResult, turnErr error, complete *func() error) (*pipeline.TurnResult, error) {
	ctx := ts.StoreCtx
	d.mu.Lock()
	defer d.mu.Unlock()
	children := turnOf(ts).children
	var t *task.Task
	if turnOf(ts).id != "" {
		got, err := d.Task(ctx, turnOf(ts).id)
		switch _, hasTask := in.Metadata["taskId"]; {
		case err != nil && !errors.Is(err, task.ErrNotFound) && (hasTask || in.Kind == pipeline.InputResume):
			// The task may well be there, waiting for this turn's end:
			// settled again from the history, as when its end does not
			// reach its parent (settleTask).
			id := turnOf(ts).id
			*complete = func() error { return fmt.Errorf("task %s: reading it: %w", id, err) }
		case err != nil:
			a.Logger.Warn("turn's task is gone", "instance", ts.Inst.Key(), "turn", ts.TurnID, "task", turnOf(ts).id, "err", err)
		default:
			t = &got
		}
	}
	// The children are stored, and the history says they were delegated:
	// they run whatever became of the turn.
	defer func() {
		for _, c := range children {
			d.dispatch(c)
		}
	}()
	if d.eng.Bus.Active() && t != nil {
		for _, c := range children {
			d.eng.Bus.Publish(events.Event{Topic: events.TaskDelegated, Agent: a.Name, Instance: ts.Inst.Key(), TurnID: ts.TurnID, Source: "runtime",
				Data: events.TaskDelegatedData{TaskID: t.ID, ChildTaskID: c.ID, To: c.Agent, Team: c.Team, Message: oneLine(c.OriginalRequest, 200), Pending: t.Pending, Root: t.ParentID == ""}})
		}
	}
	if t == nil {
		return res, turnErr
	}
	res.TaskID = t.ID
	d.spend(ctx, t, task.Spend{Turns: 1, Tokens: ts.Usage.InputTokens + ts.Usage.OutputTokens})
	if turnErr != nil {
		if len(children) > 0 || res.FinishReason == pipeline.FinishAborted || storeOutage(turnErr) {
			// It waits for its children; or the turn was aborted (the
			// caller gave up, or the runtime closes) and runs again after a
			// restart; or the store did not take what the turn did, which
			// is no failure of the task: its turn runs again (runTask),
			// and continues from what the store kept.
			return res, turnErr
		}
		failed := turnErr
		*complete = func() error { return d.completeTask(ctx, t, "", failed) }
		return res, turnErr
	}
	if in.Kind == pipeline.InputDelegationReport {
		if n := engine.IntMeta(in.Metadata["reported"]); n > t.Context.Reported {
			t.Context.Reported = min(n, len(t.Context.Responses))
		}
	}
	switch {
	case res.FinishReason == pipeline.FinishPaused:
		t.State, t.Turn = task.Paused, ts.TurnID
	case t.Pending > 0:
		t.State, t.Turn = task.Waiting, ""
	case t.Context.Reported < len(t.Context.Responses):
		// Reports came in while the turn paused: hand them over now.
		t.State, t.Turn = task.Reporting, ""
	default:
		answer := res.Response.Content
		*complete = func() error { return d.completeTask(ctx, t, answer, nil) }
		return res, turnErr
	}
	if res.FinishReason == pipeline.FinishText || res.FinishReason == pipeline.FinishMaxSteps {
		// Its answer is the task's, still to come.
		res.FinishReason = pipeline.FinishDelegated
	}
	if err := d.commitTasks(ctx, []*task.Task{t}); err != nil {
		return res, fmt.Errorf("agent %q instance %q %s: saving task %s: %w", a.Name, ts.Inst.Key(), ts.TurnID, t.ID, err)
	}
	if t.State == task.Reporting {
		d.deliverReport(t.ID)
	}
	return res, turnErr
}

// rootTask makes the task of a turn that delegated without working on a task.
func (d *Tasks) rootTask(a *engine.Agent, ts *engine.Turn, in pipeline.InputEvent) *task.Task {
	str := func(k, def string) string {
		if s, _ := in.Metadata[k].(string); s != "" {
			return s
		}
		return def
	}
	requester := "user"
	if in.Kind == pipeline.InputAgentRequest {
		requester = str("callerAgent", "agent") + "/" + str("callerInstanceKey", ts.Inst.Key())
	}
	requester = str("requester", requester)
	t := &task.Task{ID: d.env.NewID("task_", "task/"+a.Name+"/"+ts.Inst.Key()+"/"+ts.TurnID), Agent: a.Name, Instance: ts.Inst.Key(), Requester: requester, Channel: str("channel", task.ChannelAPI),
		ReplyTo: str("replyTo", ""), OriginalRequest: in.Text, Chain: slices.Clone(turnOf(ts).chain), CreatedAt: d.eng.Now(), Trace: ts.Trace}
	t.Context = task.DelegationContext{OriginalRequest: in.Text, Requester: requester}
	return t
}

func (d *Tasks) publishTask(topic string, t *task.Task, data any) {
	if d.eng.Bus.Active() {
		d.eng.Bus.Publish(events.Event{Topic: topic, Agent: t.Agent, Instance: t.Instance, Source: "runtime", Data: data})
	}
}

// dispatch starts the turn of child task c in the background.
func (d *Tasks) dispatch(c *task.Task) { d.background(c.ID) }

// deliverReport hands task id's merged report to its agent in the
// background.
func (d *Tasks) deliverReport(id string) { d.background(id) }

// taskInput is the input of the turn task t waits for: its request when it
// is queued, its merged report when it is reporting; ok is false when it
// waits for no turn.
func taskInput(t *task.Task) (in pipeline.InputEvent, ok bool) {
	switch t.State {
	case task.Queued:
		callerAgent, callerKey, _ := strings.Cut(t.Requester, "/")
		in = pipeline.InputEvent{Kind: pipeline.InputAgentRequest, Text: t.OriginalRequest, Metadata: map[string]any{
			"taskId": t.ID, "parentTaskId": t.ParentID, "taskChain": t.Chain,
			"callerAgent": callerAgent, "callerInstanceKey": callerKey, "callerTurnId": t.CallerTurn, "callSource": sourceTool,
		}}
		if t.Team != "" {
			in.Metadata["team"] = t.Team
		}
		return in, true
	case task.Reporting:
		fresh := t.Context.Responses[min(t.Context.Reported, len(t.Context.Responses)):]
		in = pipeline.InputEvent{Kind: pipeline.InputDelegationReport, Text: reportText(t, fresh), Metadata: map[string]any{
			"taskId": t.ID, "reported": len(t.Context.Responses), "taskChain": t.Chain, "callSource": sourceTool,
		}}
		if len(fresh) == 1 {
			in.Metadata["callerAgent"] = fresh[0].FromAgent
		}
		return in, true
	}
	return in, false
}

// ErrTaskMoved is Send's refusal of a task's input that the task no
// longer waits for.
var ErrTaskMoved = errors.New("the task no longer waits for this turn")

// CheckInput refuses a task's input (its request, or a merged report)
// when the task no longer waits for that turn: it completed, or moved on,
// while the input waited for the instance's slot (a resume turn can settle
// a task whose turn paused just before a stop of the process). The input
// was built from the task as it was before the wait.
func (d *Tasks) CheckInput(ctx context.Context, in pipeline.InputEvent) error {
	id, _ := in.Metadata["taskId"].(string)
	want := task.Queued
	switch {
	case id == "":
		return nil
	case in.Kind == pipeline.InputDelegationReport:
		want = task.Reporting
	case in.Kind != pipeline.InputAgentRequest:
		return nil
	}
	t, err := d.Task(ctx, id)
	switch {
	case errors.Is(err, task.ErrNotFound):
		return fmt.Errorf("task %s: %w: it completed", id, ErrTaskMoved)
	case err != nil:
		return err
	case t.State != want:
		return fmt.Errorf("task %s: %w: it is %s", id, ErrTaskMoved, t.State)
	}
	return nil
}

// background runs the turn task id waits for in a goroutine. A task runs
// one turn at a time: asked while its turn runs (a child reported before
// the turn that delegated to it returned), it runs again after, as the
// task is then. The turn's input is built from the task as stored when it
// starts, so a stale list of tasks cannot run a finished task's turn. A
// turn that cannot start (its instance is paused, or the runtime closes)
// leaves the task as it is: it starts after the instance resumes, or after
// a restart.
func (d *Tasks) background(id string) {
	d.flightMu.Lock()
	if d.inFlight[id] {
		d.again[id] = true
		d.flightMu.Unlock()
		return
	}
	d.inFlight[id] = true
	d.flightMu.Unlock()
	d.runTask(id)
}

// runTask runs task id's turn in a goroutine; the caller holds the task's
// place in d.inFlight, which the goroutine gives back (land). A turn
// the store did not take (it was unavailable, or a commit's outcome is
// unknown) runs again after a wait (engine.RetryWaits), as the task is then,
// until the store takes it or the runtime stops; what is still undone
// then, the next start runs.
func (d *Tasks) runTask(id string) {
	if !d.env.Gate.Enter() {
		d.land(id)
		return
	}
	go func() {
		defer d.env.Gate.Leave()
		defer d.land(id)
		for _, wait := range append([]time.Duration{0}, engine.RetryWaits...) {
			if wait > 0 {
				select {
				case <-d.bg.Done():
					return
				case <-time.After(wait):
				}
			}
			if !retryTask(d.runTaskOnce(id)) {
				return
			}
		}
	}()
}

// storeOutage reports whether err says that the store did not take a
// write: it was unavailable, or the write's outcome is unknown.
func storeOutage(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown)
}

// retryTask reports whether a task's turn that failed with err runs
// again: the store did not take it, or its end was not recorded.
func retryTask(err error) bool {
	return storeOutage(err) || errors.Is(err, errUnsettled)
}

// runTaskOnce runs task id's turn, as the task is stored now, and returns
// the error of a turn to run again (retryTask), nil else.
func (d *Tasks) runTaskOnce(id string) error {
	t, err := d.Task(d.bg, id)
	if err != nil {
		if storeOutage(err) {
			return err
		}
		return nil
	}
	if t.State == task.Answered {
		d.deliverAnswer(d.bg, &t)
		return nil
	}
	in, ok := taskInput(&t)
	if !ok {
		return nil
	}
	if err := d.overBudget(d.bg, &t); err != nil {
		// The tree's budget is spent: the task ends without its turn,
		// and its parent's report turn will not run either.
		if err := d.completeTask(d.bg, &t, "", err); err != nil {
			d.env.Logger.Error("ending a task over its budget failed", "task", id, "err", err)
		}
		return nil
	}
	if t.State == task.Queued && t.Team != "" {
		d.activateTeam(t.Team, t.Instance)
	}
	ctx := d.bg
	if d.env.Traced {
		ctx = telemetry.WithParent(ctx, t.Trace) // the turn joins the trace of what started the task
	}
	_, err = d.env.Deliver(ctx, t.Agent, t.Instance, in)
	switch {
	case errors.Is(err, d.env.Paused):
		d.env.Logger.Info("a task waits for its paused instance", "task", id, "agent", t.Agent, "instance", t.Instance)
		d.block(t.Agent, t.Instance)
		// The instance may have resumed between the refusal and the
		// block: its unblock found nothing to start then.
		if waiting, err := d.env.Waiting(d.bg, t.Agent, t.Instance); err == nil && !waiting {
			d.unblock(t.Agent, t.Instance)
		}
	case errors.Is(err, ErrTaskMoved):
		d.env.Logger.Debug("a task's turn was not needed any more", "task", id, "err", err)
	case errors.Is(err, errUnsettled) && d.bg.Err() == nil:
		d.env.Logger.Warn("a task's turn ended, but its end was not recorded; it is settled again", "task", id, "agent", t.Agent, "instance", t.Instance, "err", err)
		return err
	case storeOutage(err) && d.bg.Err() == nil:
		d.env.Logger.Warn("the store did not take a task's turn; it runs again", "task", id, "agent", t.Agent, "instance", t.Instance, "err", err)
		return err
	case err != nil && d.bg.Err() == nil:
		d.env.Logger.Warn("a task's turn failed", "task", id, "agent", t.Agent, "instance", t.Instance, "err", err)
	}
	return nil
}

// land gives back task id's place in d.inFlight, or runs the task again if
// it was asked for meanwhile.
func (d *Tasks) land(id string) {
	d.flightMu.Lock()
	if d.again[id] && d.bg.Err() == nil {
		delete(d.again, id)
		d.flightMu.Unlock()
		d.runTask(id)
		return
	}
	delete(d.again, id)
	delete(d.inFlight, id)
	if len(d.inFlight) == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
	d.flightMu.Unlock()
}

// Wait waits until no turn runs in the background: each delegation
// chain has completed, paused or stopped, and middleware's agent sends
// have ended. It does not return while a chain still moves.
func (d *Tasks) Wait(ctx context.Context) error {
	d.flightMu.Lock()
	if len(d.inFlight) == 0 {
		d.flightMu.Unlock()
		return nil
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.flightMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// block notes that a task waits for agent's instance key to resume.
func (d *Tasks) block(agent, key string) {
	d.flightMu.Lock()
	d.blocked[engine.ID{Agent: agent, Key: key}] = true
	d.nBlocked.Store(int32(len(d.blocked)))
	d.flightMu.Unlock()
}

// unblock starts the tasks that waited for agent's instance key, if any.
// The runtime calls it after the instance's turns; it costs a map lookup
// when nothing waits.
func (d *Tasks) unblock(agent, key string) {
	if d.nBlocked.Load() == 0 {
		return // every turn calls this: no shared lock when nothing waits
	}
	d.flightMu.Lock()
	id := engine.ID{Agent: agent, Key: key}
	was := d.blocked[id]
	delete(d.blocked, id)
	d.nBlocked.Store(int32(len(d.blocked)))
	d.flightMu.Unlock()
	if was {
		d.Kick(context.Background(), agent, key)
	}
}

// Kick starts the turns that tasks of agent's instance key wait for
// ("" for all): queued tasks whose turn has not finished, and merged
// reports not yet handed over. The runtime calls it at start-up, which is
// what makes delegations survive a restart.
func (d *Tasks) Kick(ctx context.Context, agent, key string) {
	ts, err := d.List(ctx, agent, key)
	if err != nil {
		d.env.Logger.Error("reading open tasks failed", "err", err)
		return
	}
	for _, t := range ts {
		if !d.env.Place().MayRun(ctx, t.Agent, t.Instance) {
			continue // another process's tasks are its own to run
		}
		if ta, ok := d.member(t.Agent); !ok {
			d.env.Logger.Error("a task belongs to an agent the config does not define; it waits", "task", t.ID, "agent", t.Agent)
			continue
		} else if ta.Unavailable != nil {
			d.env.Logger.Error("a task belongs to an agent that failed to load; it waits", "task", t.ID, "agent", t.Agent)
			continue
		}
		switch t.State {
		case task.Queued:
			d.dispatch(&t)
		case task.Reporting:
			d.deliverReport(t.ID)
		case task.Answered:
			if _, ok := d.channels[t.Channel]; ok {
				d.background(t.ID) // one delivery at a time, with the task's turns
			}
		}
	}
}

// resettleTask settles, when inst loads, the task whose turn ended while
// the task did not record it: the process stopped between the commit that
// stored the turn's answer (or the question it paused on) and the task's
// own. The history is the record: its last turn, with the resumes of its
// pauses, works on the task, ran to its answer or paused, and the task
// still waits for that turn. The task is then settled as the turn's end
// would have settled it (completed and reported, or marked paused), so
// that the turn does not run again and the task does not wait for a turn
// that ran. The caller holds the instance's slot.
func (d *Tasks) resettleTask(a *engine.Agent, ctx context.Context, inst *engine.Instance) error {
	tr, ok := inst.LastTurn()
	if !ok || tr.Task() == "" {
		return nil
	}
	turnID, _ := tr.Last.Metadata["turn_id"].(string)
	paused := false // the turn waits for a human
	for _, turn := range inst.Paused {
		paused = paused || turn == turnID
	}
	if turnID == "" || !tr.Answered && !paused {
		return nil // cut short in a step: the task's next turn continues it (interrupt.go)
	}
	t, err := d.Task(ctx, tr.Task())
	switch {
	case errors.Is(err, task.ErrNotFound):
		return nil
	case err != nil:
		return err
	case t.Agent != a.Name || t.Instance != inst.Key():
		return nil
	}
	_, report := tr.Origin.Metadata["reported"]
	var stale bool
	switch {
	case paused:
		stale = t.State != task.Paused || t.Turn != turnID
	case t.State == task.Queued:
		stale = !report
	case t.State == task.Reporting, t.State == task.Waiting:
		stale = report && engine.IntMeta(tr.Origin.Metadata["reported"]) > t.Context.Reported
	case t.State == task.Paused:
		stale = t.Turn != turnID // resumed, and the resume answered
	}
	if !stale {
		return nil
	}
	a.Logger.Info("the process stopped before a task recorded its turn's end: settling it from the history",
		"instance", inst.Key(), "turn", turnID, "task", t.ID, "state", t.State)
	in := pipeline.InputEvent{Kind: pipeline.InputAgentRequest, Metadata: tr.Origin.Metadata}
	if report {
		in.Kind = pipeline.InputDelegationReport
	}
	res := &pipeline.TurnResult{TurnID: turnID, FinishReason: pipeline.FinishPaused}
	if !paused {
		res.FinishReason = pipeline.FinishText
		res.Response = *inst.History().At(inst.History().Len() - 1).Msg
	}
	ts := &engine.Turn{Agent: a, Inst: inst, TurnID: turnID, StoreCtx: ctx, Ext: &Turn{}}
	turnOf(ts).id = t.ID
	_, err = d.settleTask(a, ts, in, res, nil)
	return err
}

// activateTeam loads the instances of every agent of team under key: the
// whole team starts when one of its agents is delegated to.
func (d *Tasks) activateTeam(team, key string) {
	t, _ := d.team(team)
	for _, name := range t.Agents {
		done, err := d.env.Hold(d.bg, "team "+strconv.Quote(team), name, key)
		if errors.Is(err, seam.ErrMoved) {
			continue // started on the process that owns it
		}
		if err != nil {
			d.env.Logger.Warn("starting a team agent failed", "team", team, "agent", name, "err", err)
			continue
		}
		done()
	}
	if d.eng.Bus.Active() {
		d.eng.Bus.Publish(events.Event{Topic: events.TeamActivated, Instance: key, Source: "runtime",
			Data: events.TeamActivatedData{Team: team, Agents: t.Agents}})
	}
}

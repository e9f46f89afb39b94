package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Turn is the engine's state for one turn, reached from the pipeline
// contexts through internal/turnhost. Each instance owns one and reuses it
// for every turn, since its turns run one at a time.
type Turn struct {
	Agent  *Agent
	Inst   *Instance
	TurnID string
	// StoreCtx is the turn's context without its cancellation: what a
	// turn did is saved even when its caller gives up.
	StoreCtx context.Context
	Conv     Conversation
	req      model.Request
	steps    int                   // steps run so far
	Usage    pipeline.Usage        // usage so far
	StepRes  pipeline.StepResult   // the current step's result
	results  []pipeline.ToolResult // the current step's tool results
	TurnCtx  pipeline.TurnContext
	Step     pipeline.StepContext
	call     pipeline.ToolCallContext // for the common step with one tool call
	text     strings.Builder
	calls    []partialCall
	// Agents is the turn's ctx.agents, which a hook sets in Begin.
	Agents pipeline.Agents
	// input is the turn's input as it came, before any middleware
	// changed it (see turnInput).
	input pipeline.InputEvent
	// inputID is the ID of the turn's input message, which reductions keep;
	// keepIDs are more messages a reduction must keep (the summary just
	// written). sentTokens is the effective history's token count when the
	// model was last called, when counting is on.
	inputID    string
	keepIDs    map[string]bool
	sentTokens int
	// secretFn is ts.secret, bound once: model.Request.Secret.
	secretFn func(string) (string, bool)
	// PauseAfter is set when a tool call paused the turn (it waits for
	// something outside the turn): the turn ends paused after the step.
	// Awaits maps the calls of that step to what they wait for; guarded
	// by Conv.
	PauseAfter atomic.Bool
	Awaits     map[string]string
	// Ext is the hooks' own state for the instance's turns, which the
	// embedding runtime sets when it makes the instance.
	Ext any
	// cont is the interrupted turn this one continues, if any
	// (interrupt.go): its input is stored already, its steps counted.
	cont continuation
	// Trace is the turn's W3C traceparent when it is traced, for the
	// tasks and pending items it leaves; Links are the traceparents the
	// next turn links to (the paused turns a resume resumes), which its
	// caller sets.
	Trace string
	Links []string
}

type partialCall struct {
	id, name string
	args     []byte
}

// RunTurn runs one turn of the instance, whose turn slot the caller holds:
// it sets up the turn's state, runs the turn chain (TurnHandler is its
// innermost layer) and settles what the turn leaves behind.
func (a *Agent) RunTurn(ctx context.Context, inst *Instance, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	r := a.Env
	// A stop whose time is up cuts the turn (Runtime.Shutdown).
	ctx, unbind := r.Bound(ctx)
	defer unbind()
	// The instance's turns run one at a time, so its turn state is reused.
	ts := &inst.ts
	ts.Agent, ts.Inst = a, inst
	// A task's turn that a stop of the process cut short continues where
	// it stopped, under its own ID, rather than running again (interrupt.go).
	cont, again := inst.Interrupted(in)
	turn := cont.turn
	if again {
		ts.TurnID = cont.turnID
		in.Metadata = maps.Clone(in.Metadata)
		in.Metadata[MetaContinues] = cont.turnID
	} else {
		inst.meta.Turns++
		// Save the count even if the turn adds no message, so that turn
		// IDs stay unique across restarts.
		inst.metaDirty = true
		turn = inst.meta.Turns
		ts.TurnID = TurnID(uint64(turn))
	}
	switch ts.StoreCtx = ctx; {
	case ctx == r.Halt:
		ts.StoreCtx = context.Background() // what bound made it of
	case ctx.Done() != nil:
		// Only a context that can end needs detaching (one without Done has
		// no deadline either); detaching costs an allocation a turn.
		ts.StoreCtx = context.WithoutCancel(ctx)
	}
	ts.Conv.in, ts.Conv.ts = inst, ts
	ts.steps, ts.Usage = 0, pipeline.Usage{}
	ts.req = model.Request{Agent: a.Name, InstanceKey: inst.key, TurnID: ts.TurnID, Turn: int(turn), InputKind: in.Kind,
		Model: a.ModelName, System: a.System, MaxOutputTokens: a.MaxOutput, Secret: ts.secretFn}
	tc := &ts.TurnCtx
	ts.Agents = nil
	ts.inputID, ts.keepIDs, ts.sentTokens, ts.input = "", nil, 0, in
	ts.PauseAfter.Store(false)
	clear(ts.Awaits)
	for _, h := range a.Env.Hooks {
		h.Begin(ts, in)
	}
	ts.cont = cont
	tc.Reset(pipeline.TurnInfo{Agent: a.Name, InstanceKey: inst.key, TurnID: ts.TurnID, Input: in, Conversation: &ts.Conv, Agents: ts.Agents,
		Window: (*window)(ts), Models: (*window)(ts)})
	turnhost.Set(tc, ts)
	if r.Bus.Active() {
		r.Bus.Publish(events.Event{Topic: events.TurnStarted, Agent: a.Name, Instance: inst.key, TurnID: ts.TurnID, Source: "runtime",
			Data: events.TurnStartedData{Kind: in.Kind, Text: in.Text, Continues: again}})
	}
	before := inst.hist.Len()
	var span TurnSpan
	if r.Tracer != nil {
		ctx, span, ts.Trace = r.Tracer.StartTurn(ctx, a.Name, inst.key, ts.TurnID, in, ts.Links)
	}
	ts.Links = nil
	res, err := a.Pipe.RunTurn(ctx, tc)
	if err == nil && (res.AnsweredBy != "" || ts.inputID == "" || res.FinishReason == pipeline.FinishText) {
		err = a.keepAnswer(ts, res, before)
	}
	// The usage of every step, also of a turn that failed later.
	if ts.Usage != (pipeline.Usage{}) {
		inst.meta.Usage = inst.meta.Usage.Add(ts.Usage)
		inst.metaDirty = true
	}
	if ferr := inst.Flush(ts.StoreCtx); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		reason := pipeline.FinishError
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			reason = pipeline.FinishAborted
			if context.Cause(ctx) == a.Env.Cut {
				err = a.Env.Cut // its caller did not cancel it: say why it ended
			}
		}
		res = &pipeline.TurnResult{TurnID: ts.TurnID, FinishReason: reason, Steps: ts.steps, Usage: ts.Usage}
		err = fmt.Errorf("agent %q instance %q %s: %w", a.Name, inst.key, ts.TurnID, err)
		a.Logger.Debug("turn failed", "instance", inst.key, "turn", ts.TurnID, "err", err)
	} else {
		// A middleware that answered the turn itself may leave these out.
		res.TurnID = ts.TurnID
		if res.FinishReason == "" {
			res.FinishReason = pipeline.FinishText
		}
	}
	for _, h := range a.Env.Hooks {
		res, err = h.End(ts, in, res, err)
	}
	if err != nil && inst.loaded && inst.callsOpen(before) {
		// The turn failed between storing a step's tool calls and their
		// results: the next turn must not begin after calls without
		// results. The instance is read again at its next use, which gives
		// them their "interrupted" result first (closeInterrupted).
		inst.Unload()
	}
	if span != nil {
		span.End(res, err)
	}
	if r.Bus.Active() {
		data := events.TurnFinishedData{FinishReason: res.FinishReason, Steps: res.Steps, Usage: res.Usage, Response: res.Response.Content}
		if err != nil {
			data.Error = err.Error()
		}
		r.Bus.Publish(events.Event{Topic: events.TurnFinished, Agent: a.Name, Instance: inst.key, TurnID: ts.TurnID, Source: "runtime", Data: data})
	}
	// Drop what the turn referenced: the caller's context and input.
	ts.StoreCtx, ts.input = nil, pipeline.InputEvent{}
	ts.TurnCtx.Reset(pipeline.TurnInfo{})
	ts.req.Messages, ts.req.Tools = nil, nil
	return res, err
}

// TurnHandler is the innermost turn handler: the loop of steps.
func (a *Agent) TurnHandler(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
	ts := turnhost.Get(t).(*Turn)
	if ts.cont.inputID != "" {
		return a.steps(ctx, ts, t, ts.cont.inputID, ts.cont.steps+1)
	}
	in, err := ts.turnInput()
	if err != nil {
		return nil, err
	}
	input := inputMessage(ts, in)
	if err := ts.Conv.append(&input); err != nil {
		return nil, err
	}
	inputID := ts.Inst.hist.At(ts.Inst.hist.Len() - 1).Msg.ID
	if in.Kind == pipeline.InputResume {
		// The resume is on record before anything else of the turn runs:
		// the stored message is what says the paused turn was resumed.
		if err := ts.Inst.Flush(ts.StoreCtx); err != nil {
			return nil, err
		}
		for _, h := range a.Env.Hooks {
			if err := h.Resumed(ctx, ts, t, in); err != nil {
				return nil, err
			}
		}
	}
	return a.steps(ctx, ts, t, inputID, 1)
}

// steps runs the turn's steps from first on; inputID is the turn's input
// message.
func (a *Agent) steps(ctx context.Context, ts *Turn, t *pipeline.TurnContext, inputID string, first int) (*pipeline.TurnResult, error) {
	ts.inputID = inputID
	res := &pipeline.TurnResult{TurnID: ts.TurnID} // the caller keeps it
	ts.Step.Init(t, first, a.Tools)
	for step := first; step <= a.MaxSteps; step++ {
		ts.Step.Reset(step, a.ToolsOf(ctx, ts.Inst))
		sr, err := a.runStep(ctx, ts, step)
		if err != nil {
			return nil, err
		}
		ts.steps, ts.Usage = step, ts.Usage.Add(sr.Usage)
		res.Steps, res.Usage = ts.steps, ts.Usage
		res.Response = sr.Message
		if a.Env.Bus.Active() {
			a.Env.Bus.Publish(events.Event{Topic: events.StepFinished, Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime",
				Data: events.StepFinishedData{Step: step, ToolCalls: len(sr.Message.ToolCalls), Usage: sr.Usage}})
		}
		switch {
		case sr.Stop != "":
			res.FinishReason = sr.Stop
			return res, nil
		case ts.PauseAfter.Load():
			res.FinishReason = pipeline.FinishPaused
			return res, nil
		case len(sr.Message.ToolCalls) == 0 && !sr.Continue:
			res.FinishReason = pipeline.FinishText
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	res.FinishReason = pipeline.FinishMaxSteps
	return res, nil
}

// runStep runs step n's chain, within its span when tracing.
func (a *Agent) runStep(ctx context.Context, ts *Turn, n int) (*pipeline.StepResult, error) {
	tr := a.Env.Tracer
	if tr == nil {
		return a.Pipe.RunStep(ctx, &ts.Step)
	}
	ctx = tr.StartStep(ctx, n)
	sr, err := a.Pipe.RunStep(ctx, &ts.Step)
	tr.EndStep(ctx, err)
	return sr, err
}

// turnInput returns the turn's input as its middleware left it
// (pipeline.TurnContext.SetInput). A middleware may change the text and
// metadata of its own, not the reserved keys (pipeline.CheckMetadata): one
// it sets or changes fails the turn, and one it leaves out is kept, for a
// middleware that sets an input of its own knows nothing of the runtime's.
func (ts *Turn) turnInput() (pipeline.InputEvent, error) {
	in := ts.TurnCtx.Input()
	if err := pipeline.CheckMetadata("a middleware's change of the turn's input", ts.input.Metadata, in.Metadata, pipeline.MetaPinned); err != nil {
		return in, err
	}
	in.Metadata = keepReserved(ts.input.Metadata, in.Metadata)
	return in, nil
}

// inputMessage is the stored form of the turn's input in.
func inputMessage(ts *Turn, in pipeline.InputEvent) pipeline.Message {
	input := pipeline.Message{Role: pipeline.RoleUser, Content: in.Text, Source: inputSource(in), Metadata: in.Metadata}
	if _, task := in.Metadata["taskId"]; task || in.Kind == pipeline.InputResume {
		// The input says which turn it started: a resume, to mark the
		// paused turn resumed; a task's, to continue the turn if a stop
		// of the process cuts it short.
		input.Metadata = maps.Clone(in.Metadata)
		if input.Metadata == nil {
			input.Metadata = map[string]any{}
		}
		input.Metadata["turn_id"] = ts.TurnID
	}
	return input
}

// keepAnswer makes the history hold what the user saw of a turn whose
// answer a middleware made (res.AnsweredBy, see pipeline.TurnResult):
//
//   - answered without Next, the turn ran no step and stored nothing: its
//     input and the middleware's answer are stored now, the answer as the
//     extension's message (unless the middleware wrote the history
//     itself: then that is what the history holds);
//   - answered with another text than the model's, the model's final
//     message of the turn is replaced by it, as the extension's: the
//     model reads in its next turns what the user read.
//
// before is the history's length when the turn began.
func (a *Agent) keepAnswer(ts *Turn, res *pipeline.TurnResult, before int) error {
	h := &ts.Inst.hist
	if ts.inputID == "" {
		if h.Len() != before {
			return nil
		}
		in, err := ts.turnInput()
		if err != nil {
			return err
		}
		input := inputMessage(ts, in)
		if err := ts.Conv.append(&input); err != nil {
			return err
		}
		if res.Response.Content == "" {
			return nil
		}
		answer := pipeline.Message{Role: pipeline.RoleAssistant, Content: res.Response.Content,
			Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: res.AnsweredBy}}
		if err := ts.Conv.append(&answer); err != nil {
			return err
		}
		res.Response = *h.At(h.Len() - 1).Msg
		return nil
	}
	if res.FinishReason != pipeline.FinishText || h.Len() == 0 {
		return nil
	}
	last := h.At(h.Len() - 1).Msg
	if last.Role != pipeline.RoleAssistant || last.Source.Type != pipeline.SourceModel || len(last.ToolCalls) > 0 || last.Content == res.Response.Content {
		return nil
	}
	m := *last
	m.Content, m.Source, m.Reasoning = res.Response.Content, pipeline.Source{Type: pipeline.SourceExtension, Extension: res.AnsweredBy}, ""
	if err := ts.Conv.apply(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: last.ID, Message: m}); err != nil {
		return err
	}
	res.Response = *h.At(h.Len() - 1).Msg
	return nil
}

func inputSource(in pipeline.InputEvent) pipeline.Source {
	switch in.Kind {
	case pipeline.InputAgentRequest, pipeline.InputDelegationReport:
		caller, _ := in.Metadata["callerAgent"].(string)
		return pipeline.Source{Type: pipeline.SourceAgent, Agent: caller}
	case pipeline.InputResume:
		return pipeline.Source{Type: pipeline.SourceRuntime}
	}
	return pipeline.Source{Type: pipeline.SourceUser}
}

// StepHandler is the innermost step handler: one model call, then the tools
// it asked for.
func (a *Agent) StepHandler(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	ts := turnhost.Get(s).(*Turn)
	// The reply is built in place and copied once, into the history: a
	// message is ~200 bytes, and returning it by value copied it at each
	// level of the model call.
	var msg pipeline.Message
	usage, err := a.callModelFitting(ctx, ts, s, &msg)
	if err != nil {
		return nil, err
	}
	if err := ts.Conv.append(&msg); err != nil {
		return nil, err
	}
	stored := ts.Inst.hist.At(ts.Inst.hist.Len() - 1).Msg // with its ID and time
	// What middleware stores on reading the reply (the pending item of a
	// question) commits with it, in the flush below or in its own. The
	// stored message is handed over, not msg: taking msg's address would
	// move it to the heap at every step.
	if err := s.PublishReply(ctx, stored); err != nil {
		return nil, err
	}
	// The model's request for tools is stored before any tool runs, so a
	// crash cannot run a tool whose call the history does not show.
	if err := ts.Inst.Flush(ts.StoreCtx); err != nil {
		return nil, err
	}
	sr := &ts.StepRes // valid until the next step
	*sr = pipeline.StepResult{Message: *stored, Usage: usage}
	if len(stored.ToolCalls) == 0 {
		return sr, nil
	}
	// Commands receive the instance's secrets, and results are redacted of them.
	if err := ts.Inst.LoadSecrets(ts.StoreCtx); err != nil {
		return nil, err
	}
	// A failed toolCall middleware fails the turn, but only after every call's
	// result is in the history.
	results, toolErr := a.runTools(ctx, ts, s, stored.ID, stored.ToolCalls)
	sr.ToolResults = results
	for _, r := range sr.ToolResults {
		var meta map[string]any
		if item := ts.Awaits[r.CallID]; item != "" {
			// What the call waits for: if a stop of the process cuts the
			// resume short, the next load says so (interrupt.go).
			meta = map[string]any{MetaAwaits: item, "turn_id": ts.TurnID}
		}
		err := ts.Conv.append(&pipeline.Message{
			Role: pipeline.RoleTool, Content: r.Content, ToolCallID: r.CallID, Name: r.Name, IsError: r.IsError,
			Source: pipeline.Source{Type: pipeline.SourceTool}, Metadata: meta,
		})
		if err != nil {
			return nil, err
		}
	}
	if err := a.CommitStep(ts); err != nil {
		return nil, err
	}
	if toolErr != nil {
		return nil, toolErr
	}
	return sr, nil
}

// CommitStep commits the tool results of a step (or of a resume), with
// what the hooks stage with them (the delegations they announce). If the
// commit fails, what they staged never happened, like the results.
func (a *Agent) CommitStep(ts *Turn) error {
	var err error
	staged := 0
	for _, h := range a.Env.Hooks {
		staged++
		if err = h.Stage(ts); err != nil {
			break
		}
	}
	if err == nil {
		err = ts.Inst.Flush(ts.StoreCtx)
	}
	for _, h := range a.Env.Hooks[:staged] {
		h.Committed(ts, err)
	}
	return err
}

// callModel streams one response and assembles it into msg, which it sets
// only when it returns no error.
func (a *Agent) callModel(ctx context.Context, ts *Turn, s *pipeline.StepContext, msg *pipeline.Message) (pipeline.Usage, error) {
	req := &ts.req
	req.Step = s.Index()
	req.Messages = Effective{H: &ts.Inst.hist} // what the marks leave (History)
	if h := &ts.Inst.hist; h.Counting() {
		ts.sentTokens = h.Tokens()
	}
	req.Tools = s.Tools().Tools()
	if tr := a.Env.Tracer; tr != nil {
		var span ModelSpan
		ctx, span = tr.StartModel(ctx, a.Name, a.Provider, a.ModelName, a.MaxOutput, a.System, req.Messages)
		usage, err := a.streamModel(ctx, ts, s, span, msg)
		span.End(*msg, usage, err)
		return usage, err
	}
	return a.streamModel(ctx, ts, s, nil, msg)
}

// streamModel streams the response to ts.req and assembles it into msg,
// which it sets only when it returns no error; span, if not nil, is told
// of the first chunk.
func (a *Agent) streamModel(ctx context.Context, ts *Turn, s *pipeline.StepContext, span ModelSpan, msg *pipeline.Message) (pipeline.Usage, error) {
	req := &ts.req
	stream, err := a.Model.Stream(ctx, req)
	if err != nil {
		return pipeline.Usage{}, fmt.Errorf("model: %w", err)
	}
	defer stream.Close()

	var (
		usage     pipeline.Usage
		reasoning strings.Builder
		only      string // the text when it came in one chunk: no copy needed
		chunks    int
	)
	ts.text.Reset()
	ts.calls = ts.calls[:0]
	bus := a.Env.Bus
	for {
		c, err := stream.Recv()
		if span != nil {
			span.Chunk()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return usage, fmt.Errorf("model: %w", err)
		}
		switch c.Kind {
		case model.KindText:
			if chunks == 0 {
				only = c.Text
			} else {
				if chunks == 1 {
					ts.text.WriteString(only)
				}
				ts.text.WriteString(c.Text)
			}
			chunks++
			if s.Watching() {
				s.PublishText(c.Text)
			}
			if bus.Active() {
				bus.Publish(events.Event{Topic: events.ModelDelta, Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime", Data: events.ModelDeltaData{Kind: "text", Text: c.Text}})
			}
		case model.KindReasoning:
			reasoning.WriteString(c.Text)
			if bus.Active() {
				bus.Publish(events.Event{Topic: events.ModelDelta, Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime", Data: events.ModelDeltaData{Kind: "reasoning", Text: c.Text}})
			}
		case model.KindToolCallStart:
			ts.calls = append(ts.calls, partialCall{id: c.ToolCallID, name: c.ToolName})
		case model.KindToolCallDelta:
			if pc := ts.findCall(c.ToolCallID); pc != nil {
				pc.args = append(pc.args, c.ArgumentsDelta...)
			} else {
				return usage, fmt.Errorf("model: arguments for tool call %q that was never started", c.ToolCallID)
			}
		case model.KindToolCallEnd:
			if ts.findCall(c.ToolCallID) == nil {
				return usage, fmt.Errorf("model: end of tool call %q that was never started", c.ToolCallID)
			}
		case model.KindUsage:
			usage = usage.Add(c.Usage)
		case model.KindError:
			return usage, fmt.Errorf("model: %w", c.Err)
		}
	}
	text := only
	if chunks > 1 {
		text = ts.text.String()
	}
	*msg = pipeline.Message{Role: pipeline.RoleAssistant, Content: text, Reasoning: reasoning.String(), Source: pipeline.Source{Type: pipeline.SourceModel}}
	if len(ts.calls) > 0 {
		msg.ToolCalls = make([]pipeline.ToolCall, len(ts.calls))
		for i, pc := range ts.calls {
			id := pc.id
			if id == "" {
				id = ts.TurnID + "-call-" + strconv.Itoa(s.Index()) + "-" + strconv.Itoa(i+1)
			}
			msg.ToolCalls[i] = pipeline.ToolCall{ID: id, Name: pc.name, Arguments: pc.args}
		}
	}
	return usage, nil
}

func (ts *Turn) findCall(id string) *partialCall {
	for i := len(ts.calls) - 1; i >= 0; i-- {
		if ts.calls[i].id == id {
			return &ts.calls[i]
		}
	}
	return nil
}

// runTools runs the calls through the toolCall chain, concurrently when
// there are several. Every call gets a result, so the history never holds a
// tool call without its answer.
func (a *Agent) runTools(ctx context.Context, ts *Turn, s *pipeline.StepContext, msgID string, calls []pipeline.ToolCall) ([]pipeline.ToolResult, error) {
	// The step's results live until the next step, like its StepResult.
	results := slices.Grow(ts.results[:0], len(calls))[:len(calls)]
	ts.results = results
	if len(calls) == 1 {
		return results, a.runTool(ctx, ts, s, &ts.call, msgID, calls[0], &results[0])
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			errs[i] = a.runTool(ctx, ts, s, new(pipeline.ToolCallContext), msgID, calls[i], &results[i])
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// runTool runs one call of the stored message msgID through the toolCall
// chain into *out, using cc as its context.
func (a *Agent) runTool(ctx context.Context, ts *Turn, s *pipeline.StepContext, cc *pipeline.ToolCallContext, msgID string, c pipeline.ToolCall, out *pipeline.ToolResult) error {
	t, found := s.Tools().Lookup(c.Name)
	cc.Reset(pipeline.ToolCallInfo{
		Agent: a.Name, InstanceKey: ts.Inst.key, TurnID: ts.TurnID, Step: s.Index(),
		Call: c, Tool: t, Found: found, Input: ts.TurnCtx.Input(), MessageID: msgID,
	})
	turnhost.Set(cc, ts)
	bus := a.Env.Bus
	var start time.Time
	if bus.Active() {
		a.publishTool(ts, events.ToolStarted, c, nil, 0)
		start = time.Now()
	}
	tr := a.Env.Tracer
	if tr != nil {
		ctx = tr.StartTool(ctx, c)
	}
	r, err := a.Pipe.RunToolCall(ctx, cc)
	if err != nil {
		// A fail_closed toolCall middleware failed: the turn fails, but
		// the call still gets an answer in the history.
		*out = pipeline.ToolResult{CallID: c.ID, Name: c.Name, Content: "tool call failed: " + err.Error(), IsError: true}
	} else {
		// The result answers this call, whatever a middleware put in it.
		*out = *r
		out.CallID, out.Name = c.ID, c.Name
	}
	if ctx.Err() != nil && context.Cause(ctx) == a.Env.Cut {
		// The runtime's stop cut the call: the model reads what a crash's
		// result says (closeInterrupted), and what the tool said.
		out.Content = fmt.Sprintf("interrupted: the process stopped while tool %q ran (call %s); it may or may not have taken effect. Check its effect before you run it again.\n%s", c.Name, c.ID, out.Content)
		out.IsError = true
	}
	// No tool result shows a provided secret: not to the model, the
	// history, the events or the logs. toolHandler masked what the tool
	// said before any middleware saw it; this masks what a middleware
	// granted a secret may have written into the result.
	out.Content = ts.Inst.secrets.redactor.Redact(out.Content)
	if tr != nil {
		tr.EndTool(ctx, a.Name, out)
	}
	if bus.Active() {
		a.publishTool(ts, events.ToolFinished, c, out, time.Since(start))
	}
	return err
}

func (a *Agent) publishTool(ts *Turn, topic string, c pipeline.ToolCall, r *pipeline.ToolResult, d time.Duration) {
	bus := a.Env.Bus
	if !bus.Active() {
		return
	}
	started := events.ToolStartedData{CallID: c.ID, Tool: c.Name, Arguments: string(c.Arguments)}
	var data any = started
	if r != nil {
		data = events.ToolFinishedData{ToolStartedData: started, IsError: r.IsError, Content: r.Content, DurationMS: d.Milliseconds()}
	}
	bus.Publish(events.Event{Topic: topic, Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime", Data: data})
}

// ToolHandler is the innermost toolCall handler: check the arguments against
// the tool's schema and run the tool. A tool's failure — an error, a panic,
// bad arguments, an unknown name — is a result the model reads, never a
// failed turn.
//
// Every result it returns is masked of the instance's secrets, so that no
// toolCall middleware sees one in a result: an extension reads a secret
// only through the grant in its config.
func (a *Agent) ToolHandler(ctx context.Context, c *pipeline.ToolCallContext) (r *pipeline.ToolResult, err error) {
	ts, _ := turnhost.Get(c).(*Turn)
	redact := func(s string) string {
		if ts == nil {
			return s
		}
		return ts.Inst.secrets.redactor.Redact(s)
	}
	defer func() { // runs last, after the recovery from a panic below
		if r != nil {
			if masked := redact(r.Content); masked != r.Content {
				cp := *r // the tool's own value stays as it was
				cp.Content = masked
				r = &cp
			}
		}
	}()
	t, ok := c.Tool()
	if !ok {
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true,
			Content: fmt.Sprintf("unknown tool %q; the tools offered are: %s", c.Name(), toolNames(c))}, nil
	}
	if err := tool.CheckArguments(t, c.Arguments()); err != nil {
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true, Content: fmt.Sprintf("tool %q: %v", c.Name(), err)}, nil
	}
	defer func() {
		if v := recover(); v != nil {
			a.Logger.Error("tool panicked", "tool", c.Name(), "panic", redact(fmt.Sprint(v)))
			r, err = &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true, Content: fmt.Sprintf("tool %q failed: internal error", c.Name())}, nil
		}
	}()
	r, err = a.runFunc(ctx, ts, t, c)
	if err != nil {
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true, Content: fmt.Sprintf("tool %q failed: %v", c.Name(), err)}, nil
	}
	if r == nil {
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true, Content: fmt.Sprintf("tool %q returned no result", c.Name())}, nil
	}
	return r, nil
}

// runFunc runs tool t for call c, through the tool runner if there is
// one (the tape's). Replaying, only the tools that are code under test
// run: an extension's and the runtime's own (delegation); the others act
// on the world, and the tape answers for them.
func (a *Agent) runFunc(ctx context.Context, ts *Turn, t pipeline.Tool, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	if a.Env.ToolRunner == nil || ts == nil {
		return t.Func(ctx, c)
	}
	return a.runWrapped(ctx, ts, t, c)
}

// runWrapped is runFunc with a tool runner. It is a function of its own
// so that what its closures capture is not moved to the heap on every
// call without one.
func (a *Agent) runWrapped(ctx context.Context, ts *Turn, t pipeline.Tool, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	return a.Env.ToolRunner.Tool(ctx, ToolRun{Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Step: c.Step(),
		Call: pipeline.ToolCall{ID: c.CallID(), Name: c.Name(), Arguments: c.Arguments()},
		Live: a.Live[t.Name],
		Run:  func(ctx context.Context) (*pipeline.ToolResult, error) { return t.Func(ctx, c) }, Mask: ts.Inst.secrets.redactor.Redact})
}

func toolNames(c *pipeline.ToolCallContext) string {
	ts, _ := turnhost.Get(c).(*Turn)
	var names []string
	if ts != nil {
		for _, t := range ts.Step.Tools().Tools() {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// RunCall runs tool call c of the stored message msgID again, outside a
// step's model call, as the call of step n of the turn t: a call that
// waited for a human and was approved. The caller holds the instance's
// slot.
func (a *Agent) RunCall(ctx context.Context, ts *Turn, t *pipeline.TurnContext, n int, msgID string, c pipeline.ToolCall) (*pipeline.ToolResult, error) {
	ts.Step.Init(t, n, a.ToolsOf(ctx, ts.Inst)) // a call of a tool source runs too
	if err := ts.Inst.LoadSecrets(ts.StoreCtx); err != nil {
		return nil, err
	}
	var out pipeline.ToolResult
	err := a.runTool(ctx, ts, &ts.Step, &ts.call, msgID, c, &out)
	return &out, err
}

// RetryWaits are the waits before each try again of a turn the store did
// not save (it was unavailable, or a commit's outcome is unknown): a
// resume, or a task's turn.
var RetryWaits = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 30 * time.Second}

package runtime

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

	"go.opentelemetry.io/otel/trace"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/turnhost"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/internal/telemetry"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// A turnHook is a feature of the runtime that takes part in every turn at
// fixed points; the turn loop (this file) calls each in turnHooks' order
// and knows none of them by name. A hook keeps its per-turn state in its
// own field of turnState.
type turnHook interface {
	// load runs when the instance is read from the store, before the
	// calls a stop of the process cut short get their results: it marks
	// the turns that wait for something outside the turn
	// (instance.paused), and returns the tool calls that wait, by call
	// ID, with what each waits for.
	load(ctx context.Context, inst *instance) (waits map[string]string, err error)
	// loaded runs once the loaded history is repaired.
	loaded(ctx context.Context, inst *instance) error
	// beginTurn runs before the turn chain, with the turn's input.
	beginTurn(ts *turnState, in pipeline.InputEvent)
	// resumed runs when the input of a resume turn, in, is stored,
	// before the turn's first step.
	resumed(ctx context.Context, ts *turnState, t *pipeline.TurnContext, in pipeline.InputEvent) error
	// stage adds to the instance's unsaved batch what must commit with
	// the step's tool results; committed then says whether the commit
	// succeeded (err is nil), for the hook to finish or take it back. A
	// hook whose stage was called, even if it failed, gets committed.
	stage(ts *turnState) error
	committed(ts *turnState, err error)
	// keep adds to keep the IDs of the messages a reduction of the
	// context must keep for the feature's sake.
	keep(ts *turnState, keep map[string]bool) error
	// endTurn runs after the turn chain and may change its outcome.
	endTurn(ts *turnState, in pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error)
}

// turnHooks are the features every turn calls: pauses (pending.go), then
// delegation (delegation_turn.go).
var turnHooks = [...]turnHook{pauseHook{}, taskHook{}}

// turnState is the runtime's own state for one turn, reached from the
// pipeline contexts through internal/turnhost. Each instance owns one and reuses it for
// every turn, since its turns run one at a time.
type turnState struct {
	agent  *agent
	inst   *instance
	turnID string
	// storeCtx is the turn's context without its cancellation: what a turn
	// did is saved even when its caller gives up.
	storeCtx context.Context
	conv     conversation
	req      model.Request
	steps    int            // steps run so far
	usage    pipeline.Usage // usage so far
	stepRes  pipeline.StepResult
	results  []pipeline.ToolResult // the current step's tool results
	turn     pipeline.TurnContext
	step     pipeline.StepContext
	call     pipeline.ToolCallContext // for the common step with one tool call
	text     strings.Builder
	calls    []partialCall
	agents   callerAgents // the turn's ctx.agents
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
	// pauseAfter is set when a tool call paused the turn (it waits for
	// something outside the turn): the turn ends paused after the step.
	// awaits maps the calls of that step to what they wait for; guarded
	// by conv.mu.
	pauseAfter atomic.Bool
	awaits     map[string]string
	// The features' own state for the turn (see turnHook).
	task taskTurn // delegation.go
	// cont is the interrupted turn this one continues, if any
	// (interrupt.go): its input is stored already, its steps counted.
	cont continuation
	// trace is the turn's W3C traceparent when it is traced, for the tasks
	// and pending items it leaves; links are the traceparents the next
	// turn links to (the paused turns a resume resumes), which its
	// caller sets.
	trace string
	links []string
}

type partialCall struct {
	id, name string
	args     []byte
}

// runTurn runs one turn of the instance, whose turn slot the caller holds:
// it sets up the turn's state, runs the turn chain (turnHandler is its
// innermost layer) and settles what the turn leaves behind.
func (a *agent) runTurn(ctx context.Context, inst *instance, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	if err := a.available(); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, err
	}
	r := a.rt
	// A stop whose time is up cuts the turn (Runtime.Shutdown).
	ctx, unbind := r.bound(ctx)
	defer unbind()
	// The instance's turns run one at a time, so its turn state is reused.
	ts := &inst.ts
	ts.agent, ts.inst = a, inst
	// A task's turn that a stop of the process cut short continues where
	// it stopped, under its own ID, rather than running again (interrupt.go).
	cont, again := inst.interrupted(in)
	turn := cont.turn
	if again {
		ts.turnID = cont.turnID
		in.Metadata = maps.Clone(in.Metadata)
		in.Metadata[metaContinues] = cont.turnID
	} else {
		inst.meta.Turns++
		// Save the count even if the turn adds no message, so that turn
		// IDs stay unique across restarts.
		inst.metaDirty = true
		turn = inst.meta.Turns
		ts.turnID = engine.TurnID(uint64(turn))
	}
	switch ts.storeCtx = ctx; {
	case ctx == r.halt:
		ts.storeCtx = context.Background() // what bound made it of
	case ctx.Done() != nil:
		// Only a context that can end needs detaching (one without Done has
		// no deadline either); detaching costs an allocation a turn.
		ts.storeCtx = context.WithoutCancel(ctx)
	}
	ts.conv.in, ts.conv.ts = inst, ts
	ts.steps, ts.usage = 0, pipeline.Usage{}
	ts.req = model.Request{Agent: a.name, InstanceKey: inst.key, TurnID: ts.turnID, Turn: int(turn), InputKind: in.Kind,
		Model: a.modelName, System: a.system, MaxOutputTokens: a.maxOutput, Secret: ts.secretFn}
	tc := &ts.turn
	ts.agents.reset(a, inst.key, ts.turnID, in)
	ts.inputID, ts.keepIDs, ts.sentTokens, ts.input = "", nil, 0, in
	ts.pauseAfter.Store(false)
	clear(ts.awaits)
	for _, h := range turnHooks {
		h.beginTurn(ts, in)
	}
	ts.cont = cont
	tc.Reset(pipeline.TurnInfo{Agent: a.name, InstanceKey: inst.key, TurnID: ts.turnID, Input: in, Conversation: &ts.conv, Agents: &ts.agents,
		Window: (*window)(ts), Models: (*window)(ts)})
	turnhost.Set(tc, ts)
	if r.bus.Active() {
		r.bus.Publish(events.Event{Topic: events.TurnStarted, Agent: a.name, Instance: inst.key, TurnID: ts.turnID, Source: "runtime",
			Data: events.TurnStartedData{Kind: in.Kind, Text: in.Text, Continues: again}})
	}
	before := inst.hist.Len()
	var span telemetry.Turn
	if r.tel != nil {
		ctx, span = r.tel.StartTurn(ctx, a.name, inst.key, ts.turnID, in, links(ts.links)...)
		ts.trace = telemetry.Traceparent(ctx)
	}
	ts.links = nil
	res, err := a.pipe.RunTurn(ctx, tc)
	if err == nil && (res.AnsweredBy != "" || ts.inputID == "" || res.FinishReason == pipeline.FinishText) {
		err = a.keepAnswer(ts, res, before)
	}
	// The usage of every step, also of a turn that failed later.
	if ts.usage != (pipeline.Usage{}) {
		inst.meta.Usage = inst.meta.Usage.Add(ts.usage)
		inst.metaDirty = true
	}
	if ferr := inst.flush(ts.storeCtx, r.store); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		reason := pipeline.FinishError
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			reason = pipeline.FinishAborted
			if context.Cause(ctx) == errCut {
				err = errCut // its caller did not cancel it: say why it ended
			}
		}
		res = &pipeline.TurnResult{TurnID: ts.turnID, FinishReason: reason, Steps: ts.steps, Usage: ts.usage}
		err = fmt.Errorf("agent %q instance %q %s: %w", a.name, inst.key, ts.turnID, err)
		a.logger.Debug("turn failed", "instance", inst.key, "turn", ts.turnID, "err", err)
	} else {
		// A middleware that answered the turn itself may leave these out.
		res.TurnID = ts.turnID
		if res.FinishReason == "" {
			res.FinishReason = pipeline.FinishText
		}
	}
	for _, h := range turnHooks {
		res, err = h.endTurn(ts, in, res, err)
	}
	if err != nil && inst.loaded && inst.callsOpen(before) {
		// The turn failed between storing a step's tool calls and their
		// results: the next turn must not begin after calls without
		// results. The instance is read again at its next use, which gives
		// them their "interrupted" result first (closeInterrupted).
		inst.unload()
	}
	if r.tel != nil {
		span.End(res, err)
	}
	if r.bus.Active() {
		data := events.TurnFinishedData{FinishReason: res.FinishReason, Steps: res.Steps, Usage: res.Usage, Response: res.Response.Content}
		if err != nil {
			data.Error = err.Error()
		}
		r.bus.Publish(events.Event{Topic: events.TurnFinished, Agent: a.name, Instance: inst.key, TurnID: ts.turnID, Source: "runtime", Data: data})
	}
	// Drop what the turn referenced: the caller's context and input.
	ts.storeCtx, ts.input = nil, pipeline.InputEvent{}
	ts.turn.Reset(pipeline.TurnInfo{})
	ts.req.Messages, ts.req.Tools = nil, nil
	return res, err
}

// turnHandler is the innermost turn handler: the loop of steps.
func (a *agent) turnHandler(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
	ts := turnhost.Get(t).(*turnState)
	if ts.cont.inputID != "" {
		return a.steps(ctx, ts, t, ts.cont.inputID, ts.cont.steps+1)
	}
	in, err := ts.turnInput()
	if err != nil {
		return nil, err
	}
	input := inputMessage(ts, in)
	if err := ts.conv.append(&input); err != nil {
		return nil, err
	}
	inputID := ts.inst.hist.At(ts.inst.hist.Len() - 1).Msg.ID
	if in.Kind == pipeline.InputResume {
		// The resume is on record before anything else of the turn runs:
		// the stored message is what says the paused turn was resumed.
		if err := ts.inst.flush(ts.storeCtx, a.rt.store); err != nil {
			return nil, err
		}
		for _, h := range turnHooks {
			if err := h.resumed(ctx, ts, t, in); err != nil {
				return nil, err
			}
		}
	}
	return a.steps(ctx, ts, t, inputID, 1)
}

// steps runs the turn's steps from first on; inputID is the turn's input
// message.
func (a *agent) steps(ctx context.Context, ts *turnState, t *pipeline.TurnContext, inputID string, first int) (*pipeline.TurnResult, error) {
	ts.inputID = inputID
	res := &pipeline.TurnResult{TurnID: ts.turnID} // the caller keeps it
	ts.step.Init(t, first, a.tools)
	for step := first; step <= a.maxSteps; step++ {
		ts.step.Reset(step, a.stepTools(ctx, ts.inst))
		sr, err := a.runStep(ctx, ts, step)
		if err != nil {
			return nil, err
		}
		ts.steps, ts.usage = step, ts.usage.Add(sr.Usage)
		res.Steps, res.Usage = ts.steps, ts.usage
		res.Response = sr.Message
		if a.rt.bus.Active() {
			a.rt.bus.Publish(events.Event{Topic: events.StepFinished, Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Source: "runtime",
				Data: events.StepFinishedData{Step: step, ToolCalls: len(sr.Message.ToolCalls), Usage: sr.Usage}})
		}
		switch {
		case sr.Stop != "":
			res.FinishReason = sr.Stop
			return res, nil
		case ts.pauseAfter.Load():
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

// links returns the links to the spans traceparents name.
func links(traceparents []string) []trace.Link {
	var out []trace.Link
	for _, tp := range traceparents {
		if l, ok := telemetry.Link(tp); ok {
			out = append(out, l)
		}
	}
	return out
}

// runStep runs step n's chain, within its span when tracing.
func (a *agent) runStep(ctx context.Context, ts *turnState, n int) (*pipeline.StepResult, error) {
	tel := a.rt.tel
	if tel == nil {
		return a.pipe.RunStep(ctx, &ts.step)
	}
	ctx, span := tel.StartStep(ctx, n)
	sr, err := a.pipe.RunStep(ctx, &ts.step)
	telemetry.EndSpan(span, err)
	return sr, err
}

// turnInput returns the turn's input as its middleware left it
// (pipeline.TurnContext.SetInput). A middleware may change the text and
// metadata of its own, not the reserved keys (pipeline.CheckMetadata): one
// it sets or changes fails the turn, and one it leaves out is kept, for a
// middleware that sets an input of its own knows nothing of the runtime's.
func (ts *turnState) turnInput() (pipeline.InputEvent, error) {
	in := ts.turn.Input()
	if err := pipeline.CheckMetadata("a middleware's change of the turn's input", ts.input.Metadata, in.Metadata, pipeline.MetaPinned); err != nil {
		return in, err
	}
	in.Metadata = keepReserved(ts.input.Metadata, in.Metadata)
	return in, nil
}

// inputMessage is the stored form of the turn's input in.
func inputMessage(ts *turnState, in pipeline.InputEvent) pipeline.Message {
	input := pipeline.Message{Role: pipeline.RoleUser, Content: in.Text, Source: inputSource(in), Metadata: in.Metadata}
	if _, task := in.Metadata["taskId"]; task || in.Kind == pipeline.InputResume {
		// The input says which turn it started: a resume, to mark the
		// paused turn resumed; a task's, to continue the turn if a stop
		// of the process cuts it short.
		input.Metadata = maps.Clone(in.Metadata)
		if input.Metadata == nil {
			input.Metadata = map[string]any{}
		}
		input.Metadata["turn_id"] = ts.turnID
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
func (a *agent) keepAnswer(ts *turnState, res *pipeline.TurnResult, before int) error {
	h := &ts.inst.hist
	if ts.inputID == "" {
		if h.Len() != before {
			return nil
		}
		in, err := ts.turnInput()
		if err != nil {
			return err
		}
		input := inputMessage(ts, in)
		if err := ts.conv.append(&input); err != nil {
			return err
		}
		if res.Response.Content == "" {
			return nil
		}
		answer := pipeline.Message{Role: pipeline.RoleAssistant, Content: res.Response.Content,
			Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: res.AnsweredBy}}
		if err := ts.conv.append(&answer); err != nil {
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
	if err := ts.conv.apply(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: last.ID, Message: m}); err != nil {
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

// stepHandler is the innermost step handler: one model call, then the tools
// it asked for.
func (a *agent) stepHandler(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	ts := turnhost.Get(s).(*turnState)
	// The reply is built in place and copied once, into the history: a
	// message is ~200 bytes, and returning it by value copied it at each
	// level of the model call.
	var msg pipeline.Message
	usage, err := a.callModelFitting(ctx, ts, s, &msg)
	if err != nil {
		return nil, err
	}
	if err := ts.conv.append(&msg); err != nil {
		return nil, err
	}
	stored := ts.inst.hist.At(ts.inst.hist.Len() - 1).Msg // with its ID and time
	// What middleware stores on reading the reply (the pending item of a
	// question) commits with it, in the flush below or in its own. The
	// stored message is handed over, not msg: taking msg's address would
	// move it to the heap at every step.
	if err := s.PublishReply(ctx, stored); err != nil {
		return nil, err
	}
	// The model's request for tools is stored before any tool runs, so a
	// crash cannot run a tool whose call the history does not show.
	if err := ts.inst.flush(ts.storeCtx, a.rt.store); err != nil {
		return nil, err
	}
	sr := &ts.stepRes // valid until the next step
	*sr = pipeline.StepResult{Message: *stored, Usage: usage}
	if len(stored.ToolCalls) == 0 {
		return sr, nil
	}
	// Commands receive the instance's secrets, and results are redacted of them.
	if err := ts.inst.loadSecrets(ts.storeCtx); err != nil {
		return nil, err
	}
	// A failed toolCall middleware fails the turn, but only after every call's
	// result is in the history.
	results, toolErr := a.runTools(ctx, ts, s, stored.ID, stored.ToolCalls)
	sr.ToolResults = results
	for _, r := range sr.ToolResults {
		var meta map[string]any
		if item := ts.awaits[r.CallID]; item != "" {
			// What the call waits for: if a stop of the process cuts the
			// resume short, the next load says so (interrupt.go).
			meta = map[string]any{metaAwaits: item, "turn_id": ts.turnID}
		}
		err := ts.conv.append(&pipeline.Message{
			Role: pipeline.RoleTool, Content: r.Content, ToolCallID: r.CallID, Name: r.Name, IsError: r.IsError,
			Source: pipeline.Source{Type: pipeline.SourceTool}, Metadata: meta,
		})
		if err != nil {
			return nil, err
		}
	}
	if err := a.commitStep(ts); err != nil {
		return nil, err
	}
	if toolErr != nil {
		return nil, toolErr
	}
	return sr, nil
}

// commitStep commits the tool results of a step (or of a resume), with the
// delegations they announce. If the commit fails, the delegations never
// happened, like the results.
func (a *agent) commitStep(ts *turnState) error {
	var err error
	staged := 0
	for _, h := range turnHooks {
		staged++
		if err = h.stage(ts); err != nil {
			break
		}
	}
	if err == nil {
		err = ts.inst.flush(ts.storeCtx, a.rt.store)
	}
	for _, h := range turnHooks[:staged] {
		h.committed(ts, err)
	}
	return err
}

// callModel streams one response and assembles it into msg, which it sets
// only when it returns no error.
func (a *agent) callModel(ctx context.Context, ts *turnState, s *pipeline.StepContext, msg *pipeline.Message) (pipeline.Usage, error) {
	req := &ts.req
	req.Step = s.Index()
	req.Messages = engine.Effective{H: &ts.inst.hist} // what the marks leave (engine.History)
	if h := &ts.inst.hist; h.Counting() {
		ts.sentTokens = h.Tokens()
	}
	req.Tools = s.Tools().Tools()
	if tel := a.rt.tel; tel != nil {
		var span *telemetry.Model
		ctx, span = tel.StartModel(ctx, a.name, a.provider, a.modelName, a.maxOutput, a.system, req.Messages)
		usage, err := a.streamModel(ctx, ts, s, span, msg)
		span.End(msg, usage, err)
		return usage, err
	}
	return a.streamModel(ctx, ts, s, nil, msg)
}

// streamModel streams the response to ts.req and assembles it into msg,
// which it sets only when it returns no error; span, if not nil, is told
// of the first chunk.
func (a *agent) streamModel(ctx context.Context, ts *turnState, s *pipeline.StepContext, span *telemetry.Model, msg *pipeline.Message) (pipeline.Usage, error) {
	req := &ts.req
	stream, err := a.model.Stream(ctx, req)
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
	bus := a.rt.bus
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
				bus.Publish(events.Event{Topic: events.ModelDelta, Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Source: "runtime", Data: events.ModelDeltaData{Kind: "text", Text: c.Text}})
			}
		case model.KindReasoning:
			reasoning.WriteString(c.Text)
			if bus.Active() {
				bus.Publish(events.Event{Topic: events.ModelDelta, Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Source: "runtime", Data: events.ModelDeltaData{Kind: "reasoning", Text: c.Text}})
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
				id = ts.turnID + "-call-" + strconv.Itoa(s.Index()) + "-" + strconv.Itoa(i+1)
			}
			msg.ToolCalls[i] = pipeline.ToolCall{ID: id, Name: pc.name, Arguments: pc.args}
		}
	}
	return usage, nil
}

func (ts *turnState) findCall(id string) *partialCall {
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
func (a *agent) runTools(ctx context.Context, ts *turnState, s *pipeline.StepContext, msgID string, calls []pipeline.ToolCall) ([]pipeline.ToolResult, error) {
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
func (a *agent) runTool(ctx context.Context, ts *turnState, s *pipeline.StepContext, cc *pipeline.ToolCallContext, msgID string, c pipeline.ToolCall, out *pipeline.ToolResult) error {
	t, found := s.Tools().Lookup(c.Name)
	cc.Reset(pipeline.ToolCallInfo{
		Agent: a.name, InstanceKey: ts.inst.key, TurnID: ts.turnID, Step: s.Index(),
		Call: c, Tool: t, Found: found, Input: ts.turn.Input(), MessageID: msgID,
	})
	turnhost.Set(cc, ts)
	bus := a.rt.bus
	var start time.Time
	if bus.Active() {
		a.publishTool(ts, events.ToolStarted, c, nil, 0)
		start = time.Now()
	}
	var span trace.Span
	if tel := a.rt.tel; tel != nil {
		ctx, span = tel.StartTool(ctx, c)
	}
	r, err := a.pipe.RunToolCall(ctx, cc)
	if err != nil {
		// A fail_closed toolCall middleware failed: the turn fails, but
		// the call still gets an answer in the history.
		*out = pipeline.ToolResult{CallID: c.ID, Name: c.Name, Content: "tool call failed: " + err.Error(), IsError: true}
	} else {
		// The result answers this call, whatever a middleware put in it.
		*out = *r
		out.CallID, out.Name = c.ID, c.Name
	}
	if ctx.Err() != nil && context.Cause(ctx) == errCut {
		// The runtime's stop cut the call: the model reads what a crash's
		// result says (closeInterrupted), and what the tool said.
		out.Content = fmt.Sprintf("interrupted: the process stopped while tool %q ran (call %s); it may or may not have taken effect. Check its effect before you run it again.\n%s", c.Name, c.ID, out.Content)
		out.IsError = true
	}
	// No tool result shows a provided secret: not to the model, the
	// history, the events or the logs. toolHandler masked what the tool
	// said before any middleware saw it; this masks what a middleware
	// granted a secret may have written into the result.
	out.Content = ts.inst.secrets.redactor.Redact(out.Content)
	if span != nil {
		a.rt.tel.EndTool(span, a.name, out)
	}
	if bus.Active() {
		a.publishTool(ts, events.ToolFinished, c, out, time.Since(start))
	}
	return err
}

func (a *agent) publishTool(ts *turnState, topic string, c pipeline.ToolCall, r *pipeline.ToolResult, d time.Duration) {
	bus := a.rt.bus
	if !bus.Active() {
		return
	}
	started := events.ToolStartedData{CallID: c.ID, Tool: c.Name, Arguments: string(c.Arguments)}
	var data any = started
	if r != nil {
		data = events.ToolFinishedData{ToolStartedData: started, IsError: r.IsError, Content: r.Content, DurationMS: d.Milliseconds()}
	}
	bus.Publish(events.Event{Topic: topic, Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Source: "runtime", Data: data})
}

// toolHandler is the innermost toolCall handler: check the arguments against
// the tool's schema and run the tool. A tool's failure — an error, a panic,
// bad arguments, an unknown name — is a result the model reads, never a
// failed turn.
//
// Every result it returns is masked of the instance's secrets, so that no
// toolCall middleware sees one in a result: an extension reads a secret
// only through the grant in its config.
func (a *agent) toolHandler(ctx context.Context, c *pipeline.ToolCallContext) (r *pipeline.ToolResult, err error) {
	ts, _ := turnhost.Get(c).(*turnState)
	redact := func(s string) string {
		if ts == nil {
			return s
		}
		return ts.inst.secrets.redactor.Redact(s)
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
			a.logger.Error("tool panicked", "tool", c.Name(), "panic", redact(fmt.Sprint(v)))
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

// runFunc runs tool t for call c, through the tape if there is one.
// Replaying, only the tools that are code under test run: an extension's
// and the runtime's own (delegation); the others act on the world, and
// the tape answers for them.
func (a *agent) runFunc(ctx context.Context, ts *turnState, t pipeline.Tool, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	if a.rt.tape == nil || ts == nil {
		return t.Func(ctx, c)
	}
	return a.runTaped(ctx, ts, t, c)
}

// runTaped is runFunc with a tape. It is a function of its own so that
// what its closures capture is not moved to the heap on every call
// without one.
func (a *agent) runTaped(ctx context.Context, ts *turnState, t pipeline.Tool, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	return a.rt.tape.Tool(ctx, tape.Call{Agent: a.name, Instance: ts.inst.key, TurnID: ts.turnID, Step: c.Step(),
		Call: pipeline.ToolCall{ID: c.CallID(), Name: c.Name(), Arguments: c.Arguments()},
		Live: a.extTools[t.Name] || slices.Contains(systemToolNames, t.Name),
		Run:  func(ctx context.Context) (*pipeline.ToolResult, error) { return t.Func(ctx, c) }, Mask: ts.inst.secrets.redactor.Redact})
}

func toolNames(c *pipeline.ToolCallContext) string {
	ts, _ := turnhost.Get(c).(*turnState)
	var names []string
	if ts != nil {
		for _, t := range ts.step.Tools().Tools() {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

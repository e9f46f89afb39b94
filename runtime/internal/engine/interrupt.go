package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// This file makes work in progress survive a crash: a tool call that was
// running when the process died gets an "interrupted" result when its
// instance loads (so the history never holds a call without its answer,
// which providers refuse), and a delegation task whose turn was cut short
// continues that turn instead of starting over from its request.

// MetaInterrupted (true) marks the result of a tool call the process
// stopped during; the call is never run again.
const MetaInterrupted = "interrupted"

// MetaContinues is set in the input metadata of a turn that continues a
// task's turn a stop of the process cut short: its value is the ID of that
// turn, which the continuing turn keeps. Such a turn stores no input of its
// own (the input is stored already) and goes on from the next step.
const MetaContinues = "continues"

// MetaAwaits marks the result a tool call got when it paused the turn (an
// approval): its value is the ID of the pending item the call waits for.
// The resume replaces that result with the call's outcome.
const MetaAwaits = "awaits"

// callsOpen reports whether a tool call of the history's messages from
// index from on has no result after it.
func (in *Instance) callsOpen(from int) bool {
	open := map[string]bool{}
	for i := from; i < in.hist.Len(); i++ {
		m := in.hist.At(i).Msg
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == pipeline.RoleTool {
			delete(open, m.ToolCallID)
		}
	}
	return len(open) > 0
}

// closeInterrupted gives every tool call of the loaded history that has no
// result an error result saying the process stopped while it ran, and
// commits them; open lists the open pending items of the instance that wait
// on a call (call ID → item ID), whose calls did not run. The calls are
// those of the turn the crash cut short: the turn counted last.
func (in *Instance) closeInterrupted(ctx context.Context, open map[string]string) error {
	h := &in.hist
	var (
		calls []pipeline.ToolCall
		index map[string]int // call ID → position in calls
	)
	var stale []int // results still awaiting an item whose resume was cut short
	for i := 0; i < h.Len(); i++ {
		m := h.At(i).Msg
		if item, _ := m.Metadata[MetaAwaits].(string); item != "" && in.Paused[item] == "" {
			if turn, _ := m.Metadata["turn_id"].(string); in.ResumedBy(turn) != "" {
				stale = append(stale, i)
			}
		}
		for _, c := range m.ToolCalls {
			if index == nil {
				index = map[string]int{}
			}
			index[c.ID] = len(calls)
			calls = append(calls, c)
		}
		if m.Role == pipeline.RoleTool {
			if j, ok := index[m.ToolCallID]; ok {
				calls[j].ID = "" // answered
			}
		}
	}
	turnID := TurnID(uint64(in.meta.Turns))
	var names []string
	for _, c := range calls {
		if c.ID == "" || index[c.ID] < 0 {
			continue
		}
		index[c.ID] = -1 // a provider may repeat an ID: one result each
		content := fmt.Sprintf("interrupted: the process stopped while tool %q ran (call %s); it may or may not have taken effect. Check its effect before you run it again.", c.Name, c.ID)
		if item := open[c.ID]; item != "" {
			content = fmt.Sprintf("interrupted: the process stopped while tool %q waited for a human's approval (pending item %s); it has not run.", c.Name, item)
		}
		p := &pipeline.Message{Role: pipeline.RoleTool, Content: content, ToolCallID: c.ID, Name: c.Name, IsError: true,
			Source:   pipeline.Source{Type: pipeline.SourceRuntime},
			Metadata: map[string]any{MetaInterrupted: true, "turn_id": turnID}}
		in.add(p)
		names = append(names, c.Name+" ("+c.ID+")")
	}
	for _, i := range stale {
		m := *h.At(i).Msg
		m.Content = fmt.Sprintf("interrupted: the process stopped while the turn that resumed after pending item %s ran this call's outcome; if tool %q ran, it may or may not have taken effect. Check its effect before you run it again.", m.Metadata[MetaAwaits], m.Name)
		m.IsError = true
		m.Metadata = map[string]any{MetaInterrupted: true, "turn_id": m.Metadata["turn_id"]}
		in.replace(i, &m)
		names = append(names, m.Name+" ("+m.ToolCallID+")")
	}
	if len(names) == 0 {
		return nil
	}
	if err := in.Flush(ctx); err != nil {
		return err
	}
	a := in.agent
	a.Logger.Info("the process stopped while tool calls ran: they got an interrupted result", "instance", in.key, "turn", turnID, "calls", strings.Join(names, ", "))
	if bus := a.Env.Bus; bus.Active() {
		bus.Publish(events.Event{Topic: events.TurnInterrupted, Agent: a.Name, Instance: in.key, TurnID: turnID, Source: "runtime",
			Data: events.TurnInterruptedData{Calls: names}})
	}
	return nil
}

// continuation is a task's turn that a stop of the process cut short, and
// that its next turn continues rather than starting over.
type continuation struct {
	turnID  string
	turn    int64  // the turn's number, from turnID
	inputID string // the turn's stored input message
	steps   int    // steps it had run: model replies stored
}

// Trail is what the history shows of an instance's last turn.
type Trail struct {
	Last *pipeline.Message // the last turn's input
	// Origin is the input of the turn that the chain of resumes ending at
	// Last goes back to: Last itself when Last is no resume.
	Origin   *pipeline.Message
	Steps    int  // model replies stored after Last
	Answered bool // the history ends with a final model reply
}

// LastTurn reads the Trail of the instance's last turn; ok is false when
// the history holds no turn input.
func (in *Instance) LastTurn() (t Trail, ok bool) {
	h := &in.hist
	i := h.Len() - 1
	if i >= 0 {
		m := h.At(i).Msg
		t.Answered = m.Source.Type == pipeline.SourceModel && m.Role == pipeline.RoleAssistant && len(m.ToolCalls) == 0
	}
	for ; i >= 0; i-- {
		m := h.At(i).Msg
		if isTurnInput(m) {
			t.Last = m
			break
		}
		if m.Source.Type == pipeline.SourceModel && m.Role == pipeline.RoleAssistant {
			t.Steps++
		}
	}
	if t.Last == nil {
		return t, false
	}
	t.Origin = t.Last
	for j := i - 1; j >= 0 && t.Origin.Metadata["resumes"] != nil; j-- {
		if m := h.At(j).Msg; isTurnInput(m) {
			t.Origin = m
		}
	}
	return t, true
}

// task returns the delegation task the Trail's turns work on, "" if none.
func (t Trail) Task() string {
	id, _ := t.Origin.Metadata["taskId"].(string)
	return id
}

// Interrupted returns the turn of inst that ev would start again, if the
// history shows it started already and did not finish: ev is a delegation
// task's input (its request, or a merged report) that the instance's last
// chain of turns started, or the resume of the paused turn that the last
// turn resumed, and no final answer follows. Only these inputs are ever
// delivered twice (after a restart), so only they are looked for. The
// turn continued is the last one, a resume turn if the task's turn paused
// and was resumed. The caller holds the instance's slot.
func (in *Instance) Interrupted(ev pipeline.InputEvent) (continuation, bool) {
	task, _ := ev.Metadata["taskId"].(string)
	resumes, _ := ev.Metadata["resumes"].(string)
	switch {
	case task != "" && (ev.Kind == pipeline.InputAgentRequest || ev.Kind == pipeline.InputDelegationReport):
	case resumes != "" && ev.Kind == pipeline.InputResume:
	default:
		return continuation{}, false
	}
	t, ok := in.LastTurn()
	if !ok || t.Answered {
		return continuation{}, false
	}
	if resumes != "" {
		if t.Last.Metadata["resumes"] != resumes {
			return continuation{}, false
		}
	} else if t.Task() != task || IntMeta(t.Origin.Metadata["reported"]) != IntMeta(ev.Metadata["reported"]) {
		return continuation{}, false
	}
	turnID, _ := t.Last.Metadata["turn_id"].(string)
	n, err := strconv.ParseInt(strings.TrimPrefix(turnID, "turn-"), 10, 64)
	if turnID == "" || err != nil {
		return continuation{}, false
	}
	return continuation{turnID: turnID, turn: n, inputID: t.Last.ID, steps: t.Steps}, true
}

// isTurnInput reports whether m is the input message of a turn.
func isTurnInput(m *pipeline.Message) bool {
	if m.Role != pipeline.RoleUser {
		return false
	}
	switch m.Source.Type {
	case pipeline.SourceUser, pipeline.SourceAgent, pipeline.SourceRuntime:
		return true
	}
	return false
}

// ResumedBy returns the ID of the turn whose input resumed turnID, or "".
func (in *Instance) ResumedBy(turnID string) string {
	for i := in.hist.Len() - 1; i >= 0; i-- {
		m := in.hist.At(i).Msg
		if m.Source.Type == pipeline.SourceRuntime && m.Metadata["resumes"] == turnID {
			id, _ := m.Metadata["turn_id"].(string)
			return id
		}
	}
	return ""
}

// FindCall finds tool call id in the history, and the ID of its message.
func (in *Instance) FindCall(id string) (pipeline.ToolCall, string, bool) {
	h := &in.hist
	for i := h.Len() - 1; i >= 0; i-- {
		m := h.At(i).Msg
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c, m.ID, true
			}
		}
	}
	return pipeline.ToolCall{}, "", false
}

// IntMeta reads a count from input metadata: an int in process, a float64
// after a JSON round trip.
func IntMeta(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

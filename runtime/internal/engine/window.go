package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// window is a turn's pipeline.Window and pipeline.Models: the turn state
// seen from its middleware. It is a conversion of *Turn, not a field
// of it, so that handing it out allocates nothing.
type window Turn

func (w *window) ts() *Turn { return (*Turn)(w) }

// Size returns the agent's model's context window.
func (w *window) Size() int { return w.Agent.ContextWindow }

// ReservedOutput returns the agent's model's max_output_tokens.
func (w *window) ReservedOutput() int { return w.Agent.MaxOutput }

// Messages returns the effective history with counts and marks.
func (w *window) Messages() ([]pipeline.WindowMessage, error) {
	ts := w.ts()
	h := &ts.Inst.hist
	h.SetCounter(ts.Agent.Counter)
	units, err := ts.Agent.units(ts)
	if err != nil {
		return nil, err
	}
	unitOf := make(map[int]int, len(h.Positions())) // position → unit
	for i, u := range units {
		for _, p := range u.pos {
			unitOf[p] = i
		}
	}
	pos := h.Positions()
	out := make([]pipeline.WindowMessage, len(pos))
	for i, p := range pos {
		en, u := h.At(p), unitOf[p]
		out[i] = pipeline.WindowMessage{Message: *en.Msg, Tokens: en.Tokens(), Unit: u, Keep: units[u].keep, Summary: IsSummary(en.Msg)}
	}
	return out, nil
}

// Tokens counts what the next model call is sent.
func (w *window) Tokens() int {
	h := &w.Inst.hist
	h.SetCounter(w.Agent.Counter)
	return h.Tokens() + w.Agent.systemTokens()
}

// Sent returns Tokens as of the turn's latest model call.
func (w *window) Sent() int {
	if w.sentTokens == 0 {
		return 0
	}
	return w.sentTokens + w.Agent.systemTokens()
}

// Truncate marks the messages ids truncated.
func (w *window) Truncate(ids []string, reason string) error {
	ts := w.ts()
	pos, err := ts.leaving("truncate", ids)
	if err != nil {
		return err
	}
	before := len(ts.Inst.hist.Positions())
	if err := ts.mark(pos, func(md map[string]any) { md[pipeline.MetaTruncated] = true }); err != nil {
		return err
	}
	ts.Agent.truncated(ts, reason, before, 0)
	return nil
}

// Reduce is the runtime's own reduction (reduce.go).
func (w *window) Reduce(keep float64, reason string) (before, after int, err error) {
	if !(keep > 0 && keep < 1) {
		return 0, 0, fmt.Errorf("reduce: keep must be a share above 0 and below 1, got %v", keep)
	}
	ts := w.ts()
	return ts.Agent.reduce(ts, keep, reason)
}

// Condense shows summary in place of the messages ids.
func (w *window) Condense(ids []string, summary pipeline.Message) (string, error) {
	if err := pipeline.CheckMetadata("a summary's metadata", nil, summary.Metadata, pipeline.MetaSummary, pipeline.MetaPinned); err != nil {
		return "", fmt.Errorf("condense: %w", err)
	}
	ts := w.ts()
	pos, err := ts.leaving("condense", ids)
	if err != nil {
		return "", err
	}
	if len(pos) == 0 {
		return "", errors.New("condense: no messages to condense")
	}
	summary.Metadata = maps.Clone(summary.Metadata)
	if summary.Metadata == nil {
		summary.Metadata = map[string]any{}
	}
	if _, ok := summary.Metadata[pipeline.MetaSummary]; !ok {
		summary.Metadata[pipeline.MetaSummary] = map[string]any{"messages": len(pos)}
	}
	if err := ts.Conv.append(&summary); err != nil {
		return "", fmt.Errorf("condense: %w", err)
	}
	h := &ts.Inst.hist
	id := h.At(h.Len() - 1).Msg.ID
	if err := ts.mark(pos, func(md map[string]any) { md[pipeline.MetaCondensedBy] = id }); err != nil {
		return "", err
	}
	// A reduction later in the turn must not throw the summary away.
	if ts.keepIDs == nil {
		ts.keepIDs = map[string]bool{}
	}
	ts.keepIDs[id] = true
	return id, nil
}

// leaving returns the positions of the messages ids, which are to leave
// the window, or an error naming the first that may not: one not in the
// window, one that must stay, or a set that splits a unit.
func (ts *Turn) leaving(op string, ids []string) ([]int, error) {
	units, err := ts.Agent.units(ts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	h := &ts.Inst.hist
	unitOf := make(map[string]int, len(h.Positions()))
	for i, u := range units {
		for _, p := range u.pos {
			unitOf[h.At(p).Msg.ID] = i
		}
	}
	leave := make(map[string]bool, len(ids))
	for _, id := range ids {
		i, ok := unitOf[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: message %q is not in the window", op, id)
		case units[i].keep:
			return nil, fmt.Errorf("%s: message %q must stay in the window", op, id)
		}
		leave[id] = true
	}
	var pos []int
	for _, u := range units {
		in := 0
		for _, p := range u.pos {
			if leave[h.At(p).Msg.ID] {
				in++
			}
		}
		if in == 0 {
			continue
		}
		if in < len(u.pos) {
			var missing []string
			for _, p := range u.pos {
				if id := h.At(p).Msg.ID; !leave[id] {
					missing = append(missing, strconv.Quote(id))
				}
			}
			return nil, fmt.Errorf("%s: a tool call and its results leave together: add %s", op, strings.Join(missing, ", "))
		}
		pos = append(pos, u.pos...)
	}
	return pos, nil
}

// Complete calls the agent's model, or one its extensions opened, outside
// the conversation, and charges the usage to the turn.
func (w *window) Complete(ctx context.Context, req pipeline.CompletionRequest) (pipeline.Completion, error) {
	ts := w.ts()
	a := ts.Agent
	p, name, maxOut := a.Model, a.ModelName, a.MaxOutput
	if req.Model != "" {
		m, ok := a.Models[req.Model]
		if !ok {
			return pipeline.Completion{}, fmt.Errorf("complete: agent %q opened no model %q", a.Name, req.Model)
		}
		p, name, maxOut = m.Provider, m.Name, m.MaxOutput
	}
	if req.MaxOutputTokens > 0 {
		maxOut = req.MaxOutputTokens
	}
	mr := &model.Request{Agent: a.Name, InstanceKey: ts.Inst.key, TurnID: ts.TurnID, Turn: ts.req.Turn, InputKind: ts.req.InputKind, Step: 1, // a call of its own
		Model: name, System: req.System, MaxOutputTokens: maxOut, Secret: ts.secretFn, Messages: pipeline.MessageSlice(req.Messages)}
	st, err := p.Stream(ctx, mr)
	if err != nil {
		return pipeline.Completion{}, err
	}
	defer st.Close()
	var out pipeline.Completion
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if err == io.EOF {
			out.Text = b.String()
			return out, nil
		}
		if err != nil {
			return out, err
		}
		switch ch.Kind {
		case model.KindText:
			b.WriteString(ch.Text)
		case model.KindUsage:
			out.Usage = out.Usage.Add(ch.Usage)
			ts.Usage = ts.Usage.Add(ch.Usage) // the turn's cost
		case model.KindError:
			return out, ch.Err
		}
	}
}

// truncated publishes context.truncated when messages left the window;
// keep is the share a reduction aimed at, 0 for a chosen set.
func (a *Agent) truncated(ts *Turn, reason string, before int, keep float64) {
	after := len(ts.Inst.hist.Positions())
	bus := a.Env.Bus
	if !bus.Active() || after >= before {
		return
	}
	data := events.ContextTruncatedData{Reason: reason, Before: before, After: after, Keep: keep}
	bus.Publish(events.Event{Topic: events.ContextTruncated, Agent: a.Name, Instance: ts.Inst.key, TurnID: ts.TurnID, Source: "runtime", Data: data})
}

// systemTokens counts the agent's system prompt, once: it does not
// change, and counting costs microseconds per step.
func (a *Agent) systemTokens() int {
	if n := a.sysTokens.Load(); n > 0 {
		return int(n - 1)
	}
	n := 0
	if a.System != "" {
		n = a.CountTokens(&pipeline.Message{Content: a.System})
	}
	a.sysTokens.Store(int64(n) + 1)
	return n
}

// Window returns the turn's pipeline.Window, which is also its
// pipeline.Models.
func (ts *Turn) Window() interface {
	pipeline.Window
	pipeline.Models
} {
	return (*window)(ts)
}

// Prepare readies the instance's turn state for turn turnID outside
// RunTurn, for what drives the window of a loaded instance directly (a
// test of reductions). The caller holds the instance's slot.
func (in *Instance) Prepare(ctx context.Context, turnID string) *Turn {
	ts := &in.ts
	ts.Agent, ts.Inst, ts.TurnID, ts.StoreCtx = in.agent, in, turnID, ctx
	ts.Conv.in, ts.Conv.ts = in, ts
	ts.req = model.Request{Agent: in.agent.Name, InstanceKey: in.key, TurnID: turnID, Turn: 1}
	return ts
}

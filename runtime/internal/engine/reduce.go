package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// On a context-window error, the runtime keeps 75 % of the effective
// history and tries again, at most 3 times.
const (
	forcedKeep        = 0.75
	maxContextRetries = 3
)

// callModelFitting is callModel, retried after a forced reduction of the
// effective history when the provider says it does not fit the context
// window.
func (a *Agent) callModelFitting(ctx context.Context, ts *Turn, s *pipeline.StepContext, msg *pipeline.Message) (pipeline.Usage, error) {
	usage, err := a.callModel(ctx, ts, s, msg)
	for try := 1; err != nil && errors.Is(err, model.ErrContextWindow); try++ {
		if try > maxContextRetries {
			return usage, fmt.Errorf("%w (still too long after %d reductions to %.0f%% of the history)", err, maxContextRetries, forcedKeep*100)
		}
		before, after, rerr := a.reduce(ts, forcedKeep, "context_window_exceeded")
		if rerr != nil {
			return usage, errors.Join(err, rerr)
		}
		if after >= before {
			return usage, fmt.Errorf("%w (nothing left to leave out: the model sees only messages kept on purpose, %d of them)", err, before)
		}
		usage, err = a.callModel(ctx, ts, s, msg)
	}
	return usage, err
}

// unit is a run of effective messages that stay or go together: an
// assistant message and the results of its tool calls, or one message.
type unit struct {
	pos  []int // positions in the full history
	keep bool  // it holds a message that must stay
}

// reduce marks the oldest messages of the effective history truncated
// until at most keep of them remain, leaving alone what must stay: the
// first user message (the task), pinned messages, messages open pending
// items point to, the inputs and reports of open delegation tasks, and
// the newest message. A tool call and its results go together. It returns
// the effective message counts before and after, and publishes
// context.truncated with them and reason. The caller holds the slot.
func (a *Agent) reduce(ts *Turn, keep float64, reason string) (before, after int, err error) {
	h := &ts.Inst.hist
	pos := h.Positions()
	before = len(pos)
	target := int(math.Ceil(float64(before) * keep))
	units, err := a.units(ts)
	if err != nil {
		return before, before, err
	}
	left := before
	var marked []int
	for _, u := range units {
		if left <= target {
			break
		}
		if u.keep {
			continue
		}
		marked = append(marked, u.pos...)
		left -= len(u.pos)
	}
	if err := ts.mark(marked, func(md map[string]any) { md[pipeline.MetaTruncated] = true }); err != nil {
		return before, before, err
	}
	a.truncated(ts, reason, before, keep)
	return before, len(h.Positions()), nil
}

// mark replaces the messages at the positions with copies whose metadata
// set changes; the replacements are stored with the next commit.
func (ts *Turn) mark(pos []int, set func(map[string]any)) error {
	if len(pos) == 0 {
		return nil
	}
	ids := make([]string, len(pos))
	for i, p := range pos {
		ids[i] = ts.Inst.hist.At(p).Msg.ID
	}
	for _, id := range ids {
		i := ts.Inst.hist.IndexOf(id)
		m := *ts.Inst.hist.At(i).Msg
		m.Metadata = maps.Clone(m.Metadata)
		if m.Metadata == nil {
			m.Metadata = map[string]any{}
		}
		set(m.Metadata)
		if err := ts.Conv.apply(pipeline.MessageEvent{Type: pipeline.MessageReplace, TargetID: id, Message: m}); err != nil {
			return err
		}
	}
	return nil
}

// units splits the effective history into units, oldest first, and says
// which must stay.
func (a *Agent) units(ts *Turn) ([]unit, error) {
	h := &ts.Inst.hist
	pos := h.Positions()
	keep, err := a.keepSet(ts)
	if err != nil {
		return nil, err
	}
	var out []unit
	firstUser := true
	callUnit := map[string]int{} // tool call ID → the unit of its call
	newest := -1
	for _, p := range pos {
		m := h.At(p).Msg
		k := keep[m.ID] || IsPinned(m)
		// A result joins its call's unit, wherever it stands: a message a
		// middleware put in between must not split them.
		if m.Role == pipeline.RoleTool {
			if j, ok := callUnit[m.ToolCallID]; ok {
				out[j].pos = append(out[j].pos, p)
				out[j].keep = out[j].keep || k
				newest = j
				continue
			}
		}
		u := unit{pos: []int{p}, keep: k}
		if firstUser && m.Role == pipeline.RoleUser && !IsSummary(m) {
			u.keep, firstUser = true, false
		}
		for _, c := range m.ToolCalls {
			callUnit[c.ID] = len(out)
		}
		out = append(out, u)
		newest = len(out) - 1
	}
	if newest >= 0 {
		out[newest].keep = true // the newest: what the model answers
	}
	return out, nil
}

// keepSet returns the IDs of the messages a reduction must keep: the
// turn's input (the request it answers), what the caller asked to keep,
// and what each feature needs (Hook.Keep).
func (a *Agent) keepSet(ts *Turn) (map[string]bool, error) {
	keep := map[string]bool{ts.inputID: true}
	for id := range ts.keepIDs {
		keep[id] = true
	}
	for _, h := range a.Env.Hooks {
		if err := h.Keep(ts, keep); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

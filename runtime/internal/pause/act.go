package pause

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/store"
)

// Act applies a human's action to item id under its instance's turn slot,
// in this process, so that it is ordered with the instance's turns and
// other actions. If no other item of its turn is open, it runs the resume
// turn and returns its result; else the result is nil.
func (p *Pauses) Act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	it, inst, done, err := p.holdItem(ctx, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if !it.Open {
		return nil, fmt.Errorf("pending item %q: %w (it is %s)", id, ledger.ErrResolved, it.Status)
	}
	if err := p.env.Unavailable(it.Agent); err != nil {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	k, ok := p.kind(it.Agent, it.Extension, it.Kind)
	if !ok {
		return nil, fmt.Errorf("pending item %q: agent %q has no extension %q handling %s items (is it still in the config?)", id, it.Agent, it.Extension, it.Kind)
	}
	if act.Kind == extensions.ActionEdit {
		if err := checkEdit(inst, it, k, json.RawMessage(act.Value)); err != nil {
			return nil, fmt.Errorf("pending item %q: %w", id, err)
		}
	}
	out, err := k.Resolve(ctx, it, act)
	if err != nil {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	if p.env.Tape != nil {
		text := act.Value
		if act.Kind == extensions.ActionReject {
			text = act.Reason
		}
		p.env.Tape.Input(tape.Input{Op: string(act.Kind), ID: id, Text: text, Secret: out.Secret != nil})
	}
	return p.settle(ctx, inst, it, out)
}

// checkEdit checks an edit of item it before its kind sees it: the item
// paused a tool call that the kind can run again (it has a Resume), and
// args fit the call's tool. The runtime checks, not the kind: the schema
// is the agent's, and no kind can forget to check (see RATIONALE.md).
func checkEdit(inst *engine.Instance, it ledger.Item, k extensions.PendingKind, args json.RawMessage) error {
	if it.CallID == "" || k.Resume == nil {
		return fmt.Errorf("%w: a %s item cannot be edited: only an item that holds a paused tool call can", extensions.ErrInvalidAction, it.Kind)
	}
	c, _, ok := inst.FindCall(it.CallID)
	if !ok {
		return fmt.Errorf("the call %s is not in the history", it.CallID)
	}
	tools := inst.Def().ToolsOf(context.Background(), inst)
	i := slices.IndexFunc(tools, func(t pipeline.Tool) bool { return t.Name == c.Name })
	if i < 0 {
		return fmt.Errorf("%w: the call's tool %q is not one of agent %q's tools", extensions.ErrInvalidAction, c.Name, inst.Agent())
	}
	if err := tool.CheckArguments(tools[i], args); err != nil {
		return fmt.Errorf("%w: the edited arguments of the %s call: %v", extensions.ErrInvalidAction, c.Name, err)
	}
	return nil
}

// holdItem acquires the turn slot of the instance item id belongs to and
// returns the item as it is then, when nothing else acts on the instance.
// The caller calls done.
func (p *Pauses) holdItem(ctx context.Context, id string) (ledger.Item, *engine.Instance, func(), error) {
	it, err := p.env.Ledger.Get(ctx, id)
	if err != nil {
		return ledger.Item{}, nil, nil, err
	}
	inst, done, err := p.env.Hold(ctx, "pending item "+strconv.Quote(id), it.Agent, it.Instance)
	if err != nil {
		return ledger.Item{}, nil, nil, err
	}
	if it, err = p.env.Ledger.Get(ctx, id); err != nil {
		done()
		return ledger.Item{}, nil, nil, err
	}
	return it, inst, done, nil
}

// settle records out for the open item it and, if that closed the last
// open item of its turn, resumes the instance. The caller holds the
// instance's slot.
func (p *Pauses) settle(ctx context.Context, inst *engine.Instance, it ledger.Item, out extensions.Outcome) (*pipeline.TurnResult, error) {
	storeCtx := context.WithoutCancel(ctx)
	if out.Secret != nil {
		if err := p.env.PutSecret(storeCtx, inst.Agent(), inst.Key(), out.Secret.Name, out.Secret.Value); err != nil {
			return nil, fmt.Errorf("pending item %q: %w", it.ID, err)
		}
		inst.DropSecrets()
	}
	res := out.Resolution
	res.Agent, res.Instance = it.Agent, it.Instance
	done, err := p.env.Ledger.Resolve(storeCtx, it.ID, res)
	if err != nil {
		return nil, err
	}
	if done.Open {
		return nil, nil // a required question that timed out: it still waits
	}
	delete(inst.Paused, it.ID)
	return p.resumeIfReady(ctx, inst, it.TurnID)
}

// resumeIfReady resumes the paused turn turnID of inst once none of its
// items is open, exactly once: the resume turn's input message, stored
// before anything else of the turn, marks the turn as resumed even if the
// process stops before the items are marked. The caller holds the slot.
func (p *Pauses) resumeIfReady(ctx context.Context, inst *engine.Instance, turnID string) (*pipeline.TurnResult, error) {
	storeCtx := context.WithoutCancel(ctx)
	items, err := p.env.Ledger.List(storeCtx, ledger.Filter{Agent: inst.Agent(), Instance: inst.Key(), TurnID: turnID})
	if err != nil {
		return nil, err
	}
	var ids, msgs, fails, traces []string
	for _, it := range items {
		if it.Open {
			return nil, nil
		}
		if it.ResumedBy != "" {
			continue
		}
		ids = append(ids, it.ID)
		if it.Trace != "" && !slices.Contains(traces, it.Trace) {
			traces = append(traces, it.Trace)
		}
		if it.Message != "" {
			msgs = append(msgs, it.Message)
		}
		if it.Fails {
			fails = append(fails, it.Reason)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	in := pipeline.InputEvent{Kind: pipeline.InputResume, Text: strings.Join(msgs, "\n\n"),
		Metadata: map[string]any{"resumes": turnID, "pending": ids}}
	if len(fails) > 0 {
		in.Metadata["failed"] = strings.Join(fails, "; ")
	}
	if by := inst.ResumedBy(turnID); by != "" {
		// The resume turn ran, or began: a stop of the process came before
		// the items were marked. Cut short, it goes on from where it
		// stopped (interrupt.go), as the answer asked; if it ended, or
		// other turns followed it, nothing is left to run.
		if _, cut := inst.Interrupted(in); !cut {
			return nil, p.env.Ledger.MarkResumed(storeCtx, ids, by)
		}
	}
	inst.Turn().Links = traces // the resume turn links to the turn it resumes
	res, err := p.env.Run(ctx, inst, in)
	if res.TurnID == "" {
		return res, err // the turn never began (its agent is unavailable): nothing resumed
	}
	if res.FinishReason == pipeline.FinishAborted && p.env.Gate.Closing() {
		// The stop of this runtime cut it, not its caller: the items stay
		// unmarked, and the instance's next owner (another process, or the
		// next start) finishes the turn (recoverResumes).
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s did not end: %w; the instance's next owner finishes it", strings.Join(ids, ", "), res.TurnID, p.env.Cut)
	}
	if errors.Is(err, store.ErrUnavailable) {
		// The store did not save the turn, or did not say whether it did
		// (a NATS server died with a commit): the items stay unmarked, and
		// the resume is tried again once the store answers; it goes on
		// from whatever of the turn was saved, as above.
		p.resumeLater(inst.Agent(), inst.Key(), turnID)
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s was not saved: %w; it is tried again by itself", strings.Join(ids, ", "), res.TurnID, err)
	}
	if errors.Is(err, store.ErrFenced) {
		// Another process took the instance while the turn ran (this one
		// stalled past its lease): the turn's last commit wrote nothing.
		// The items stay unmarked, and the instance's new owner finishes
		// the resume (recoverResumes), as it does one a stop cut.
		return res, fmt.Errorf("pending item %s: the answer was taken, but its resume turn %s was not saved: %w; the instance's new owner finishes it", strings.Join(ids, ", "), res.TurnID, err)
	}
	if merr := p.env.Ledger.MarkResumed(storeCtx, ids, res.TurnID); merr != nil {
		err = errors.Join(err, merr)
	}
	return res, err
}

// resumeLater tries again (engine.RetryWaits), in the background, the resume of turnID of
// agent's instance key, which the store failed to save: until it is
// saved, the instance moves to another process, or the runtime stops.
// What is still undone then, the next start finishes (recoverResumes).
// One loop tries each turn: a try that fails so again asks for another,
// which the loop running makes.
func (p *Pauses) resumeLater(agent, key, turnID string) {
	id := agent + "\x00" + key + "\x00" + turnID
	if _, running := p.resuming.LoadOrStore(id, true); running {
		return
	}
	ctx := p.env.Bg
	go func() {
		defer p.resuming.Delete(id)
		for _, wait := range engine.RetryWaits {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if !p.env.Gate.Enter() {
				return
			}
			err := func() error {
				defer p.env.Gate.Leave()
				inst, done, err := p.env.Hold(ctx, "paused "+turnID, agent, key)
				if err != nil {
					return err
				}
				defer done()
				_, err = p.resumeIfReady(ctx, inst, turnID)
				return err
			}()
			switch {
			case err == nil:
				return
			case errors.Is(err, seam.ErrMoved):
				p.env.Logger.Warn("a resume the store failed to save was not tried again: its instance moved to another process; the next start of the runtime finishes it", "agent", agent, "instance", key, "turn", turnID)
				return
			case !errors.Is(err, store.ErrUnavailable):
				p.env.Logger.Error("trying again a resume the store failed to save failed", "agent", agent, "instance", key, "turn", turnID, "err", err)
				return
			}
		}
	}()
}

// Expire expires the pending items past their deadline, as their
// extensions say, runs the resume turns that follow, and returns the
// items. The caller has entered the gate.
func (p *Pauses) Expire(ctx context.Context) ([]ledger.Item, error) {
	due, err := p.env.Ledger.List(ctx, ledger.Filter{Status: ledger.Pending})
	if err != nil {
		return nil, err
	}
	now := p.env.Now()
	var out []ledger.Item
	var errs []error
	for _, it := range due {
		if it.ExpiresAt.IsZero() || it.ExpiresAt.After(now) || p.waits(it) {
			continue
		}
		done, err := p.expire(ctx, it.ID)
		if errors.Is(err, seam.ErrMoved) {
			continue // the process that owns its instance expires it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done != nil {
			out = append(out, *done)
		}
	}
	return out, errors.Join(errs...)
}

func (p *Pauses) expire(ctx context.Context, id string) (*ledger.Item, error) {
	it, inst, done, err := p.holdItem(ctx, id)
	if err != nil {
		return nil, err
	}
	defer done()
	if it.Status != ledger.Pending { // resolved meanwhile
		return nil, nil
	}
	out := extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout,
		Message: fmt.Sprintf("Nobody answered pending item %s (%s) in time.", it.ID, it.Kind)}}
	if k, ok := p.kind(it.Agent, it.Extension, it.Kind); ok && k.Expire != nil {
		out = k.Expire(it)
	}
	if out.Secret != nil {
		return nil, fmt.Errorf("pending item %q: a timeout cannot provide a secret", id)
	}
	if out.Resolution.Reason == "" {
		out.Resolution.Reason = "no answer by " + it.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if _, err := p.settle(ctx, inst, it, out); err != nil {
		return nil, err
	}
	it, err = p.env.Ledger.Get(ctx, id)
	return &it, err
}

// recoverResumes resumes the paused turns whose items were all resolved
// but whose resume did not run (the process stopped in between).
func (p *Pauses) recoverResumes(ctx context.Context) error {
	items, err := p.env.Ledger.List(ctx, ledger.Filter{})
	if err != nil {
		return err
	}
	type turn struct{ agent, instance, turn string }
	var todo []turn
	for _, it := range items {
		t := turn{it.Agent, it.Instance, it.TurnID}
		if !it.Open && it.ResumedBy == "" && !slices.Contains(todo, t) && !p.waits(it) {
			todo = append(todo, t)
		}
	}
	var errs []error
	for _, t := range todo {
		inst, done, err := p.env.Hold(ctx, "paused "+t.turn, t.agent, t.instance)
		if errors.Is(err, seam.ErrMoved) {
			continue // its owner resumes it
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = p.resumeIfReady(ctx, inst, t.turn)
		done()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

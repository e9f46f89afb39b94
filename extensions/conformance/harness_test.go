package conformance_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// harness runs one case on one implementation and records what it sees.
type harness struct {
	t     *testing.T
	im    *impl
	cfg   []byte // the config file
	model *recordingModel
	data  string // the data directory, for a case on disk
	rt    *runtime.Runtime
	unsub func()
	extra []runtime.Option // for New, set by a case's run before it opens

	mu  sync.Mutex // guards obs.Events, which bus handlers append to
	obs *observation
}

func newHarness(t *testing.T, im *impl, c *testCase) *harness {
	t.Helper()
	script, err := scripted.Parse("script.yaml", []byte(c.script))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, a := range c.agents {
		fmt.Fprintf(&b, "  - name: %s\n", a.name)
		if len(a.tools) > 0 {
			fmt.Fprintf(&b, "    tools: [%s]\n", strings.Join(a.tools, ", "))
		}
		if len(a.exts) > 0 {
			b.WriteString("    extensions:\n")
			for _, e := range a.exts {
				fmt.Fprintf(&b, "      - %s\n", im.entry(e))
			}
		}
	}
	obs := &observation{History: map[string][]pipeline.Message{}, State: map[string]string{}, Items: map[string][]itemObs{}}
	h := &harness{t: t, im: im, cfg: []byte(b.String()), model: &recordingModel{inner: script, obs: obs}, obs: obs}
	if c.disk {
		h.data = t.TempDir()
	}
	t.Cleanup(h.stop)
	return h
}

// tryOpen starts a runtime on the case's config and records the error.
func (h *harness) tryOpen() error {
	cfg, err := config.Parse("ganglion.yaml", h.cfg)
	if err != nil {
		h.t.Fatalf("config: %v\n%s", err, h.cfg)
	}
	opts := append(h.im.opts(), runtime.WithConfig(cfg), runtime.WithModel(h.model), runtime.WithTool(probe),
		runtime.WithClock(func() time.Time { return clock }), runtime.WithoutExpiryTimer())
	opts = append(opts, h.extra...)
	if h.data != "" {
		opts = append(opts, runtime.WithDataDir(h.data))
	} else {
		opts = append(opts, runtime.WithMemoryStore())
	}
	rt, err := runtime.New(context.Background(), opts...)
	if err != nil {
		h.obs.LoadErr = err.Error()
		return err
	}
	h.rt = rt
	var uns []func()
	for _, pattern := range []string{"twin.*", events.LayerSkipped} {
		uns = append(uns, rt.Events().Subscribe(pattern, h.record))
	}
	h.unsub = func() {
		for _, un := range uns {
			un()
		}
	}
	return nil
}

// runtime returns the running runtime, starting it on first use.
func (h *harness) runtime() *runtime.Runtime {
	h.t.Helper()
	if h.rt == nil {
		if err := h.tryOpen(); err != nil {
			h.t.Fatalf("New: %v", err)
		}
	}
	return h.rt
}

// stop closes the runtime, if one runs.
func (h *harness) stop() {
	h.t.Helper()
	if h.rt == nil {
		return
	}
	h.unsub()
	if err := h.rt.Close(); err != nil {
		h.t.Errorf("Close: %v", err)
	}
	h.rt = nil
}

// restart closes the runtime and starts another on the same data.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.runtime()
}

func (h *harness) record(ev events.Event) {
	line := fmt.Sprintf("%s %s/%s %s %s", ev.Topic, ev.Agent, ev.Instance, ev.Source, canonical(h.t, ev.Data))
	h.mu.Lock()
	h.obs.Events = append(h.obs.Events, line)
	h.mu.Unlock()
}

// send runs a turn and records its outcome.
func (h *harness) send(agent, instance, text string) {
	h.t.Helper()
	res, err := h.runtime().Send(context.Background(), agent, instance, runtime.UserMessage(text))
	o := turnObs{Agent: agent, Instance: instance, Input: text}
	if res != nil {
		o.Result = *res
	}
	if err != nil {
		o.Err = err.Error()
		var me *pipeline.MiddlewareError
		if errors.As(err, &me) {
			o.Blame = me.Extension + "/" + me.Hook.String()
		}
		if errors.Is(err, pipeline.ErrNextCalledTwice) {
			o.Matches = append(o.Matches, "ErrNextCalledTwice")
		}
		if pe := (*pipeline.PanicError)(nil); errors.As(err, &pe) {
			o.Matches = append(o.Matches, "PanicError")
		}
	}
	h.obs.Turns = append(h.obs.Turns, o)
}

// history records the stored history of an instance.
func (h *harness) history(agent, instance string) {
	h.t.Helper()
	msgs, err := h.runtime().History(context.Background(), agent, instance)
	if err != nil {
		h.t.Fatal(err)
	}
	for i, m := range msgs {
		// A resume turn's input names the items it resumes, by IDs that
		// differ from run to run.
		if _, ok := m.Metadata["pending"]; ok {
			m.Metadata = maps.Clone(m.Metadata)
			m.Metadata["pending"] = "(the IDs of the resumed items)"
			msgs[i] = m
		}
	}
	h.obs.History[agent+"/"+instance] = msgs
}

// state records an extension's state for an instance.
func (h *harness) state(agent, instance, extension string) {
	h.t.Helper()
	raw, err := h.runtime().ExtensionState(context.Background(), agent, instance, extension)
	if err != nil {
		h.t.Fatal(err)
	}
	h.obs.State[agent+"/"+instance+"/"+extension] = string(raw)
}

// recordingModel records every model call and answers from a script.
type recordingModel struct {
	inner model.Provider
	mu    sync.Mutex // guards obs.Calls
	obs   *observation
}

func (m *recordingModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	c := modelCall{Agent: req.Agent, Instance: req.InstanceKey, Turn: req.Turn, Step: req.Step, Tools: []string{}, Messages: []string{}}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, t.Name)
	}
	for i := range req.Messages.Len() {
		msg := req.Messages.At(i)
		c.Messages = append(c.Messages, string(msg.Role)+": "+msg.Content)
	}
	m.mu.Lock()
	m.obs.Calls = append(m.obs.Calls, c)
	m.mu.Unlock()
	return m.inner.Stream(ctx, req)
}

// probe is a tool of the runtime (not of the twin) that reports its
// arguments.
var probe = pipeline.Tool{
	ToolSpec: pipeline.ToolSpec{Name: "probe", Description: "Reports its arguments.", Category: pipeline.CategoryRead},
	Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), Content: "probe got " + string(c.Arguments())}, nil
	},
}

// act does kind (answer, skip, reject) with value to the one open item of
// an instance and records the outcome as a turn: the resumed turn's
// result, or the refusal, with the item's ID replaced by "ID".
func (h *harness) act(agent, instance, kind, value string) {
	h.t.Helper()
	ctx := context.Background()
	rt := h.runtime()
	items, err := rt.Pending(ctx, ledger.Filter{Agent: agent, Instance: instance, Open: true})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(items) != 1 {
		h.t.Fatalf("%s/%s has %d open items, want 1: %+v", agent, instance, len(items), items)
	}
	id := items[0].ID
	var res *pipeline.TurnResult
	switch kind {
	case "answer":
		res, err = rt.Answer(ctx, id, value)
	case "skip":
		res, err = rt.Skip(ctx, id)
	case "reject":
		res, err = rt.Reject(ctx, id, value)
	default:
		h.t.Fatalf("act: unknown kind %q", kind)
	}
	o := turnObs{Agent: agent, Instance: instance, Input: kind + " " + value}
	if res != nil {
		o.Result = *res
	}
	if err != nil {
		o.Err = strings.ReplaceAll(err.Error(), id, "ID")
		if errors.Is(err, extensions.ErrInvalidAction) {
			o.Matches = append(o.Matches, "ErrInvalidAction")
		}
	}
	h.obs.Turns = append(h.obs.Turns, o)
}

// items records the pending items of an instance, open and resolved.
func (h *harness) items(agent, instance string) {
	h.t.Helper()
	items, err := h.runtime().Pending(context.Background(), ledger.Filter{Agent: agent, Instance: instance})
	if err != nil {
		h.t.Fatal(err)
	}
	// The suite's clock stands still: order by where each item was opened.
	slices.SortFunc(items, func(a, b ledger.Item) int {
		return cmp.Or(strings.Compare(a.TurnID, b.TurnID), a.Step-b.Step, strings.Compare(a.CallID, b.CallID))
	})
	var obs []itemObs
	for _, it := range items {
		obs = append(obs, itemObs{Kind: it.Kind, Extension: it.Extension, TurnID: it.TurnID, CallID: it.CallID, Status: string(it.Status),
			Answer: it.Answer, Message: it.Message, Step: it.Step, Request: string(it.Request), Required: it.Required, Open: it.Open})
	}
	h.obs.Items[agent+"/"+instance] = obs
}

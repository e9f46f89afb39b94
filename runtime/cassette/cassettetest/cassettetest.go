package cassettetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// Options say what a replay runs.
type Options struct {
	// Config is the config the session runs with now: the recorded one,
	// or the one under test. Required.
	Config *config.File
	// Runtime are more options for the runtime: runtime.WithExtension
	// for a native extension under test, runtime.WithTool, a logger. The
	// replay adds a memory store and the player; it turns the expiry
	// timer off (the recorded clock is not the wall clock).
	Runtime []runtime.Option
	// Lenient goes on after a divergence with the recorded answers,
	// instead of stopping at the first.
	Lenient bool
	// Secrets are the values to provide for the recorded provides of
	// secrets, by pending item ID; a secret not given is provided as
	// "replayed-secret-0000" (a valid API key). A replay needs them only
	// if code under test reads them.
	Secrets map[string]string
}

// replayedSecret is the value a replay provides in place of a recorded
// secret, which the cassette does not hold.
const replayedSecret = "replayed-secret-0000"

// Result is what a replay produced.
type Result struct {
	// Transcript is the session as text: each input, the events it caused,
	// its outcome; then every instance's history and extension state, the
	// pending items and the tasks. Times and durations are left out, so
	// that it compares as the same from one run to the next.
	Transcript string
	// Divergences are where the session differed from the recording.
	Divergences []*cassette.Divergence
}

// Replay plays c back: it builds a runtime with opts and the cassette's
// player, issues the recorded inputs one after the other (waiting after
// each until the delegations it started have settled), and returns the
// transcript. It fails only when the runtime cannot be built; what the
// session does, failures included, is in the transcript.
func Replay(ctx context.Context, c *cassette.Cassette, opts Options) (*Result, error) {
	var po []cassette.PlayOption
	if opts.Lenient {
		po = append(po, cassette.Lenient())
	}
	player := cassette.NewPlayer(c, po...)
	res, err := run(ctx, c.Inputs(), player, opts)
	if res != nil {
		res.Divergences = player.Divergences()
	}
	return res, err
}

// Record runs inputs live, as [Replay] runs a cassette's, recording the
// session with rec (which the caller closes), and returns the
// transcript: the one a replay of the cassette gives again. An input that
// resolves a pending item without naming it (ID "") resolves the first
// open one: of the first instance, turn, step and call, by name.
func Record(ctx context.Context, rec *cassette.Recorder, inputs []cassette.Input, opts Options) (*Result, error) {
	return run(ctx, inputs, rec, opts)
}

func run(ctx context.Context, inputs []cassette.Input, tape cassette.Tape, opts Options) (*Result, error) {
	if opts.Config == nil {
		return nil, errors.New("cassettetest: no config")
	}
	w := &writer{}
	ro := append(slices.Clone(opts.Runtime), runtime.WithConfig(opts.Config), runtime.WithMemoryStore(),
		runtime.WithoutExpiryTimer(), runtime.WithTape(tape))
	// The channels the inputs name (a CLI's, an app's) are the runtime's
	// no more: their answers go into the transcript.
	for _, name := range channels(inputs) {
		ro = append(ro, runtime.WithChannel(name, runtime.ChannelFunc(func(_ context.Context, r runtime.Report) error {
			w.delivered(name, r)
			return nil
		})))
	}
	rt, err := runtime.New(ctx, ro...)
	if err != nil {
		return nil, err
	}
	unsubscribe := rt.Events().Subscribe("*", w.event)
	for i, in := range inputs {
		in, err := target(ctx, rt, in)
		w.input(i+1, in)
		o := outcome{err: err}
		if err == nil {
			o = issue(ctx, rt, in, opts.Secrets)
		}
		if err := rt.WaitTasks(ctx); err != nil {
			o.err = errors.Join(o.err, fmt.Errorf("waiting for the tasks: %w", err))
		}
		w.flush()
		w.outcome(o)
	}
	unsubscribe()
	w.state(ctx, rt, opts.Config)
	return &Result{Transcript: w.b.String()}, rt.Close()
}

// outcome is what one input came to.
type outcome struct {
	res    *pipeline.TurnResult
	report *runtime.Report
	err    error
}

// channels returns the channels the inputs' metadata names, but the
// runtime's own.
func channels(inputs []cassette.Input) []string {
	var names []string
	for _, in := range inputs {
		if in.Input == nil {
			continue
		}
		if ch, ok := in.Input.Metadata["channel"].(string); ok && ch != runtime.ChannelAPI && ch != runtime.ChannelAgent && !slices.Contains(names, ch) {
			names = append(names, ch)
		}
	}
	return names
}

// target names the pending item a live run's resolution is for: the
// first open one (byPlace), when the input names none.
func target(ctx context.Context, rt *runtime.Runtime, in cassette.Input) (cassette.Input, error) {
	if in.ID != "" || in.Op == "send" || in.Op == "ask" {
		return in, nil
	}
	items, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil {
		return in, err
	}
	if len(items) == 0 {
		return in, fmt.Errorf("%s: no open pending item", in.Op)
	}
	slices.SortFunc(items, byPlace)
	in.ID = items[0].ID
	return in, nil
}

func issue(ctx context.Context, rt *runtime.Runtime, in cassette.Input, secrets map[string]string) outcome {
	switch in.Op {
	case "send":
		res, err := rt.Send(ctx, in.Agent, in.Instance, *in.Input)
		return outcome{res: res, err: err}
	case "ask":
		rep, err := rt.Ask(ctx, in.Agent, in.Instance, in.Text)
		return outcome{report: rep, err: err}
	case "answer":
		res, err := rt.Answer(ctx, in.ID, in.Text)
		return outcome{res: res, err: err}
	case "edit":
		res, err := rt.Edit(ctx, in.ID, json.RawMessage(in.Text))
		return outcome{res: res, err: err}
	case "skip":
		res, err := rt.Skip(ctx, in.ID)
		return outcome{res: res, err: err}
	case "provide":
		v := in.Text
		if in.Secret {
			v = replayedSecret
			if s, ok := secrets[in.ID]; ok {
				v = s
			}
		}
		res, err := rt.Provide(ctx, in.ID, v)
		return outcome{res: res, err: err}
	case "reject":
		res, err := rt.Reject(ctx, in.ID, in.Text)
		return outcome{res: res, err: err}
	}
	return outcome{err: fmt.Errorf("unknown input %q", in.Op)} // Read refuses those
}

// byPlace orders pending items by where they were made: agent, instance,
// turn, step, call, then time. Not by ID, which is random in a live run,
// nor by time first, as items made by calls running at once may swap
// their times in a replay.
func byPlace(a, b ledger.Item) int {
	return cmp.Or(strings.Compare(a.Agent, b.Agent), strings.Compare(a.Instance, b.Instance), strings.Compare(a.TurnID, b.TurnID),
		cmp.Compare(a.Step, b.Step), strings.Compare(a.CallID, b.CallID), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
}

// writer writes a transcript.
type writer struct {
	b      strings.Builder
	mu     sync.Mutex
	events []events.Event // the current input's, until it is done
}

func (w *writer) line(s string) {
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

func (w *writer) event(ev events.Event) {
	if ev.Topic == events.ModelDelta || ev.Topic == events.MessageAppended {
		return // the history holds the text
	}
	w.mu.Lock()
	w.events = append(w.events, ev)
	w.mu.Unlock()
}

func (w *writer) input(n int, in cassette.Input) {
	s := fmt.Sprintf("== input %d: %s", n, in.Op)
	switch in.Op {
	case "send":
		s += fmt.Sprintf(" %s/%s %s %s", in.Agent, in.Instance, in.Input.Kind, quote(in.Input.Text))
	case "ask":
		s += fmt.Sprintf(" %s/%s %s", in.Agent, in.Instance, quote(in.Text))
	case "skip":
		s += " " + in.ID
	case "provide":
		s += " " + in.ID + " (the value is not shown)"
	default:
		s += " " + in.ID + " " + quote(in.Text)
	}
	w.line(s)
}

// flush writes the events of the input before, grouped by instance (in
// name order) so that instances working at once in the recording and in
// the replay give the same text. An instance's events are in order, but
// for those of a step whose tool calls ran at once: they are by call (an
// event names its call in its data's call_id), the events no call names
// after them, by their text.
func (w *writer) flush() {
	w.mu.Lock()
	evs := w.events
	w.events = nil
	w.mu.Unlock()
	slices.SortStableFunc(evs, func(a, b events.Event) int {
		return strings.Compare(a.Agent+"/"+a.Instance, b.Agent+"/"+b.Instance)
	})
	for i := 0; i < len(evs); i++ {
		if evs[i].Topic != events.ToolStarted {
			continue
		}
		j, calls := i, 0
		for ; j < len(evs) && evs[j].Agent == evs[i].Agent && evs[j].Instance == evs[i].Instance &&
			evs[j].Topic != events.StepFinished && evs[j].Topic != events.TurnFinished; j++ {
			if evs[j].Topic == events.ToolStarted {
				calls++
			}
		}
		if calls > 1 {
			// One call's events come from one goroutine, in order already.
			slices.SortStableFunc(evs[i:j], func(a, b events.Event) int {
				ca, cb := callOf(a), callOf(b)
				switch {
				case ca != "" && cb != "":
					return strings.Compare(ca, cb)
				case ca != "":
					return -1
				case cb != "":
					return 1
				}
				return strings.Compare(eventText(a), eventText(b))
			})
		}
		i = j - 1
	}
	for _, ev := range evs {
		w.line(eventText(ev))
	}
}

// callOf returns the tool call an event is about (its data's call_id),
// or "".
func callOf(ev events.Event) string {
	switch d := ev.Data.(type) {
	case events.ToolStartedData:
		return d.CallID
	case events.ToolFinishedData:
		return d.CallID
	case nil:
		return ""
	}
	raw, err := json.Marshal(ev.Data)
	if err != nil {
		return ""
	}
	var c struct {
		CallID string `json:"call_id"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.CallID
}

func eventText(ev events.Event) string {
	s := ev.Topic + " " + ev.Agent + "/" + ev.Instance
	if ev.TurnID != "" {
		s += " " + ev.TurnID
	}
	if ev.Source != "runtime" {
		s += " (" + ev.Source + ")"
	}
	if ev.Data != nil {
		s += " " + timeless(ev.Data)
	}
	return s
}

// delivered notes an answer delivered on a channel, with the input's
// events: a delivery is part of what an input caused.
func (w *writer) delivered(channel string, r runtime.Report) {
	data := map[string]string{"task_id": r.TaskID, "response": r.Response}
	if r.Error != "" {
		data["error"] = r.Error
	}
	w.event(events.Event{Topic: "channel.delivered", Agent: r.Agent, Instance: r.Instance, Source: channel, Data: data})
}

func (w *writer) outcome(o outcome) {
	switch {
	case o.report != nil:
		s := "-> report of task " + o.report.TaskID + ": " + quote(o.report.Response)
		if o.report.Error != "" {
			s += " error " + quote(o.report.Error)
		}
		w.line(s)
	case o.res != nil && o.err == nil:
		s := "-> " + string(o.res.FinishReason)
		if o.res.TurnID != "" {
			s += " " + o.res.TurnID
		}
		if o.res.AnsweredBy != "" {
			s += " answered by " + o.res.AnsweredBy
		}
		if o.res.Response.Content != "" {
			s += ": " + quote(o.res.Response.Content)
		}
		w.line(s)
	}
	if o.err != nil {
		w.line("-> error: " + o.err.Error())
	}
}

// state writes what the session left: the instances' histories and
// extension states, the pending items and the tasks.
func (w *writer) state(ctx context.Context, rt *runtime.Runtime, cfg *config.File) {
	for _, ac := range cfg.Agents {
		keys, err := rt.Instances(ctx, ac.Name)
		if err != nil {
			w.line("== instances of " + ac.Name + ": " + err.Error())
			continue
		}
		for _, key := range keys {
			w.history(ctx, rt, ac.Name, key)
			for _, ec := range ac.Extensions {
				st, err := rt.ExtensionState(ctx, ac.Name, key, ec.Name)
				switch {
				case err != nil:
					w.line("== state " + ac.Name + "/" + key + " " + ec.Name + ": " + err.Error())
				case len(st) > 0 && string(st) != "null" && string(st) != "{}":
					w.line("== state " + ac.Name + "/" + key + " " + ec.Name)
					w.line(timeless(st))
				}
			}
			w.tasks(ctx, rt, ac.Name, key)
		}
	}
	items, err := rt.Pending(ctx, ledger.Filter{})
	if err != nil {
		w.line("== pending: " + err.Error())
		return
	}
	if len(items) > 0 {
		w.line("== pending")
	}
	slices.SortFunc(items, byPlace)
	for _, it := range items {
		w.line(timeless(it))
	}
}

func (w *writer) history(ctx context.Context, rt *runtime.Runtime, agent, key string) {
	msgs, err := rt.History(ctx, agent, key)
	if err != nil {
		w.line("== history " + agent + "/" + key + ": " + err.Error())
		return
	}
	w.line("== history " + agent + "/" + key)
	for _, m := range msgs {
		s := m.ID + " " + string(m.Role)
		switch m.Source.Type {
		case pipeline.SourceModel, "":
		default:
			s += " [" + string(m.Source.Type)
			if m.Source.Extension != "" {
				s += " " + m.Source.Extension
			}
			if m.Source.Agent != "" {
				s += " " + m.Source.Agent
			}
			s += "]"
		}
		if m.Role == pipeline.RoleTool {
			s += " " + m.ToolCallID + " " + m.Name
			if m.IsError {
				s += " (error)"
			}
		}
		if m.Reasoning != "" {
			s += " reasoning " + quote(m.Reasoning)
		}
		if m.Content != "" {
			s += ": " + quote(m.Content)
		}
		w.line(s)
		for _, c := range m.ToolCalls {
			w.line("  call " + c.ID + " " + c.Name + " " + string(c.Arguments))
		}
	}
}

func (w *writer) tasks(ctx context.Context, rt *runtime.Runtime, agent, key string) {
	ts, err := rt.Tasks(ctx, agent, key)
	if err != nil || len(ts) == 0 {
		return
	}
	w.line("== tasks " + agent + "/" + key)
	for _, t := range ts {
		w.line(timeless(t))
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

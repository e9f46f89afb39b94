package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

const fanOutConfig = `
agents:
  - name: lead
    tools: [call_agent, list_agents]
  - name: coder
    description: writes the code
  - name: tester
    description: tests the code
`

const fanOutScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Final answer, from: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, args: {agent_id: tester, message: "test the parser"}}
        - text: "Delegated; I will answer when the reports are in."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`

// Helpers of the delegation tests.

// taskIDRe matches a task ID.
var taskIDRe = regexp.MustCompile(`task_[0-9a-f]{12}`)

// noIDs replaces every task ID in s by "task_ID", to compare texts of
// different runs.
func noIDs(s string) string { return taskIDRe.ReplaceAllString(s, "task_ID") }

// reminderHead is the start of every merged report turn's input.
const reminderHead = "[System notice: delegation context restored]\n"

// wantReminder returns the restore reminder a report turn starts with:
// requester, request and the delegations ("agent: message"), up to the
// separator.
func wantReminder(requester, request string, delegations ...string) string {
	var b strings.Builder
	b.WriteString(reminderHead)
	fmt.Fprintf(&b, "This is where you were when you delegated %d task(s):\n", len(delegations))
	fmt.Fprintf(&b, "- Original requester: %s\n- Original request: %s\n- Delegations:\n", requester, request)
	for i, d := range delegations {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, d)
	}
	b.WriteString("Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.\n\n---\n")
	return b.String()
}

// wantSection renders one child's section of a report.
func wantSection(agent, taskID, response string, failed bool) string {
	status := ""
	if failed {
		status = " (failed)"
	}
	return fmt.Sprintf("\n## %s, task %s%s\n%s\n", agent, taskID, status, response)
}

// askTimeout bounds every wait of these tests.
const askTimeout = 10 * time.Second

// mustAsk asks and fails the test on an error.
func mustAsk(t *testing.T, rt *runtime.Runtime, agent, key, text string) *runtime.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	rep, err := rt.Ask(ctx, agent, key, text)
	if err != nil {
		t.Fatalf("Ask(%s, %s, %q): %v\n%s", agent, key, text, err, dumpTasks(rt))
	}
	return rep
}

// dumpTasks describes the open tasks and every instance's history, for a test
// that timed out.
func dumpTasks(rt *runtime.Runtime) string {
	ctx := context.Background()
	var b strings.Builder
	ts, err := rt.Tasks(ctx, "", "")
	fmt.Fprintf(&b, "open tasks (%v):\n", err)
	for _, tk := range ts {
		fmt.Fprintf(&b, "\t%s %s/%s %s pending %d parent %s responses %d reported %d\n",
			tk.ID, tk.Agent, tk.Instance, tk.State, tk.Pending, tk.ParentID, len(tk.Context.Responses), tk.Context.Reported)
	}
	for _, a := range rt.Agents() {
		keys, _ := rt.Instances(ctx, a)
		for _, k := range keys {
			msgs, _ := rt.History(ctx, a, k)
			fmt.Fprintf(&b, "history of %s/%s:\n\t%s\n", a, k, strings.Join(describeAll(msgs), "\n\t"))
		}
	}
	fmt.Fprintf(&b, "goroutines:\n%s", strings.Join(stacks(), "\n\n"))
	return b.String()
}

type askResult struct {
	rep *runtime.Report
	err error
}

// goAsk asks in a goroutine; the result comes on the channel.
func goAsk(rt *runtime.Runtime, agent, key, text string) <-chan askResult {
	out := make(chan askResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
		defer cancel()
		rep, err := rt.Ask(ctx, agent, key, text)
		out <- askResult{rep, err}
	}()
	return out
}

// awaitAsk waits for an Ask started with goAsk.
func awaitAsk(t *testing.T, c <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(askTimeout + time.Second):
		t.Fatalf("Ask did not return; goroutines:\n%s", strings.Join(stacks(), "\n\n"))
	}
	return askResult{}
}

// toolResult returns the tool result message answering callID.
func toolResult(t *testing.T, msgs []pipeline.Message, callID string) pipeline.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == pipeline.RoleTool && m.ToolCallID == callID {
			return m
		}
	}
	t.Fatalf("no result of tool call %q in:\n%s", callID, strings.Join(describeAll(msgs), "\n"))
	return pipeline.Message{}
}

// delegatedTo returns the child task ID that call_agent's result callID
// names.
func delegatedTo(t *testing.T, msgs []pipeline.Message, callID string) string {
	t.Helper()
	m := toolResult(t, msgs, callID)
	id := taskIDRe.FindString(m.Content)
	if m.IsError || id == "" {
		t.Fatalf("tool call %s did not delegate: %s", callID, describe(m))
	}
	return id
}

// reportInputs returns the merged report inputs of a history.
func reportInputs(msgs []pipeline.Message) []pipeline.Message {
	var out []pipeline.Message
	for _, m := range msgs {
		if m.Role == pipeline.RoleUser && strings.HasPrefix(m.Content, reminderHead) {
			out = append(out, m)
		}
	}
	return out
}

// lastAssistant returns the content of the last assistant message.
func lastAssistant(msgs []pipeline.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == pipeline.RoleAssistant {
			return msgs[i].Content
		}
	}
	return ""
}

// mustTasks returns the open tasks.
func mustTasks(t *testing.T, rt *runtime.Runtime, agent, key string) []runtime.Task {
	t.Helper()
	ts, err := rt.Tasks(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("Tasks(%q, %q): %v", agent, key, err)
	}
	return ts
}

// waitNoTasks waits until every task is deleted.
func waitNoTasks(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	waitUntil(t, "every task is deleted", func() bool { return len(mustTasks(t, rt, "", "")) == 0 })
}

// taskOf returns the only open task of agent, failing the test if there
// is not exactly one.
func taskOf(t *testing.T, rt *runtime.Runtime, agent string) runtime.Task {
	t.Helper()
	ts := mustTasks(t, rt, agent, "")
	if len(ts) != 1 {
		t.Fatalf("tasks of %s = %+v, want one", agent, ts)
	}
	return ts[0]
}

// eventLog collects the events of the topics it watches.
type eventLog struct {
	mu  sync.Mutex
	evs []events.Event
}

func watchEvents(bus *events.Bus, patterns ...string) *eventLog {
	l := &eventLog{}
	for _, p := range patterns {
		bus.Subscribe(p, func(ev events.Event) {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
		})
	}
	return l
}

func (l *eventLog) get(topic string) []events.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []events.Event
	for _, ev := range l.evs {
		if ev.Topic == topic {
			out = append(out, ev)
		}
	}
	return out
}

// evData returns an event's payload as the JSON object that --json output
// and WebAssembly subscribers read, with whole numbers as int, so that the
// tests check the names on the wire.
func evData(ev events.Event) map[string]any {
	b, err := json.Marshal(ev.Data)
	if err != nil {
		panic(fmt.Sprintf("%s event data %T does not encode: %v", ev.Topic, ev.Data, err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(fmt.Sprintf("%s event data %s is not an object: %v", ev.Topic, b, err))
	}
	return wholeNumbers(m).(map[string]any)
}

// wholeNumbers turns the json.Numbers under v into int where whole, else
// float64.
func wholeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = wholeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = wholeNumbers(e)
		}
	}
	return v
}

// gateModel is a model that holds the requests of the agents it gates
// until their gate opens (or the request's context ends, which the runtime's
// Close does to background task turns), then hands them to p.
type gateModel struct {
	p     model.Provider
	mu    sync.Mutex
	gates map[string]*modelGate
}

// modelGate holds one agent's requests whose input matches match (nil:
// all).
type modelGate struct {
	match   *regexp.Regexp
	started chan string // the turn ID of each request held
	release chan struct{}
	once    sync.Once
}

func newGateModel(p model.Provider) *gateModel {
	return &gateModel{p: p, gates: map[string]*modelGate{}}
}

// hold gates agent's requests whose input matches match ("" for all).
func (g *gateModel) hold(agent, match string) *modelGate {
	mg := &modelGate{started: make(chan string, 64), release: make(chan struct{})}
	if match != "" {
		mg.match = regexp.MustCompile(match)
	}
	g.mu.Lock()
	g.gates[agent] = mg
	g.mu.Unlock()
	return mg
}

// open lets the held requests and every later one through.
func (mg *modelGate) open() { mg.once.Do(func() { close(mg.release) }) }

// waitStarted waits until a request is held and returns its turn ID.
func (mg *modelGate) waitStarted(t *testing.T, what string) string {
	t.Helper()
	select {
	case id := <-mg.started:
		return id
	case <-time.After(askTimeout):
		t.Fatalf("%s never reached the model; goroutines:\n%s", what, strings.Join(stacks(), "\n\n"))
	}
	return ""
}

func (g *gateModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	g.mu.Lock()
	mg := g.gates[req.Agent]
	g.mu.Unlock()
	if mg != nil && (mg.match == nil || mg.match.MatchString(lastUserInput(req))) {
		select {
		case <-mg.release:
		default:
			mg.started <- req.TurnID
			select {
			case <-mg.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return g.p.Stream(ctx, req)
}

// lastUserInput is the content of a request's last user message.
func lastUserInput(req *model.Request) string {
	for i := req.Messages.Len() - 1; i >= 0; i-- {
		if m := req.Messages.At(i); m.Role == pipeline.RoleUser {
			return m.Content
		}
	}
	return ""
}

// newGatedHarness is newHarness with a gateModel in front of the recorder.
func newGatedHarness(t *testing.T, cfg, script string, opts ...runtime.Option) (*harness, *gateModel) {
	t.Helper()
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	rec := &recorder{p: sc}
	gm := newGateModel(rec)
	h := newHarness(t, cfg, script, append([]runtime.Option{runtime.WithModel(gm)}, opts...)...)
	h.rec = rec
	return h, gm
}

// turnsOf returns the turn IDs of agent's model calls whose input contains
// sub, each once, in order.
func (r *recorder) turnsOf(agent, key, sub string) []string {
	var out []string
	for _, s := range r.requests() {
		if s.Agent != agent || (key != "" && s.Instance != key) {
			continue
		}
		in := ""
		for i := len(s.Messages) - 1; i >= 0; i-- {
			if s.Messages[i].Role == pipeline.RoleUser {
				in = s.Messages[i].Content
				break
			}
		}
		if strings.Contains(in, sub) && !slices.Contains(out, s.TurnID) {
			out = append(out, s.TurnID)
		}
	}
	return out
}

const singleConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
    description: writes the code
`

const singleScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "The parser is written."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}]
        - text: "Delegated; waiting for the coder."
  coder: {fallback: {steps: [{text: "parser written"}]}}
`

// oneCallScript is a script where agent's turn makes one tool call (id c1) and
// then says "ok".
func oneCallScript(agent, tool, args string) string {
	return `
agents:
  ` + agent + `:
    fallback:
      steps:
        - tool_calls: [{name: ` + tool + `, id: c1, arguments: '` + args + `'}]
        - text: "ok"
`
}

// checkRefused sends agent a turn whose one tool call must fail with want.
func checkRefused(t *testing.T, h *harness, agent, want string) {
	t.Helper()
	res := h.mustSend(agent, "k", "go")
	if res.FinishReason != pipeline.FinishText || res.TaskID != "" {
		t.Errorf("turn = %s, task %q; want text without a task", res.FinishReason, res.TaskID)
	}
	m := toolResult(t, mustHistory(t, h.rt, agent, "k"), "c1")
	if !m.IsError || m.Content != want {
		t.Errorf("tool result (error %v):\n got %s\nwant %s", m.IsError, m.Content, want)
	}
	if ts := mustTasks(t, h.rt, "", ""); len(ts) != 0 {
		t.Errorf("a refused delegation made tasks: %+v", ts)
	}
}

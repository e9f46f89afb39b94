package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
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

func TestDelegationFanOutSmoke(t *testing.T) {
	h := newHarness(t, fanOutConfig, fanOutScript)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Response, "parser written") || !strings.Contains(rep.Response, "all tests pass") {
		t.Errorf("response = %q", rep.Response)
	}
}

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

// evData returns an event's payload.
func evData(ev events.Event) map[string]any {
	m, _ := ev.Data.(map[string]any)
	return m
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

// The tests.

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

// TestDelegationSingle: lead → coder. The delegating turn ends delegated,
// the child gets the caller's metadata, the report restores the lead's
// context, and Ask returns the lead's final answer.
func TestDelegationSingle(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, singleConfig, singleScript)
	log := watchEvents(h.rt.Events(), "task.*")

	// Send shows the delegating turn's own result.
	res := h.mustSend("lead", "s", "build a parser")
	if res.FinishReason != pipeline.FinishDelegated || !regexp.MustCompile(`^task_[0-9a-f]{12}$`).MatchString(res.TaskID) ||
		res.Response.Content != "Delegated; waiting for the coder." || res.TurnID != "turn-1" || res.Steps != 2 {
		t.Fatalf("delegating turn = %+v, want finish delegated with a task ID", res)
	}
	waitUntil(t, "the root task answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	waitNoTasks(t, h.rt)
	lead := mustHistory(t, h.rt, "lead", "s")
	child := delegatedTo(t, lead, "d1")
	if child == res.TaskID {
		t.Fatalf("child and root task share ID %s", child)
	}
	if want := "Delegated to coder as task " + child + ". It starts when your turn ends; its report comes back to you as a new message. " +
		"Until then, do not say you have its result."; toolResult(t, lead, "d1").Content != want {
		t.Errorf("call_agent result = %q\nwant %q", toolResult(t, lead, "d1").Content, want)
	}

	// The child's input carries the caller's metadata.
	coder := mustHistory(t, h.rt, "coder", "s")
	if len(coder) != 2 || coder[0].Role != pipeline.RoleUser || coder[0].Content != "write the parser" || coder[1].Content != "parser written" {
		t.Fatalf("coder history:\n%s", strings.Join(describeAll(coder), "\n"))
	}
	if src := coder[0].Source; src.Type != pipeline.SourceAgent || src.Agent != "lead" {
		t.Errorf("child input source = %+v, want agent lead", src)
	}
	md := coder[0].Metadata
	for k, want := range map[string]string{
		"callerAgent": "lead", "callerInstanceKey": "s", "callerTurnId": "turn-1", "callSource": runtime.SourceTool,
		"taskId": child, "parentTaskId": res.TaskID, "taskChain": "[lead/s]",
	} {
		if got := fmt.Sprint(md[k]); got != want {
			t.Errorf("child input metadata %s = %q, want %q (all: %v)", k, got, want, md)
		}
	}

	// The report restores the context, then gives the child's answer.
	reps := reportInputs(lead)
	if len(reps) != 1 {
		t.Fatalf("%d reports in the lead's history, want 1:\n%s", len(reps), strings.Join(describeAll(lead), "\n"))
	}
	want := wantReminder("user", "build a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", child, "parser written", false)
	if reps[0].Content != want {
		t.Errorf("report:\n%s\nwant:\n%s", reps[0].Content, want)
	}
	if src := reps[0].Source; src.Type != pipeline.SourceAgent || src.Agent != "coder" {
		t.Errorf("report source = %+v, want agent coder", src)
	}
	if got := fmt.Sprint(reps[0].Metadata["taskId"], " ", reps[0].Metadata["callSource"]); got != res.TaskID+" tool" {
		t.Errorf("report metadata = %v", reps[0].Metadata)
	}
	checkLines(t, "lead history", describeAll(lead)[:4], []string{
		"user: build a parser",
		`assistant: +call(d1 call_agent {"agent_id":"coder","message":"write the parser"})`,
		"tool(d1 call_agent): " + toolResult(t, lead, "d1").Content,
		"assistant: Delegated; waiting for the coder.",
	})
	if got := describe(lead[len(lead)-1]); got != "assistant: The parser is written." || len(lead) != 6 {
		t.Errorf("lead history ends with %q (%d messages)", got, len(lead))
	}

	// Events: delegated, the child completed, then the root answered on
	// the api channel (a Send's answer: nobody waits, and that is no
	// failure to deliver).
	if evs := log.get(events.TaskDelegated); len(evs) != 1 || evData(evs[0])["child_task_id"] != child || evData(evs[0])["task_id"] != res.TaskID ||
		evData(evs[0])["to"] != "coder" || evData(evs[0])["root"] != true || evData(evs[0])["pending"] != 1 {
		t.Errorf("task.delegated events = %+v", evs)
	}
	comp := log.get(events.TaskCompleted)
	if len(comp) != 2 || evData(comp[0])["task_id"] != child || evData(comp[0])["parent_task_id"] != res.TaskID || evData(comp[0])["failed"] != false ||
		evData(comp[1])["task_id"] != res.TaskID || evData(comp[1])["response"] != "The parser is written." {
		t.Errorf("task.completed events = %+v", comp)
	}
	ans := log.get(events.TaskAnswered)[0]
	if d := evData(ans); d["task_id"] != res.TaskID || d["channel"] != runtime.ChannelAPI || d["requester"] != "user" ||
		d["response"] != "The parser is written." || d["delivered"] != true || ans.Agent != "lead" || ans.Instance != "s" {
		t.Errorf("task.answered = %+v", ans)
	}

	// Ask waits for the final answer.
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "The parser is written." || !taskIDRe.MatchString(rep.TaskID) || rep.Agent != "lead" || rep.Instance != "k" ||
		rep.Requester != "user" || rep.Channel != runtime.ChannelAPI || !strings.HasPrefix(rep.ReplyTo, "ask_") ||
		rep.Request != "build a parser" || rep.Error != "" {
		t.Errorf("Ask = %+v", rep)
	}
	// The event follows the delivery that ended the Ask.
	waitUntil(t, "the second task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 2 })
	if d := evData(log.get(events.TaskAnswered)[1]); d["delivered"] != true || d["task_id"] != rep.TaskID {
		t.Errorf("second task.answered = %v, want delivered", d)
	}
	waitNoTasks(t, h.rt)
	if _, err := h.rt.Task(ctx, rep.TaskID); !errors.Is(err, runtime.ErrNoTask) ||
		err.Error() != fmt.Sprintf("task %q: no such task (tasks are deleted when they complete)", rep.TaskID) {
		t.Errorf("Task(completed) = %v", err)
	}
}

// TestDelegationAskWithoutDelegation: a turn that does not delegate is
// Ask's answer at once, without a task.
func TestDelegationAskWithoutDelegation(t *testing.T) {
	h := newHarness(t, singleConfig, singleScript)
	rep := mustAsk(t, h.rt, "coder", "k", "write it")
	if rep.Response != "parser written" || rep.TaskID != "" || rep.Agent != "coder" || rep.Request != "write it" {
		t.Errorf("Ask = %+v", rep)
	}
	if ts := mustTasks(t, h.rt, "", ""); len(ts) != 0 {
		t.Errorf("tasks = %+v", ts)
	}
}

// TestDelegationSequential: the lead delegates to the coder, then, in the
// report's turn, to the tester, and answers after the second report.
func TestDelegationSequential(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
`, `
agents:
  lead:
    turns:
      - match: "## tester, task"
        steps: [{text: "Parser written and tested."}]
      - match: "## coder, task"
        steps:
          - tool_calls: [{name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}]
          - text: "Now the tester."
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}]
        - text: "First the coder."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TurnFinished)
	rep := mustAsk(t, h.rt, "lead", "k", "build and test a parser")
	if rep.Response != "Parser written and tested." {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	lead := mustHistory(t, h.rt, "lead", "k")
	c1, c2 := delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2")
	reps := reportInputs(lead)
	if len(reps) != 2 {
		t.Fatalf("%d reports, want 2:\n%s", len(reps), strings.Join(describeAll(lead), "\n"))
	}
	want1 := wantReminder("user", "build and test a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", c1, "parser written", false)
	want2 := wantReminder("user", "build and test a parser", "coder: write the parser", "tester: test the parser") +
		"[Delegation report]\n" + wantSection("tester", c2, "all tests pass", false)
	if reps[0].Content != want1 {
		t.Errorf("first report:\n%s\nwant:\n%s", reps[0].Content, want1)
	}
	if reps[1].Content != want2 {
		t.Errorf("second report:\n%s\nwant:\n%s", reps[1].Content, want2)
	}
	// Both delegations belong to one root task, which Ask answered.
	if fmt.Sprint(reps[0].Metadata["taskId"]) != rep.TaskID || fmt.Sprint(reps[1].Metadata["taskId"]) != rep.TaskID {
		t.Errorf("reports' taskId = %v, %v; want %s", reps[0].Metadata["taskId"], reps[1].Metadata["taskId"], rep.TaskID)
	}
	// turn.finished follows the answer that ended the Ask.
	waitUntil(t, "the lead's third turn.finished", func() bool {
		n := 0
		for _, ev := range log.get(events.TurnFinished) {
			if ev.Agent == "lead" {
				n++
			}
		}
		return n == 3
	})
	var leadTurns []string
	for _, ev := range log.get(events.TurnFinished) {
		if ev.Agent == "lead" {
			leadTurns = append(leadTurns, ev.TurnID+" "+fmt.Sprint(evData(ev)["finish_reason"]))
		}
	}
	checkLines(t, "lead turns", leadTurns, []string{"turn-1 delegated", "turn-2 delegated", "turn-3 " + string(pipeline.FinishText)})
}

// parallelConfig and parallelScript: the lead delegates to three agents in
// one step.
const parallelConfig = `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
  - name: writer
`

const parallelScript = `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "All done."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}
            - {name: call_agent, id: d3, args: {agent_id: writer, message: "document the parser"}}
        - text: "Three delegations out."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
  writer: {fallback: {steps: [{text: "docs written"}]}}
`

// TestDelegationParallelFanIn: children finishing in any order make the
// same merged report, in delegation order, in one report turn.
func TestDelegationParallelFanIn(t *testing.T) {
	wantReport := noIDs(wantReminder("user", "build a parser", "coder: write the parser", "tester: test the parser", "writer: document the parser") +
		"[Merged report of 3 parallel delegations]\n" +
		wantSection("coder", "task_ID", "parser written", false) +
		wantSection("tester", "task_ID", "all tests pass", false) +
		wantSection("writer", "task_ID", "docs written", false))
	for _, order := range [][]string{
		{"coder", "tester", "writer"},
		{"writer", "tester", "coder"},
		{"tester", "writer", "coder"},
		{"writer", "coder", "tester"},
	} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			h, gm := newGatedHarness(t, parallelConfig, parallelScript)
			gates := map[string]*modelGate{}
			for _, a := range order {
				gates[a] = gm.hold(a, "")
			}
			asked := goAsk(h.rt, "lead", "k", "build a parser")
			for _, a := range order {
				gates[a].waitStarted(t, a)
			}
			for i, a := range order {
				gates[a].open()
				waitUntil(t, a+" reported", func() bool { return len(mustTasks(t, h.rt, a, "")) == 0 })
				if i == len(order)-1 {
					break
				}
				root := taskOf(t, h.rt, "lead")
				var from []string
				for _, r := range root.Context.Responses {
					from = append(from, r.FromAgent)
				}
				if root.Pending != len(order)-1-i || root.State != runtime.TaskWaiting || !slices.Equal(from, order[:i+1]) {
					t.Errorf("after %s: root task pending %d, state %s, responses from %v; want %d, waiting, %v",
						a, root.Pending, root.State, from, len(order)-1-i, order[:i+1])
				}
			}
			r := awaitAsk(t, asked)
			if r.err != nil || r.rep.Response != "All done." {
				t.Fatalf("Ask = %+v, %v", r.rep, r.err)
			}
			waitNoTasks(t, h.rt)
			lead := mustHistory(t, h.rt, "lead", "k")
			reps := reportInputs(lead)
			if len(reps) != 1 {
				t.Fatalf("%d reports, want 1", len(reps))
			}
			// The IDs in the report are the delegations', in order.
			ids := taskIDRe.FindAllString(reps[0].Content, -1)
			if want := []string{delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2"), delegatedTo(t, lead, "d3")}; !slices.Equal(ids, want) {
				t.Errorf("task IDs in the report = %v, want %v", ids, want)
			}
			if got := noIDs(reps[0].Content); got != wantReport {
				t.Errorf("report:\n%s\nwant:\n%s", got, wantReport)
			}
			// Close waits for whatever still runs: no second report turn.
			mustClose(t, h.rt)
			if turns := h.rec.turnsOf("lead", "k", "Merged report"); len(turns) != 1 {
				t.Errorf("report turns of the lead = %v, want one", turns)
			}
			if turns := h.rec.turnsOf("lead", "k", ""); len(turns) != 2 {
				t.Errorf("turns of the lead = %v, want two", turns)
			}
		})
	}
}

// TestDelegationRecursiveChain: a → b → c → d, each report going up one
// link; d's answer reaches the root's Ask.
func TestDelegationRecursiveChain(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
    tools: [call_agent]
  - name: d
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A answers: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: ab, args: {agent_id: b, message: "b, find the answer"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: bc, args: {agent_id: c, message: "c, find the answer"}}]
        - text: "asked c"
  c:
    turns:
      - match: "Delegation report"
        steps: [{text: "C relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: cd, args: {agent_id: d, message: "d, find the answer"}}]
        - text: "asked d"
  d: {fallback: {steps: [{text: "D says 42"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskCompleted)
	rep := mustAsk(t, h.rt, "a", "k", "what is the answer?")
	if !strings.HasPrefix(rep.Response, "A answers: "+reminderHead) || !strings.Contains(rep.Response, "D says 42") ||
		!strings.Contains(rep.Response, "B relays: ") || !strings.Contains(rep.Response, "C relays: ") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	// Link by link: each report holds the answer of the agent below.
	for _, l := range []struct{ agent, below, answer, request string }{
		{"c", "d", "D says 42", "c, find the answer"},
		{"b", "c", "C relays: ", "b, find the answer"},
		{"a", "b", "B relays: ", "what is the answer?"},
	} {
		msgs := mustHistory(t, h.rt, l.agent, "k")
		reps := reportInputs(msgs)
		if len(reps) != 1 {
			t.Fatalf("%s: %d reports", l.agent, len(reps))
		}
		requester := "user"
		if l.agent != "a" {
			requester = map[string]string{"b": "a/k", "c": "b/k"}[l.agent]
		}
		head := wantReminder(requester, l.request, l.below+": "+l.below+", find the answer") + "[Delegation report]\n\n## " + l.below + ", task "
		if !strings.HasPrefix(reps[0].Content, head) || !strings.Contains(reps[0].Content, l.answer) || !strings.Contains(reps[0].Content, "D says 42") {
			t.Errorf("%s's report:\n%s\nwant it to start with:\n%s", l.agent, reps[0].Content, head)
		}
	}
	d := mustHistory(t, h.rt, "d", "k")
	if got := fmt.Sprint(d[0].Metadata["taskChain"]); got != "[a/k b/k c/k]" {
		t.Errorf("d's taskChain = %s", got)
	}
	var done []string
	for _, ev := range log.get(events.TaskCompleted) {
		done = append(done, ev.Agent)
	}
	checkLines(t, "completion order", done, []string{"d", "c", "b", "a"})
}

// TestDelegationTasksWhileWaiting: the tasks hold the seed's fields while
// a child works, and are deleted when done.
func TestDelegationTasksWhileWaiting(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	h, gm := newGatedHarness(t, singleConfig, singleScript, runtime.WithClock(func() time.Time { return at }))
	g := gm.hold("coder", "")
	asked := goAsk(h.rt, "lead", "k", "build a parser")
	g.waitStarted(t, "the coder")

	all := mustTasks(t, h.rt, "", "")
	if len(all) != 2 {
		t.Fatalf("tasks = %+v, want two", all)
	}
	root, child := taskOf(t, h.rt, "lead"), taskOf(t, h.rt, "coder")
	if all[0].ID > all[1].ID {
		t.Errorf("tasks not sorted by ID: %s, %s", all[0].ID, all[1].ID)
	}
	if !strings.HasPrefix(root.ReplyTo, "ask_") {
		t.Errorf("root reply-to = %q", root.ReplyTo)
	}
	wantRoot := runtime.Task{ID: root.ID, Agent: "lead", Instance: "k", Requester: "user", Channel: runtime.ChannelAPI, ReplyTo: root.ReplyTo,
		OriginalRequest: "build a parser", State: runtime.TaskWaiting, Pending: 1, Chain: []string{}, CreatedAt: at,
		Context: runtime.DelegationContext{OriginalRequest: "build a parser", Requester: "user",
			Delegations: []runtime.Delegation{{ChildTaskID: child.ID, CallID: "d1", DelegatedTo: "coder", Instance: "k", Message: "write the parser", Time: at}}}}
	if len(root.Chain) == 0 {
		root.Chain = []string{}
	}
	if !reflect.DeepEqual(root, wantRoot) {
		t.Errorf("root task:\n got %+v\nwant %+v", root, wantRoot)
	}
	wantChild := runtime.Task{ID: child.ID, Agent: "coder", Instance: "k", Requester: "lead/k", Channel: runtime.ChannelAgent,
		OriginalRequest: "write the parser", ParentID: root.ID, CallerTurn: "turn-1", State: runtime.TaskQueued, Chain: []string{"lead/k"}, CreatedAt: at,
		Context: runtime.DelegationContext{OriginalRequest: "write the parser", Requester: "lead/k"}}
	if !reflect.DeepEqual(child, wantChild) {
		t.Errorf("child task:\n got %+v\nwant %+v", child, wantChild)
	}
	// The stored form uses the seed's field names.
	for _, tk := range []runtime.Task{root, child} {
		b, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := []string{"task_id", "requester", "requester_channel", "original_request", "delegated_to", "delegation_context", "pending_delegations", "state"}
		if tk.ParentID != "" {
			keys = append(keys, "parent_task_id")
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("task %s as JSON lacks %q: %s", tk.ID, k, b)
			}
		}
	}
	if b, _ := json.Marshal(root.Context); !strings.Contains(string(b), `"delegations":[{"child_task_id":"`+child.ID+`","call_id":"d1","delegated_to":"coder","instance":"k","delegation_message":"write the parser","delegation_time":"2026-03-04T05:06:07Z"}]`) {
		t.Errorf("delegation context as JSON: %s", b)
	}
	// Filters, and one task by ID.
	for _, f := range []struct {
		agent, key string
		want       int
	}{{"lead", "k", 1}, {"lead", "", 1}, {"coder", "k", 1}, {"lead", "other", 0}, {"tester", "", 0}, {"", "k", 2}} {
		if got := len(mustTasks(t, h.rt, f.agent, f.key)); got != f.want {
			t.Errorf("Tasks(%q, %q) = %d tasks, want %d", f.agent, f.key, got, f.want)
		}
	}
	if got, err := h.rt.Task(ctx, child.ID); err != nil || !reflect.DeepEqual(got, wantChild) {
		t.Errorf("Task(%s) = %+v, %v", child.ID, got, err)
	}
	if _, err := h.rt.Task(ctx, "task_000000000000"); !errors.Is(err, runtime.ErrNoTask) ||
		err.Error() != `task "task_000000000000": no such task (tasks are deleted when they complete)` {
		t.Errorf("Task(unknown) = %v", err)
	}

	g.open()
	if r := awaitAsk(t, asked); r.err != nil || r.rep.Response != "The parser is written." || r.rep.TaskID != root.ID {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
	for _, id := range []string{root.ID, child.ID} {
		if _, err := h.rt.Task(ctx, id); !errors.Is(err, runtime.ErrNoTask) {
			t.Errorf("Task(%s) after completion: %v", id, err)
		}
	}
}

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

// TestDelegationRules: the calls call_agent refuses, with the reason the
// model reads.
func TestDelegationRules(t *testing.T) {
	const cfg = `
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
  - name: tester
`
	tests := []struct{ name, args, want string }{
		{"self", `{"agent_id":"lead","message":"do it"}`,
			`tool "call_agent" failed: you cannot delegate to yourself (lead): do the task yourself, or delegate to another agent`},
		{"unknown agent", `{"agent_id":"ghost","message":"do it"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: coder, tester`},
		{"empty agent", `{"agent_id":"","message":"do it"}`,
			`tool "call_agent" failed: no agent ""; you may delegate to: coder, tester`},
		{"empty message", `{"agent_id":"coder","message":""}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"blank message", `{"agent_id":"coder","message":" \n\t "}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"empty message to oneself", `{"agent_id":"lead","message":""}`,
			`tool "call_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"no message", `{"agent_id":"coder"}`,
			`tool "call_agent": arguments do not match the schema: (root): missing property 'message'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg, oneCallScript("lead", "call_agent", tt.args))
			checkRefused(t, h, "lead", tt.want)
		})
	}
	t.Run("one refused, one delegated", func(t *testing.T) {
		h := newHarness(t, cfg, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "done: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: bad, args: {agent_id: lead, message: "x"}}
            - {name: call_agent, id: good, args: {agent_id: tester, message: "test it"}}
        - text: "waiting"
  tester: {fallback: {steps: [{text: "tested"}]}}
`)
		rep := mustAsk(t, h.rt, "lead", "k", "go")
		msgs := mustHistory(t, h.rt, "lead", "k")
		if m := toolResult(t, msgs, "bad"); !m.IsError {
			t.Errorf("bad call = %s", describe(m))
		}
		if m := toolResult(t, msgs, "good"); m.IsError || !strings.HasPrefix(m.Content, "Delegated to tester as task ") {
			t.Errorf("good call = %s", describe(m))
		}
		if !strings.Contains(rep.Response, wantReminder("user", "go", "tester: test it")+"[Delegation report]\n") {
			t.Errorf("Ask = %q", rep.Response)
		}
	})
}

// TestDelegationToolsOffered: call_agent is offered only to an agent with
// someone to delegate to, call_team_agent only to a system-level agent
// when there are teams.
func TestDelegationToolsOffered(t *testing.T) {
	tests := []struct {
		name, cfg, agent string
		want             []string
	}{
		{"single agent", `
agents:
  - name: solo
    tools: [call_agent, call_team_agent, get_my_tools]
`, "solo", []string{"get_my_tools"}},
		{"two agents", `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
  - name: other
`, "solo", []string{"call_agent", "get_my_tools"}},
		{"no teams", `
agents:
  - name: solo
    tools: [call_team_agent, call_agent]
  - name: other
`, "solo", []string{"call_agent"}},
		{"alone in its team", `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
  - name: other
teams:
  - {name: t, agents: [solo]}
`, "solo", []string{"get_my_tools"}},
		{"the only system-level agent", `
agents:
  - name: solo
    tools: [call_agent, call_team_agent]
  - name: other
teams:
  - {name: t, agents: [other]}
`, "solo", []string{"call_team_agent"}},
		{"system-level with peers and teams", `
agents:
  - name: solo
    tools: [call_team_agent, call_agent]
  - name: peer
  - name: other
teams:
  - {name: t, agents: [other]}
`, "solo", []string{"call_team_agent", "call_agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg, `
agents:
  solo: {fallback: {steps: [{text: "ok"}]}}
`)
			h.mustSend(tt.agent, "k", "hi")
			reqs := h.rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls, want 1", len(reqs))
			}
			if !slices.Equal(reqs[0].Tools, tt.want) {
				t.Errorf("tools offered = %v, want %v", reqs[0].Tools, tt.want)
			}
		})
	}
	t.Run("get_my_tools", func(t *testing.T) {
		h := newHarness(t, `
agents:
  - name: solo
    tools: [call_agent, get_my_tools]
`, oneCallScript("solo", "get_my_tools", `{}`))
		h.mustSend("solo", "k", "hi")
		got := toolResult(t, mustHistory(t, h.rt, "solo", "k"), "c1").Content
		if strings.Contains(got, "call_agent") || !strings.Contains(got, `"name":"get_my_tools"`) {
			t.Errorf("get_my_tools = %s", got)
		}
	})
}

// TestDelegationDepthLimit: with a depth of 2, the third link of a → b →
// c → d is refused, and c does the task itself.
func TestDelegationDepthLimit(t *testing.T) {
	cfg := `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
    tools: [call_agent]
  - name: d
`
	script := `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: ab, args: {agent_id: b, message: "go deeper"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: bc, args: {agent_id: c, message: "go deeper"}}]
        - text: "asked c"
  c:
    turns:
      - match: "Delegation report"
        steps: [{text: "C: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: cd, args: {agent_id: d, message: "go deeper"}}]
        - text: "C did it myself"
  d: {fallback: {steps: [{text: "D did it"}]}}
`
	h := newHarness(t, cfg, script, runtime.WithAgentDepth(2))
	rep := mustAsk(t, h.rt, "a", "k", "dig")
	if !strings.Contains(rep.Response, "C did it myself") || strings.Contains(rep.Response, "D did it") {
		t.Errorf("Ask = %q", rep.Response)
	}
	m := toolResult(t, mustHistory(t, h.rt, "c", "k"), "cd")
	if want := `tool "call_agent" failed: agent call chain too deep: a/k → b/k → c/k → d/k is deeper than 2; do the task yourself`; !m.IsError || m.Content != want {
		t.Errorf("c's call_agent = %s\nwant %s", describe(m), want)
	}
	if turns := h.rec.turnsOf("d", "", ""); len(turns) != 0 {
		t.Errorf("d ran: %v", turns)
	}
	waitNoTasks(t, h.rt)

	// With the default depth, the same chain goes all the way.
	h = newHarness(t, cfg, script)
	if rep := mustAsk(t, h.rt, "a", "k", "dig"); !strings.Contains(rep.Response, "D did it") || strings.Contains(rep.Response, "C did it myself") {
		t.Errorf("Ask with the default depth = %q", rep.Response)
	}
}

// charPattern returns n characters, cycling through chars.
func charPattern(n int, chars string) string {
	rs := []rune(chars)
	var b strings.Builder
	for i := range n {
		b.WriteRune(rs[i%len(rs)])
	}
	return b.String()
}

// TestDelegationLongReport: a response over 2000 characters is saved to a
// file, and the report gives its path and first 500 characters.
func TestDelegationLongReport(t *testing.T) {
	const ascii = "0123456789abcdefghijklmnopqrstuvwxyz "
	const wide = "éà€𝄞x" // 2-, 3- and 4-byte characters: the limit counts characters
	tests := []struct {
		name     string
		response string
		file     bool
		outputs  string // "": WithOutputsDir(t.TempDir()); else the config's outputs
	}{
		{"2000 characters whole", charPattern(2000, ascii), false, ""},
		{"2001 characters to a file", charPattern(2001, ascii), true, ""},
		{"2000 wide characters whole", charPattern(2000, wide), false, ""},
		{"2001 wide characters to a file", charPattern(2001, wide), true, ""},
		{"5000 characters to a file", charPattern(5000, ascii), true, ""},
		{"outputs from the config", charPattern(3000, ascii), true, "out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := `
agents:
  - name: lead
    tools: [call_agent]
  - name: writer
`
			var opts []runtime.Option
			dir := t.TempDir()
			if tt.outputs == "" {
				opts = append(opts, runtime.WithOutputsDir(dir))
			} else {
				cfg = "outputs: " + tt.outputs + "\n" + cfg
			}
			h := newHarness(t, cfg, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Got it."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: writer, message: "write a lot"}}]
        - text: "waiting"
  writer: {fallback: {steps: [{text: `+strconv.Quote(tt.response)+`}]}}
`, opts...)
			if tt.outputs != "" {
				dir = filepath.Join(h.dir, tt.outputs)
			}
			if rep := mustAsk(t, h.rt, "lead", "k", "write"); rep.Response != "Got it." {
				t.Errorf("Ask = %q", rep.Response)
			}
			lead := mustHistory(t, h.rt, "lead", "k")
			child := delegatedTo(t, lead, "d1")
			reps := reportInputs(lead)
			if len(reps) != 1 {
				t.Fatalf("%d reports", len(reps))
			}
			path := filepath.Join(dir, "result_"+child+".txt")
			wantResp := tt.response
			if tt.file {
				wantResp = "[Task complete] Full result: " + path + "\n\nSummary:\n" + string([]rune(tt.response)[:500]) + "..."
			}
			want := wantReminder("user", "write", "writer: write a lot") + "[Delegation report]\n" + wantSection("writer", child, wantResp, false)
			if reps[0].Content != want {
				t.Errorf("report:\n%q\nwant:\n%q", reps[0].Content, want)
			}
			got, err := os.ReadFile(path)
			switch {
			case !tt.file && !errors.Is(err, os.ErrNotExist):
				t.Errorf("a response reported whole was saved too: %v", err)
			case tt.file && err != nil:
				t.Errorf("the long response is not saved: %v", err)
			case tt.file && string(got) != tt.response:
				t.Errorf("the file holds %d bytes, want the %d of the response", len(got), len(tt.response))
			}
			if tt.file && !filepath.IsAbs(path) {
				t.Errorf("path %s is not absolute", path)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(leftovers) != 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// The teams of the team tests.
const teamConfig = `
agents:
  - name: boss
    tools: [call_agent, call_team_agent, list_agents]
  - name: helper
    description: helps the boss
    tools: [call_agent, list_agents]
  - name: dev
    description: develops
    tools: [call_agent, list_agents]
  - name: qa
    description: checks
    tools: [call_agent]
  - name: ops
    tools: [call_agent]
teams:
  - name: web
    description: builds the web app
    agents: [dev, qa]
  - name: infra
    agents: [ops]
`

// TestTeamDelegation: a system-level agent delegates into a team, whose
// agent delegates within it; a team agent cannot delegate up.
func TestTeamDelegation(t *testing.T) {
	h := newHarness(t, teamConfig, `
agents:
  boss:
    turns:
      - match: "Delegation report"
        steps: [{text: "Boss: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_team_agent, id: t1, args: {team: web, agent_id: dev, message: "build the site"}}]
        - text: "the web team is on it"
  dev:
    turns:
      - match: "Delegation report"
        steps: [{text: "site built, and qa says: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: up, args: {agent_id: boss, message: "help me"}}
            - {name: call_agent, id: side, args: {agent_id: helper, message: "help me"}}
            - {name: call_agent, id: other, args: {agent_id: ops, message: "deploy"}}
            - {name: call_agent, id: in, args: {agent_id: qa, message: "check the site"}}
        - text: "qa is on it"
  qa: {fallback: {steps: [{text: "the site checks out"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TeamActivated)
	rep := mustAsk(t, h.rt, "boss", "k", "make a website")
	if !strings.HasPrefix(rep.Response, "Boss: "+wantReminder("user", "make a website", "dev: build the site")) ||
		!strings.Contains(rep.Response, "site built, and qa says: ") || !strings.Contains(rep.Response, "the site checks out") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
	dev := mustHistory(t, h.rt, "dev", "k")
	for id, want := range map[string]string{
		"up":    `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
		"side":  `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
		"other": `tool "call_agent" failed: you are in team "web" and may delegate only within it, to: qa`,
	} {
		if m := toolResult(t, dev, id); !m.IsError || m.Content != want {
			t.Errorf("dev's call %s = %s\nwant %s", id, describe(m), want)
		}
	}
	qaTask := delegatedTo(t, dev, "in")
	if got := reportInputs(dev); len(got) != 1 || got[0].Content != wantReminder("boss/k", "build the site", "qa: check the site")+"[Delegation report]\n"+
		wantSection("qa", qaTask, "the site checks out", false) {
		t.Errorf("dev's report = %+v", got)
	}
	if got := fmt.Sprint(dev[0].Metadata["team"], " ", dev[0].Metadata["callerAgent"]); got != "web boss" {
		t.Errorf("dev's input metadata = %v", dev[0].Metadata)
	}
	if qa := mustHistory(t, h.rt, "qa", "k"); qa[0].Metadata["team"] != nil || fmt.Sprint(qa[0].Metadata["taskChain"]) != "[boss/k dev/k]" {
		t.Errorf("qa's input metadata = %v", qa[0].Metadata)
	}
	for _, a := range []string{"helper", "boss"} {
		if turns := h.rec.turnsOf(a, "", "help me"); len(turns) != 0 {
			t.Errorf("%s ran a refused delegation: %v", a, turns)
		}
	}
	evs := log.get(events.TeamActivated)
	if len(evs) != 1 || evs[0].Instance != "k" || evData(evs[0])["team"] != "web" || fmt.Sprint(evData(evs[0])["agents"]) != "[dev qa]" {
		t.Errorf("team.activated = %+v", evs)
	}
	// The whole team started: qa's instance exists; ops' team did not.
	if keys, _ := h.rt.Instances(context.Background(), "ops"); len(keys) != 0 {
		t.Errorf("ops instances = %v", keys)
	}
}

// TestTeamRules: what call_agent and call_team_agent refuse around teams.
func TestTeamRules(t *testing.T) {
	tests := []struct{ name, agent, tool, args, want string }{
		{"system agent call_agent into a team", "boss", "call_agent", `{"agent_id":"dev","message":"x"}`,
			`tool "call_agent" failed: agent "dev" is in team "web": use call_team_agent with team "web"`},
		{"system agent without call_team_agent", "helper", "call_agent", `{"agent_id":"qa","message":"x"}`,
			`tool "call_agent" failed: agent "qa" is in team "web": use call_team_agent with team "web"`},
		{"unknown agent lists teams", "boss", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: helper, team web (dev, qa), team infra (ops)`},
		{"unknown agent without call_team_agent", "helper", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: boss`},
		{"team agent up", "qa", "call_agent", `{"agent_id":"boss","message":"x"}`,
			`tool "call_agent" failed: you are in team "web" and may delegate only within it, to: dev`},
		{"team agent into another team", "qa", "call_agent", `{"agent_id":"ops","message":"x"}`,
			`tool "call_agent" failed: you are in team "web" and may delegate only within it, to: dev`},
		{"team agent unknown", "qa", "call_agent", `{"agent_id":"ghost","message":"x"}`,
			`tool "call_agent" failed: no agent "ghost"; you may delegate to: dev`},
		{"team agent to itself", "qa", "call_agent", `{"agent_id":"qa","message":"x"}`,
			`tool "call_agent" failed: you cannot delegate to yourself (qa): do the task yourself, or delegate to another agent`},
		{"unknown team", "boss", "call_team_agent", `{"team":"nope","agent_id":"dev","message":"x"}`,
			`tool "call_team_agent" failed: no team "nope" (teams: web, infra)`},
		{"empty team", "boss", "call_team_agent", `{"team":"","agent_id":"dev","message":"x"}`,
			`tool "call_team_agent" failed: team is empty: name a team that list_agents shows`},
		{"agent not in the team", "boss", "call_team_agent", `{"team":"web","agent_id":"ops","message":"x"}`,
			`tool "call_team_agent" failed: team "web" has no agent "ops" (its agents: dev, qa)`},
		{"system agent through call_team_agent", "boss", "call_team_agent", `{"team":"web","agent_id":"helper","message":"x"}`,
			`tool "call_team_agent" failed: team "web" has no agent "helper" (its agents: dev, qa)`},
		{"unknown agent in a team", "boss", "call_team_agent", `{"team":"web","agent_id":"ghost","message":"x"}`,
			`tool "call_team_agent" failed: no agent "ghost"; you may delegate to: helper, team web (dev, qa), team infra (ops)`},
		{"empty message", "boss", "call_team_agent", `{"team":"web","agent_id":"dev","message":""}`,
			`tool "call_team_agent" failed: message is empty: say what the agent is to do, with everything it needs`},
		{"itself through a team", "boss", "call_team_agent", `{"team":"web","agent_id":"boss","message":"x"}`,
			`tool "call_team_agent" failed: you cannot delegate to yourself (boss): do the task yourself, or delegate to another agent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, teamConfig, oneCallScript(tt.agent, tt.tool, tt.args))
			checkRefused(t, h, tt.agent, tt.want)
		})
	}
}

// TestTeamConfigRefusesCallTeamAgent: a team's agent may not list
// call_team_agent.
func TestTeamConfigRefusesCallTeamAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := parseConfig(t, dir, modelLine+`
agents:
  - name: boss
    tools: [call_team_agent]
  - name: dev
    tools: [call_agent, call_team_agent]
teams:
  - name: web
    agents: [dev]
`)
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(&recorder{}))
	if err == nil {
		rt.Close()
		t.Fatal("New accepted a team agent with call_team_agent")
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("New: %v, want a config error", err)
	}
	const msg = `agent "dev": call_team_agent is for agents in no team; "dev" is in team "web", and a team's agents cannot delegate up or into another team`
	if ce.Msg != msg || ce.Path != "$.agents[1].tools[1]" || ce.Line != 7 {
		t.Errorf("config error = %s at %s line %d\nwant %s at $.agents[1].tools[1] line 7", ce.Msg, ce.Path, ce.Line, msg)
	}
	if first, _, _ := strings.Cut(err.Error(), "\n"); first != filepath.Join(dir, "ganglion.yaml")+":7:25: "+msg {
		t.Errorf("err = %s", first)
	}
}

// TestTeamListAgents: list_agents shows a system-level agent its peers and
// the teams, a team agent its teammates only.
func TestTeamListAgents(t *testing.T) {
	tests := []struct{ agent, want string }{
		{"boss", `{"agents":[{"name":"helper","description":"helps the boss"}],"teams":[` +
			`{"team":"web","description":"builds the web app","agents":[{"name":"dev","description":"develops"},{"name":"qa","description":"checks"}]},` +
			`{"team":"infra","agents":[{"name":"ops"}]}]}`},
		{"helper", `{"agents":[{"name":"boss"}]}`},
		{"dev", `{"agents":[{"name":"qa","description":"checks"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			h := newHarness(t, teamConfig, oneCallScript(tt.agent, "list_agents", `{}`))
			h.mustSend(tt.agent, "k", "who?")
			if got := toolResult(t, mustHistory(t, h.rt, tt.agent, "k"), "c1"); got.IsError || got.Content != tt.want {
				t.Errorf("list_agents = %s\nwant %s", got.Content, tt.want)
			}
		})
	}
}

// TestDelegationChildFails: a child whose turn fails reports the failure;
// the parent still answers.
func TestDelegationChildFails(t *testing.T) {
	h := newHarness(t, fanOutConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Partly done."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, id: d2, args: {agent_id: tester, message: "test the parser"}}
        - text: "waiting"
  coder: {fallback: {steps: [{error: "boom"}]}}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskCompleted)
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "Partly done." || rep.Error != "" {
		t.Errorf("Ask = %+v", rep)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	c1, c2 := delegatedTo(t, lead, "d1"), delegatedTo(t, lead, "d2")
	want := wantReminder("user", "build a parser", "coder: write the parser", "tester: test the parser") +
		"[Merged report of 2 parallel delegations]\n" +
		wantSection("coder", c1, `Task failed: agent coder could not finish it: agent "coder" instance "k" turn-1: model: boom`, true) +
		wantSection("tester", c2, "all tests pass", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
	var failed []string
	for _, ev := range log.get(events.TaskCompleted) {
		failed = append(failed, fmt.Sprint(ev.Agent, " ", evData(ev)["failed"]))
	}
	slices.Sort(failed)
	checkLines(t, "completions", failed, []string{"coder true", "lead false", "tester false"})
	waitNoTasks(t, h.rt)
}

// TestDelegationRootFails: a root task whose report turn fails answers
// Ask with the error.
func TestDelegationRootFails(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{error: "report lost"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	if rep == nil || err == nil {
		t.Fatalf("Ask = %+v, %v; want the task's failure", rep, err)
	}
	wantErr := `agent "lead" instance "k" turn-2: model: report lost`
	if rep.Error != wantErr || rep.Response != "" || err.Error() != "task "+rep.TaskID+": "+wantErr {
		t.Errorf("Ask = %+v, %v", rep, err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if evs := log.get(events.TaskAnswered); len(evs) != 1 || evData(evs[0])["error"] != wantErr {
		t.Errorf("task.answered = %+v", evs)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationAskMaxSteps: a turn that delegates and then runs out of
// steps still delegated: Ask waits for the final answer.
func TestDelegationAskMaxSteps(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    tools: [call_agent]
    max_steps: 1
  - name: coder
`, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "The parser is written."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	res := h.mustSend("lead", "s", "build a parser")
	if res.TaskID == "" {
		t.Fatalf("the turn delegated without a task: %+v", res)
	}
	waitNoTasks(t, h.rt)
	rep := mustAsk(t, h.rt, "lead", "k", "build a parser")
	if rep.Response != "The parser is written." || rep.TaskID == "" {
		t.Fatalf("Ask returned before the delegation reported (the delegating turn ended %s): %+v", res.FinishReason, rep)
	}
}

// TestDelegationAskCancelled: Ask gives up; the task goes on and its
// answer is published.
func TestDelegationAskCancelled(t *testing.T) {
	h, gm := newGatedHarness(t, singleConfig, singleScript)
	g := gm.hold("coder", "")
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select { // not waitStarted: t.Fatal must not run outside the test's goroutine
		case <-g.started:
		case <-time.After(askTimeout):
		}
		cancel()
	}()
	rep, err := h.rt.Ask(ctx, "lead", "k", "build a parser")
	root := taskOf(t, h.rt, "lead")
	if rep != nil || !errors.Is(err, context.Canceled) ||
		err.Error() != fmt.Sprintf(`agent "lead" instance "k": waiting for task %s: context canceled`, root.ID) {
		t.Fatalf("Ask = %+v, %v", rep, err)
	}
	g.open()
	waitUntil(t, "the task answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if d := evData(log.get(events.TaskAnswered)[0]); d["delivered"] != false || d["response"] != "The parser is written." || d["task_id"] != root.ID {
		t.Errorf("task.answered = %v", d)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationChannels: a root task answers on the channel its input
// names.
func TestDelegationChannels(t *testing.T) {
	ctx := context.Background()
	got := make(chan runtime.Report, 1)
	h := newHarness(t, singleConfig, singleScript, runtime.WithChannel("chat", runtime.ChannelFunc(func(_ context.Context, r runtime.Report) error {
		got <- r
		return nil
	})))
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	in := runtime.UserMessage("build a parser")
	in.Metadata = map[string]any{"channel": "chat", "replyTo": "room-7", "requester": "alice"}
	res, err := h.rt.Send(ctx, "lead", "k", in)
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	select {
	case r := <-got:
		if r.TaskID != res.TaskID || r.Channel != "chat" || r.ReplyTo != "room-7" || r.Requester != "alice" || r.Request != "build a parser" ||
			r.Response != "The parser is written." || r.Agent != "lead" || r.Instance != "k" || r.Error != "" {
			t.Errorf("delivered report = %+v", r)
		}
	case <-time.After(askTimeout):
		t.Fatal("the chat channel got no report")
	}
	if reps := reportInputs(mustHistory(t, h.rt, "lead", "k")); len(reps) != 1 || !strings.HasPrefix(reps[0].Content, wantReminder("alice", "build a parser", "coder: write the parser")) {
		t.Errorf("report = %+v", reps)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	if d := evData(log.get(events.TaskAnswered)[0]); d["delivered"] != true || d["channel"] != "chat" {
		t.Errorf("task.answered = %v", d)
	}

	// A channel nobody registered: the answer is only published.
	in.Metadata = map[string]any{"channel": "pager"}
	if _, err := h.rt.Send(ctx, "lead", "k2", in); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 2 })
	if d := evData(log.get(events.TaskAnswered)[1]); d["delivered"] != false || d["channel"] != "pager" || d["response"] != "The parser is written." {
		t.Errorf("task.answered = %v", d)
	}

	// The runtime's own channel names are refused.
	for _, name := range []string{runtime.ChannelAPI, runtime.ChannelAgent} {
		dir := t.TempDir()
		_, err := runtime.New(ctx, runtime.WithConfig(parseConfig(t, dir, modelLine+singleConfig)), runtime.WithMemoryStore(),
			runtime.WithModel(&recorder{}), runtime.WithChannel(name, runtime.ChannelFunc(func(context.Context, runtime.Report) error { return nil })))
		checkErr(t, err, fmt.Sprintf("runtime: channel %q is the runtime's own; name yours otherwise", name))
	}
}

const askerConfig = `
agents:
  - name: lead
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: asker
    extensions: [{name: protocol}]
`

// TestDelegationPausedChild: a child that asks the human reports only
// once the human answered.
func TestDelegationPausedChild(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, askerConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: asker, message: "find out the age"}}]
        - text: "waiting"
  asker:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old?
              default: 30
              required: true
              [/USER_QUESTION]
      - steps:
          - text: "Got {{ .LastMessage }}"
`, runtime.WithoutExpiryTimer())
	asked := goAsk(h.rt, "lead", "k", "how old is the user?")
	var items []ledger.Item
	waitUntil(t, "the asker asks", func() bool {
		items, _ = h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
		return len(items) == 1
	})
	waitUntil(t, "the asker's task is paused", func() bool {
		ts := mustTasks(t, h.rt, "asker", "k")
		return len(ts) == 1 && ts[0].State == runtime.TaskPaused
	})
	child := taskOf(t, h.rt, "asker")
	if child.Turn != "turn-1" || items[0].Kind != protocol.ItemQuestion || items[0].TurnID != "turn-1" {
		t.Errorf("paused task = %+v, item = %+v", child, items[0])
	}
	if root := taskOf(t, h.rt, "lead"); root.State != runtime.TaskWaiting || root.Pending != 1 || len(root.Context.Responses) != 0 {
		t.Errorf("root task = %+v", root)
	}
	select {
	case r := <-asked:
		t.Fatalf("Ask returned before the human answered: %+v, %v", r.rep, r.err)
	default:
	}
	if turns := h.rec.turnsOf("lead", "k", ""); len(turns) != 1 {
		t.Errorf("lead turns before the answer = %v, want one", turns)
	}

	res, err := h.rt.Answer(ctx, items[0].ID, "32")
	if err != nil || res.FinishReason != pipeline.FinishText || res.TaskID != child.ID || res.Response.Content != `Got Answer to your question "How old?": 32` {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	r := awaitAsk(t, asked)
	if r.err != nil || !strings.Contains(r.rep.Response, wantSection("asker", child.ID, `Got Answer to your question "How old?": 32`, false)) {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationPausedParent: a parent that delegates and asks the human
// in one turn gets its report after the human answered, whichever comes
// first: the child's report or the answer.
func TestDelegationPausedParent(t *testing.T) {
	const script = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
      - match: "Answer to your question"
        steps: [{text: "Noted the answer."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: asker, message: "do the work"}}]
        - text: |
            While that runs:
            [USER_QUESTION]
            category: clarification
            question: Which colour?
            default: blue
            required: true
            [/USER_QUESTION]
  asker: {fallback: {steps: [{text: "work done"}]}}
`
	for _, childFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("child first %v", childFirst), func(t *testing.T) {
			ctx := context.Background()
			h, gm := newGatedHarness(t, askerConfig, script, runtime.WithoutExpiryTimer())
			g := gm.hold("asker", "")
			log := watchEvents(h.rt.Events(), events.TaskAnswered)
			_, err := h.rt.Ask(ctx, "lead", "k", "paint it")
			if !errors.Is(err, runtime.ErrPaused) || err.Error() != `agent "lead" instance "k" turn-1: paused: answer its pending items (ganglion pending)` {
				t.Fatalf("Ask = %v, want paused", err)
			}
			root := taskOf(t, h.rt, "lead")
			if root.State != runtime.TaskPaused || root.Turn != "turn-1" || root.Pending != 1 {
				t.Errorf("root task = %+v", root)
			}
			items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "lead", Instance: "k", Open: true})
			if err != nil || len(items) != 1 {
				t.Fatalf("pending = %+v, %v", items, err)
			}
			g.waitStarted(t, "the asker")
			if childFirst {
				g.open()
				waitUntil(t, "the child reports", func() bool { return len(mustTasks(t, h.rt, "asker", "")) == 0 })
				root = taskOf(t, h.rt, "lead")
				if root.State != runtime.TaskPaused || root.Pending != 0 || len(root.Context.Responses) != 1 {
					t.Errorf("root task after the report = %+v", root)
				}
				if turns := h.rec.turnsOf("lead", "k", "Delegation report"); len(turns) != 0 {
					t.Errorf("a report turn ran while the lead was paused: %v", turns)
				}
			}
			res, err := h.rt.Answer(ctx, items[0].ID, "red")
			if err != nil || res.FinishReason != pipeline.FinishDelegated || res.TaskID != root.ID || res.Response.Content != "Noted the answer." {
				t.Fatalf("Answer = %+v, %v", res, err)
			}
			if !childFirst {
				if root := taskOf(t, h.rt, "lead"); root.State != runtime.TaskWaiting || root.Pending != 1 {
					t.Errorf("root task after the answer = %+v", root)
				}
				g.open()
			}
			waitUntil(t, "the root answers", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
			d := evData(log.get(events.TaskAnswered)[0])
			if resp, _ := d["response"].(string); !strings.HasPrefix(resp, "Final: "+wantReminder("user", "paint it", "asker: do the work")) ||
				!strings.Contains(resp, "work done") || d["task_id"] != root.ID {
				t.Errorf("task.answered = %v", d)
			}
			waitNoTasks(t, h.rt)
			if turns := h.rec.turnsOf("lead", "k", "Delegation report"); len(turns) != 1 {
				t.Errorf("report turns = %v, want one", turns)
			}
		})
	}
}

// TestDelegationNoGoroutineLeak: a fan-out leaves no goroutine behind once
// the runtime is closed.
func TestDelegationNoGoroutineLeak(t *testing.T) {
	before := goroutines()
	h := newHarness(t, parallelConfig, parallelScript)
	for i := range 5 {
		if rep := mustAsk(t, h.rt, "lead", "k"+strconv.Itoa(i), "build a parser"); rep.Response != "All done." {
			t.Fatalf("Ask = %q", rep.Response)
		}
	}
	waitNoTasks(t, h.rt)
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

// TestDelegationCloseAbortsTasks: Close aborts the background task turns,
// which stay stored; calls after Close are refused.
func TestDelegationCloseAbortsTasks(t *testing.T) {
	h, gm := newGatedHarness(t, singleConfig, singleScript)
	g := gm.hold("coder", "")
	h.mustSend("lead", "k", "build a parser")
	g.waitStarted(t, "the coder")
	done := make(chan error, 1)
	go func() { done <- h.rt.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(askTimeout):
		t.Fatal("Close waits for the held task turn")
	}
	if _, err := h.rt.Ask(context.Background(), "lead", "k", "again"); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Ask after Close = %v", err)
	}
}

// TestDelegationConcurrentAsks: two Asks on one instance, each delegating,
// each get the answer of their own request.
func TestDelegationConcurrentAsks(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "do it"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "done"}]}}
`)
	var asks []<-chan askResult
	for i := range 4 {
		asks = append(asks, goAsk(h.rt, "lead", "k", "request "+strconv.Itoa(i)))
	}
	seen := map[string]bool{}
	for i, c := range asks {
		r := awaitAsk(t, c)
		if r.err != nil || !strings.HasPrefix(r.rep.Response, "Final: "+wantReminder("user", "request "+strconv.Itoa(i), "coder: do it")) {
			t.Errorf("Ask %d = %+v, %v", i, r.rep, r.err)
			continue
		}
		if seen[r.rep.TaskID] {
			t.Errorf("task %s answered twice", r.rep.TaskID)
		}
		seen[r.rep.TaskID] = true
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationSameAgentTwice: two delegations to one agent in one step
// are two tasks, run one after the other on its instance, in one merged
// report.
func TestDelegationSameAgentTwice(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Both."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: coder, message: "write the lexer"}}
            - {name: call_agent, id: d2, args: {agent_id: coder, message: "write the parser"}}
        - text: "waiting"
  coder:
    turns:
      - match: "lexer"
        steps: [{text: "lexer written"}]
      - match: "parser"
        steps: [{text: "parser written"}]
`)
	if rep := mustAsk(t, h.rt, "lead", "k", "build"); rep.Response != "Both." {
		t.Errorf("Ask = %q", rep.Response)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	want := wantReminder("user", "build", "coder: write the lexer", "coder: write the parser") + "[Merged report of 2 parallel delegations]\n" +
		wantSection("coder", delegatedTo(t, lead, "d1"), "lexer written", false) +
		wantSection("coder", delegatedTo(t, lead, "d2"), "parser written", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
	if turns := h.rec.turnsOf("coder", "k", ""); len(turns) != 2 {
		t.Errorf("coder turns = %v", turns)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationBackToRequester: b, working on a's task, delegates back to
// a; a answers that task in a turn of its own, and its root task still
// gets b's report.
func TestDelegationBackToRequester(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A final: {{ .Input }}"}]
      - match: "what do you mean"
        steps: [{text: "I mean the blue one"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: b, message: "paint it"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "painted it blue"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: a, message: "what do you mean?"}}]
        - text: "asked a"
`)
	rep := mustAsk(t, h.rt, "a", "k", "paint")
	if !strings.HasPrefix(rep.Response, "A final: ") || !strings.Contains(rep.Response, "painted it blue") {
		t.Errorf("Ask = %q", rep.Response)
	}
	b := mustHistory(t, h.rt, "b", "k")
	if reps := reportInputs(b); len(reps) != 1 || !strings.Contains(reps[0].Content, "I mean the blue one") {
		t.Errorf("b's reports = %+v", reps)
	}
	waitNoTasks(t, h.rt)
}

// askerScript: lead delegates to asker, which asks a human when told to.
const askerScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: asker, message: "the task"}}]
        - text: "waiting"
  asker:
    turns:
      - match: "^Answer to your question"
        steps: [{text: "resumed"}]
      - match: "^please ask"
        steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old?
              default: 30
              required: true
              [/USER_QUESTION]
    fallback: {steps: [{text: "task done"}]}
`

// TestDelegationToPausedInstance: a task for an instance paused by a
// human's pending item waits, and runs once the instance resumes.
func TestDelegationToPausedInstance(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, askerConfig, askerScript, runtime.WithoutExpiryTimer())
	if res := h.mustSend("asker", "k", "please ask"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("asker = %+v", res)
	}
	asked := goAsk(h.rt, "lead", "k", "go")
	waitUntil(t, "the asker's task is stored", func() bool { return len(mustTasks(t, h.rt, "asker", "k")) == 1 })
	// The task cannot start while the instance is paused: its turn is
	// refused, and nothing runs in the background any more.
	if err := h.rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if tk := taskOf(t, h.rt, "asker"); tk.State != runtime.TaskQueued {
		t.Errorf("task of the paused instance = %+v", tk)
	}
	if turns := h.rec.turnsOf("asker", "k", "the task"); len(turns) != 0 {
		t.Fatalf("the task ran on a paused instance: %v", turns)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	if res, err := h.rt.Answer(ctx, items[0].ID, "40"); err != nil || res.Response.Content != "resumed" || res.TaskID != "" {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	r := awaitAsk(t, asked)
	if r.err != nil || !strings.Contains(r.rep.Response, "task done") {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
	waitNoTasks(t, h.rt)
}

// TestDelegationOutputsBesideData: a config built in code without
// outputs saves long reports in "outputs" beside the data directory, as
// the runtime's setOutputs documents.
func TestDelegationOutputsBesideData(t *testing.T) {
	dir := t.TempDir()
	sc, err := scripted.Parse("script.yaml", []byte(`
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Got it."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: writer, message: "write a lot"}}]
        - text: "waiting"
  writer: {fallback: {steps: [{text: `+strconv.Quote(charPattern(2500, "abc"))+`}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.File{Data: filepath.Join(dir, "data"), Agents: []config.Agent{{Name: "lead", Tools: []string{"call_agent"}, MaxSteps: 5}, {Name: "writer", MaxSteps: 5}}}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithModel(sc))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	mustAsk(t, rt, "lead", "k", "write")
	child := delegatedTo(t, mustHistory(t, rt, "lead", "k"), "d1")
	want := filepath.Join(dir, "outputs", "result_"+child+".txt")
	if _, err := os.Stat(want); err != nil {
		wrong := filepath.Join(os.TempDir(), "ganglion-outputs", "result_"+child+".txt")
		if _, err := os.Stat(wrong); err == nil {
			os.Remove(wrong)
			t.Fatalf("the long report went to %s, not beside the data directory (%s)", wrong, want)
		}
		t.Errorf("no file %s: %v", want, err)
	}
}

// pausedHook is a Transport that delivers in process and, the first time a
// turn is refused because its instance is paused, runs onPaused before
// returning the refusal: what a human answering at that moment does.
type pausedHook struct {
	rt       *runtime.Runtime
	mu       sync.Mutex
	onPaused func()
}

func (p *pausedHook) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	res, err := p.rt.Send(ctx, agent, key, in)
	if errors.Is(err, runtime.ErrPaused) {
		p.mu.Lock()
		f := p.onPaused
		p.onPaused = nil
		p.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return res, err
}

// TestDelegationPausedInstanceResumesMeanwhile: the instance a task waits
// for resumes between the task's refused turn and the runtime noting that
// the task waits: the task must still run.
func TestDelegationPausedInstanceResumesMeanwhile(t *testing.T) {
	ctx := context.Background()
	hook := &pausedHook{}
	h := newHarness(t, askerConfig, askerScript, runtime.WithoutExpiryTimer(), runtime.WithTransport(hook))
	hook.rt = h.rt
	if res := h.mustSend("asker", "k", "please ask"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("asker = %+v", res)
	}
	items, err := h.rt.Pending(ctx, ledger.Filter{Agent: "asker", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	answered := make(chan error, 1)
	hook.onPaused = func() {
		_, err := h.rt.Answer(ctx, items[0].ID, "40")
		answered <- err
	}
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel() // the Ask is left waiting when the bug shows
	asked := make(chan askResult, 1)
	go func() {
		rep, err := h.rt.Ask(askCtx, "lead", "k", "go")
		asked <- askResult{rep, err}
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("Answer: %v", err)
		}
	case <-time.After(askTimeout):
		t.Fatal("the task's turn was never refused")
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(mustTasks(t, h.rt, "", "")) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ts := mustTasks(t, h.rt, "", ""); len(ts) > 0 {
		var states []string
		for _, tk := range ts {
			states = append(states, tk.Agent+" "+string(tk.State))
		}
		t.Fatalf("a task refused while its instance was paused did not run after the instance resumed: "+
			"tasks left: %v", states)
	}
	if r := awaitAsk(t, asked); r.err != nil || !strings.Contains(r.rep.Response, "task done") {
		t.Fatalf("Ask = %+v, %v", r.rep, r.err)
	}
}

// TestDelegationOverSteps: delegations made in two steps of one turn are
// one fan-out, in step order.
func TestDelegationOverSteps(t *testing.T) {
	h := newHarness(t, fanOutConfig, `
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "Done."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: tester, message: "plan the tests"}}]
        - tool_calls: [{name: call_agent, id: d2, args: {agent_id: coder, message: "write the parser"}}]
        - text: "waiting"
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "tests planned"}]}}
`)
	if rep := mustAsk(t, h.rt, "lead", "k", "build"); rep.Response != "Done." {
		t.Errorf("Ask = %q", rep.Response)
	}
	lead := mustHistory(t, h.rt, "lead", "k")
	if m := toolResult(t, lead, "d2"); !strings.HasPrefix(m.Content, "Delegated to coder as task ") {
		t.Errorf("second call = %s", m.Content)
	}
	want := wantReminder("user", "build", "tester: plan the tests", "coder: write the parser") + "[Merged report of 2 parallel delegations]\n" +
		wantSection("tester", delegatedTo(t, lead, "d1"), "tests planned", false) +
		wantSection("coder", delegatedTo(t, lead, "d2"), "parser written", false)
	if reps := reportInputs(lead); len(reps) != 1 || reps[0].Content != want {
		t.Errorf("reports = %+v\nwant:\n%s", reps, want)
	}
}

// TestDelegationTurnFailsAfterDelegating: a turn that fails after its
// call_agent still delegated: its history says so, its task waits, and the
// report turn answers it.
func TestDelegationTurnFailsAfterDelegating(t *testing.T) {
	h := newHarness(t, singleConfig, `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "Recovered: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: coder, message: "write the parser"}}]
        - error: "model down"
  coder: {fallback: {steps: [{text: "parser written"}]}}
`)
	log := watchEvents(h.rt.Events(), events.TaskAnswered)
	res, err := h.send(context.Background(), "lead", "k", "build a parser")
	if err == nil || err.Error() != `agent "lead" instance "k" turn-1: model: model down` || res.FinishReason != pipeline.FinishError || res.TaskID == "" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	waitUntil(t, "task.answered", func() bool { return len(log.get(events.TaskAnswered)) == 1 })
	lead := mustHistory(t, h.rt, "lead", "k")
	child := delegatedTo(t, lead, "d1")
	want := "Recovered: " + wantReminder("user", "build a parser", "coder: write the parser") + "[Delegation report]\n" + wantSection("coder", child, "parser written", false)
	if d := evData(log.get(events.TaskAnswered)[0]); d["task_id"] != res.TaskID || d["response"] != want || d["error"] != nil {
		t.Errorf("task.answered = %v\nwant the response %q", d, want)
	}
	waitNoTasks(t, h.rt)
}

// slowLanding is a Transport whose Deliver, for the turns of one agent's
// own tasks, returns only once until() holds: a networked transport's
// latency between a turn's end and its caller learning of it.
type slowLanding struct {
	rt    *runtime.Runtime
	agent string
	until func() bool
}

func (s *slowLanding) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	res, err := s.rt.Send(ctx, agent, key, in)
	if agent == s.agent && in.Kind == pipeline.InputAgentRequest {
		for deadline := time.Now().Add(askTimeout); !s.until() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	return res, err
}

// TestDelegationReportWhileTurnLands: a child reports before the turn of
// its parent's task that delegated to it has landed (its Deliver has not
// returned); the parent's merged report must still be handed over.
func TestDelegationReportWhileTurnLands(t *testing.T) {
	slow := &slowLanding{agent: "b"}
	h := newHarness(t, `
agents:
  - name: a
    tools: [call_agent]
  - name: b
    tools: [call_agent]
  - name: c
`, `
agents:
  a:
    turns:
      - match: "Delegation report"
        steps: [{text: "A: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: b, message: "ask c"}}]
        - text: "asked b"
  b:
    turns:
      - match: "Delegation report"
        steps: [{text: "B relays: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: c, message: "answer"}}]
        - text: "asked c"
  c: {fallback: {steps: [{text: "C says 42"}]}}
`, runtime.WithTransport(slow))
	slow.rt = h.rt
	// b's turn lands only once c reported and b's task waits for its
	// report turn.
	slow.until = func() bool {
		ts, err := h.rt.Tasks(context.Background(), "b", "")
		return err == nil && len(ts) == 1 && ts[0].State == runtime.TaskReporting
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rep, err := h.rt.Ask(ctx, "a", "k", "question")
	if err != nil {
		// Seen at 89e1e35: b's task stayed reporting, as background() found
		// its ID in flight and dropped the report turn.
		t.Fatalf("Ask: %v\n%s", err, dumpTasks(h.rt))
	}
	if !strings.Contains(rep.Response, "C says 42") || !strings.Contains(rep.Response, "B relays: ") {
		t.Errorf("Ask = %q", rep.Response)
	}
	waitNoTasks(t, h.rt)
}

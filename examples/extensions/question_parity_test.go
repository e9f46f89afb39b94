package extensions_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/guesttest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// The parity of rust-question, the [USER_QUESTION] protocol as a Rust
// guest, with the built-in extension "protocol": every scenario runs in a
// runtime with one and then the other, on the scripted model, over a data
// directory; both must give the outcomes the scenario states, and observe
// the same: turn results and refusals, pending items, histories, the
// model's inputs and the events.

// parityScript drives the scenarios: the input's first word picks the
// reply.
const parityScript = `
agents:
  a:
    turns:
      - kind: resume
        steps:
          - text: "Resumed: {{ .LastMessage }}"
      - match: "^pricing"
        steps:
          - text: |
              I need one thing first.
              [USER_QUESTION]
              category: Business
              question: What pricing model?
              options: [Subscription, Freemium, "Ads, with a free tier"]
              default: freemium
              required: false
              [/USER_QUESTION]
      - match: "^age"
        steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old
                are you?
              required: yes
              [/USER_QUESTION]
      - match: "^two"
        steps:
          - text: |
              Two things.
              [USER_QUESTION]
              category: choice
              question: Which database?
              options:
                - PostgreSQL
                - MySQL, or MariaDB
              [/USER_QUESTION]
              And:
                [USER_QUESTION]
              category: confirmation
              question: Deploy on Friday?
              options: [yes, no]
              default: NO
                [/USER_QUESTION]
      - match: "^malformed"
        steps:
          - text: |
              [/USER_QUESTION]
              [USER_QUESTION]
              category: biz
              question: Which?
              options: [a, A, "b"]
              default: c
              [/USER_QUESTION]
              [USER_QUESTION]
              hello
              categry: choice
              question:
              required: maybe
              options:
                x
              [/USER_QUESTION]
              [USER_QUESTION]
              category: choice
              question: Fine?
              options: ["a" b]
              required: no
              yes
              [/USER_QUESTION]
              [USER_QUESTION]
              category: choice
              question: Never closed?
      - match: "^stubborn"
        steps:
          - text: "[USER_QUESTION]\ncategory: business\n[/USER_QUESTION]\n"
      # The scripted model matches a step's last user message: after a
      # correction, that is the correction.
      - match: "(?s)^Your last message.*has no matching"
        steps:
          - text: unused
          - text: |
              Corrected.
              [USER_QUESTION]
              category: choice
              question: Which?
              options: [a, b]
              default: B
              [/USER_QUESTION]
      - match: "(?s)^Your last message.*missing the required field \"question\""
        steps:
          - text: unused
          - text: "[USER_QUESTION]\nquestion: Still?\n[/USER_QUESTION]\n"
      - match: "(?s)^Your last message.*missing the required field \"category\""
        steps:
          - text: unused
          - text: unused
          - text: "[USER_QUESTION]\n"
    fallback:
      steps:
        - text: "Plain: {{ .Input }}"
`

// The correction the model reads after the "malformed" reply.
const malformedCorrection = `Your last message has protocol block problems, so none of its blocks was acted on:
- line 1: [/USER_QUESTION] has no matching [USER_QUESTION] above it
- line 3: unknown category "biz" (want business, clarification, choice or confirmation)
- line 5: option "A" is listed twice
- line 6: default "c" must be one of the options: a, A, b
- line 8: [USER_QUESTION] is missing the required field "category"
- line 9: expected a field line "name: value" in [USER_QUESTION] (known: category, question, options, default, required)
- line 10: unknown field "categry" in [USER_QUESTION] (known: category, question, options, default, required)
- line 11: the required field "question" is empty
- line 12: field "required" must be true, false, yes or no, not "maybe"
- line 14: expected "- item" under "options", or a field line
- line 19: field "options" has text after the quoted item "a"
- line 21: unexpected text after field "required": only text fields continue on the next line
- [USER_QUESTION] opened at line 23 is never closed
Write the blocks again, corrected.`

// The pricing question's request, as the native extension stores it.
const pricingRequest = `{"category":"business","question":"What pricing model?","options":["Subscription","Freemium","Ads, with a free tier"],"default":"Freemium","required":false}`

// act is one thing a scenario does, and want how it went: see outcome;
// "expired P1" or "expired none" for an expiry; "" for a restart that
// works.
type act struct {
	do   func(p *parityRun) string
	want string
}

func says(text string) func(p *parityRun) string {
	return func(p *parityRun) string {
		return outcome(p.rt.Send(context.Background(), "a", "k", runtime.UserMessage(text)))
	}
}

// resolve acts on the open item n (from 1, in the order of openItems).
func resolve(n int, f func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error)) func(p *parityRun) string {
	return func(p *parityRun) string {
		open := p.openItems()
		if len(open) < n {
			return fmt.Sprintf("only %d open items", len(open))
		}
		return outcome(f(p.rt, open[n-1].ID))
	}
}

func answers(n int, v string) func(p *parityRun) string {
	return resolve(n, func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
		return rt.Answer(context.Background(), id, v)
	})
}

func skips(n int) func(p *parityRun) string {
	return resolve(n, func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
		return rt.Skip(context.Background(), id)
	})
}

func provides(n int, v string) func(p *parityRun) string {
	return resolve(n, func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
		return rt.Provide(context.Background(), id, v)
	})
}

func rejects(n int, reason string) func(p *parityRun) string {
	return resolve(n, func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
		return rt.Reject(context.Background(), id, reason)
	})
}

// restarts closes the runtime and opens another on its data, after the
// clock moves on by d.
func restarts(d time.Duration) func(p *parityRun) string {
	return func(p *parityRun) string {
		if err := p.rt.Close(); err != nil {
			return "error: " + err.Error()
		}
		p.later.Add(int64(d))
		if err := p.open(); err != nil {
			return "error: " + err.Error()
		}
		return ""
	}
}

// expires moves the clock on by d and expires what is due.
func expires(d time.Duration) func(p *parityRun) string {
	return func(p *parityRun) string {
		p.later.Add(int64(d))
		items, err := p.rt.ExpirePending(context.Background())
		if err != nil {
			return "error: " + err.Error()
		}
		if len(items) == 0 {
			return "expired none"
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		return "expired " + strings.Join(ids, " ")
	}
}

const refusal = `pending item "P1": invalid action: `

var parityScenarios = []struct {
	name string
	acts []act
}{
	{"answer with an option", []act{
		{says("pricing"), "paused turn-1"},
		{answers(1, "  subscription "), `text_response turn-2: Resumed: Answer to your question "What pricing model?": Subscription`},
		{says("hello"), "text_response turn-3: Plain: hello"},
	}},
	{"refused answers, then a skip", []act{
		{says("pricing"), "paused turn-1"},
		{answers(1, "Premium"), "error: " + refusal + `answer "Premium" must be one of: Subscription, Freemium, Ads, with a free tier`},
		{provides(1, "x"), "error: " + refusal + "a question is answered or skipped, not provided"},
		{rejects(1, "no"), "error: " + refusal + "a question is answered or skipped, not rejected"},
		{says("hello"), `error: agent "a" instance "k" is paused: it waits for pending item P1 (see ganglion pending; answer, skip, provide or reject it first)`},
		{skips(1), `text_response turn-2: Resumed: Your question "What pricing model?" was skipped; go on with the default: Freemium`},
	}},
	{"a required question", []act{
		{says("age"), "paused turn-1"},
		{answers(1, " "), "error: " + refusal + "an answer is required"},
		{skips(1), "error: " + refusal + "a required question cannot be skipped"},
		{answers(1, "40"), "text_response turn-2: Resumed: Answer to your question \"How old\\n  are you?\": 40"},
	}},
	{"restart between pause and answer", []act{
		{says("pricing"), "paused turn-1"},
		{restarts(time.Minute), ""},
		{says("hello"), `error: agent "a" instance "k" is paused: it waits for pending item P1 (see ganglion pending; answer, skip, provide or reject it first)`},
		{answers(1, "ADS, WITH A FREE TIER"), `text_response turn-2: Resumed: Answer to your question "What pricing model?": Ads, with a free tier`},
	}},
	{"an optional question expires", []act{
		{says("pricing"), "paused turn-1"},
		{expires(29 * time.Minute), "expired none"},
		{expires(time.Minute), "expired P1"},
		{says("after"), "text_response turn-3: Plain: after"},
	}},
	{"a required question expires and stays open", []act{
		{says("age"), "paused turn-1"},
		{expires(31 * time.Minute), "expired P1"},
		{expires(time.Hour), "expired none"},
		{answers(1, "41"), "text_response turn-2: Resumed: Answer to your question \"How old\\n  are you?\": 41"},
	}},
	{"expiry while no process ran", []act{
		{says("pricing"), "paused turn-1"},
		{restarts(2 * time.Hour), ""},
		{says("after"), "text_response turn-3: Plain: after"},
	}},
	{"two questions in one reply", []act{
		{says("two"), "paused turn-1"},
		{answers(2, "no"), "waiting"},
		{answers(1, "mysql, or mariadb"), "text_response turn-2: Resumed: Answer to your question \"Deploy on Friday?\": no\n\n" +
			`Answer to your question "Which database?": MySQL, or MariaDB`},
	}},
	{"malformed blocks are corrected", []act{
		{says("malformed"), "paused turn-1"},
		{answers(1, "a"), `text_response turn-2: Resumed: Answer to your question "Which?": a`},
	}},
	{"too many mistakes ask a human", []act{
		{says("stubborn"), "paused turn-1"},
		{answers(1, " "), "error: " + refusal + "guidance is required"},
		{skips(1), "error: " + refusal + "answer an intervention with guidance for the model"},
		{answers(1, "Write both fields."), "text_response turn-2: Resumed: Your protocol blocks failed several times in a row. Guidance from the user: Write both fields."},
	}},
}

// TestQuestionParity runs each scenario with the native extension and with
// the Rust guest, and compares what they observed.
func TestQuestionParity(t *testing.T) {
	for _, sc := range parityScenarios {
		t.Run(sc.name, func(t *testing.T) {
			native := runParity(t, "native", sc.acts)
			mods, cache := rustGuests.Build(t, "rust-question")
			guest := runParity(t, "rust", sc.acts, mods["rust-question"], cache)
			n, g := native.render(), guest.render()
			if n != g {
				t.Errorf("the Rust guest observed otherwise than the native extension:\n%s", firstDiff(n, g))
			}
		})
	}
}

// TestQuestionParityDetails checks what the scenarios leave in the native
// runtime that the outcomes do not show: the request stored, the
// correction the model read, the items' ends. The Rust guest must match it
// (TestQuestionParity).
func TestQuestionParityDetails(t *testing.T) {
	obs := func(name string) *observed {
		for _, sc := range parityScenarios {
			if sc.name == name {
				return runParity(t, "native", sc.acts)
			}
		}
		t.Fatalf("no scenario %q", name)
		return nil
	}
	o := obs("answer with an option")
	if len(o.Items) != 1 || o.Items[0].Request != pricingRequest || o.Items[0].Kind != "question" || o.Items[0].Expires != "30m0s" {
		t.Errorf("items = %+v\nwant the request %s", o.Items, pricingRequest)
	}
	o = obs("malformed blocks are corrected")
	if !slices.ContainsFunc(o.History, func(m string) bool {
		return m == "user extension protocol "+malformedCorrection+` {"protocol_correction":1}`
	}) {
		t.Errorf("the history lacks the correction:\n%s", strings.Join(o.History, "\n"))
	}
	for _, sc := range []struct{ name, want string }{
		{"an optional question expires", `question timeout closed answer "Freemium" message "Nobody answered your question \"What pricing model?\" in time; go on with the default: Freemium" resumed by turn-2`},
		{"a required question expires and stays open", `question answered closed answer "41" message "Answer to your question \"How old\\n  are you?\": 41" resumed by turn-2`},
		{"expiry while no process ran", `question timeout closed answer "Freemium" message "Nobody answered your question \"What pricing model?\" in time; go on with the default: Freemium" resumed by turn-2`},
		{"two questions in one reply", `question answered closed answer "MySQL, or MariaDB" message "Answer to your question \"Which database?\": MySQL, or MariaDB" resumed by turn-2`},
		{"too many mistakes ask a human", `intervention answered closed answer "Write both fields." message "Your protocol blocks failed several times in a row. Guidance from the user: Write both fields." resumed by turn-2`},
	} {
		o := obs(sc.name)
		if got := o.Items[0].end(); got != sc.want {
			t.Errorf("%s: item = %s\nwant          %s", sc.name, got, sc.want)
		}
	}
	o = obs("two questions in one reply")
	if len(o.Items) != 2 || o.Items[1].Request != `{"category":"confirmation","question":"Deploy on Friday?","options":["yes","no"],"default":"no","required":false}` {
		t.Errorf("items = %+v", o.Items)
	}
	o = obs("too many mistakes ask a human")
	if r := o.Items[0].Request; r != `{"errors":["- [USER_QUESTION] opened at line 1 is never closed"],"mistakes":3}` {
		t.Errorf("intervention request = %s", r)
	}
}

// TestQuestionConfigParity: a setting the native extension refuses, the
// guest refuses with the same words.
func TestQuestionConfigParity(t *testing.T) {
	tests := []struct{ config, want string }{
		{"{timeout: soon}", `timeout must be a positive duration such as 30m or 2h, got "soon"`},
		{"{question_timeout: 0s}", `question_timeout must be a positive duration such as 30m or 2h, got "0s"`},
		{"{mistake_limit: -1}", "mistake_limit must be at least 1, got -1"},
	}
	mods, cache := rustGuests.Build(t, "rust-question")
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			for _, entry := range []string{
				"{name: protocol, config: " + tt.config + "}",
				fmt.Sprintf("{wasm: %q, pending: [question, intervention], config: %s}", mods["rust-question"], tt.config),
			} {
				dir := t.TempDir()
				cfg := "model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: [" + entry + "]\n"
				for name, text := range map[string]string{"ganglion.yaml": cfg, "script.yaml": parityScript} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				rt, err := runtime.New(context.Background(), runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")),
					runtime.WithMemoryStore(), runtime.WithWasmCache(cache))
				if err == nil {
					rt.Close()
					t.Fatalf("%s: loaded", entry)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s:\n%v\nwant it to say %q", entry, err, tt.want)
				}
			}
		})
	}
}

var rustGuests guesttest.RustSet

// parityRun is one scenario's runtime, over a data directory, on a clock
// the scenario moves.
type parityRun struct {
	t      *testing.T
	cfg    string // the config file
	cache  string
	rt     *runtime.Runtime
	later  atomic.Int64
	model  *inputRecorder
	events *eventRecorder
	log    []string // the outcomes, in order
}

var parityBase = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// runParity runs acts with the native extension (impl "native") or the
// Rust guest (module and cache given), checks each outcome, and returns
// what the runtime observed.
func runParity(t *testing.T, impl string, acts []act, guest ...string) *observed {
	t.Helper()
	dir := t.TempDir()
	entry := "{name: protocol, config: {question_timeout: 30m}}"
	p := &parityRun{t: t, cfg: filepath.Join(dir, "ganglion.yaml"), events: &eventRecorder{}}
	if impl != "native" {
		entry = fmt.Sprintf("{wasm: %q, name: protocol, pending: [question, intervention], config: {question_timeout: 30m}}", guest[0])
		p.cache = guest[1]
	}
	cfg := "model: {provider: scripted, script: script.yaml}\ndata: data\nagents:\n  - name: a\n    extensions: [" + entry + "]\n"
	for name, text := range map[string]string{"ganglion.yaml": cfg, "script.yaml": parityScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := scripted.Parse("script.yaml", []byte(parityScript))
	if err != nil {
		t.Fatal(err)
	}
	p.model = &inputRecorder{next: m}
	if err := p.open(); err != nil {
		t.Fatalf("%s: %v", impl, err)
	}
	for i, a := range acts {
		got := a.do(p)
		p.log = append(p.log, got)
		if got = p.withIDs(got); got != a.want {
			t.Errorf("%s: act %d: %s\nwant   %s", impl, i+1, got, a.want)
		}
	}
	o := p.observe()
	if err := p.rt.Close(); err != nil {
		t.Errorf("%s: Close: %v", impl, err)
	}
	return o
}

func (p *parityRun) open() error {
	opts := []runtime.Option{runtime.WithConfigFile(p.cfg), runtime.WithModel(p.model), runtime.WithoutExpiryTimer(),
		runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		runtime.WithClock(func() time.Time { return parityBase.Add(time.Duration(p.later.Load())) })}
	if p.cache != "" {
		opts = append(opts, runtime.WithWasmCache(p.cache))
	}
	rt, err := runtime.New(context.Background(), opts...)
	if err != nil {
		return err
	}
	rt.Events().Subscribe("pending.*", p.events.record)
	rt.Events().Subscribe("protocol.*", p.events.record)
	p.rt = rt
	return nil
}

// openItems returns the open items, in the order they were made.
func (p *parityRun) openItems() []ledger.Item {
	items, err := p.rt.Pending(context.Background(), ledger.Filter{Agent: "a", Open: true})
	if err != nil {
		p.t.Fatal(err)
	}
	slices.SortFunc(items, itemOrder)
	return items
}

func itemOrder(a, b ledger.Item) int {
	return cmp.Or(strings.Compare(a.TurnID, b.TurnID), cmp.Compare(a.Step, b.Step), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(string(a.Request), string(b.Request)))
}

// outcome renders what an act came to: "paused turn-1", "text_response
// turn-2: TEXT", "waiting" (an answer that leaves the turn paused),
// "error: TEXT".
func outcome(res *pipeline.TurnResult, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case res == nil:
		return "waiting"
	case res.FinishReason == pipeline.FinishPaused:
		return fmt.Sprintf("%s %s", res.FinishReason, res.TurnID)
	}
	return fmt.Sprintf("%s %s: %s", res.FinishReason, res.TurnID, res.Response.Content)
}

var itemID = regexp.MustCompile(`p-[0-9a-z]+`)

// twoAnswers is the resume message of two answered questions. The
// runtime joins the items' messages in the order of the items' IDs, which
// are random: withIDs sorts them.
var twoAnswers = regexp.MustCompile(`(Answer to your question "[^"]*": [^\n]*)\n\n(Answer to your question "[^"]*": [^\n]*)`)

// withIDs names the items in s P1, P2, ... in the order they were made,
// and puts the answers of a resume message in order.
func (p *parityRun) withIDs(s string) string {
	s = twoAnswers.ReplaceAllStringFunc(s, func(m string) string {
		a, b, _ := strings.Cut(m, "\n\n")
		return min(a, b) + "\n\n" + max(a, b)
	})
	items, err := p.rt.Pending(context.Background(), ledger.Filter{Agent: "a"})
	if err != nil {
		p.t.Fatal(err)
	}
	slices.SortFunc(items, itemOrder)
	names := map[string]string{}
	for i, it := range items {
		names[it.ID] = fmt.Sprintf("P%d", i+1)
	}
	return itemID.ReplaceAllStringFunc(s, func(id string) string { return cmp.Or(names[id], id) })
}

// observed is what a scenario left and saw, with the items' IDs named P1,
// P2, ... and the messages' IDs by their place in the history.
type observed struct {
	Outcomes []string
	Items    []parityItem
	History  []string
	Inputs   []string
	Events   []string
}

// parityItem is an item without its IDs and times.
type parityItem struct {
	Kind, Extension, Agent, Instance, TurnID string
	Step                                     int
	Request                                  string
	Required, Open, Fails                    bool
	Status                                   ledger.Status
	Checkpoint                               string // the message's place in the history
	Answer, Reason, Message, ResumedBy       string
	Expires                                  string // the deadline, from the item's creation
}

func (it parityItem) end() string {
	open := "closed"
	if it.Open {
		open = "open"
	}
	return fmt.Sprintf("%s %s %s answer %q message %q resumed by %s", it.Kind, it.Status, open, it.Answer, it.Message, it.ResumedBy)
}

func (p *parityRun) observe() *observed {
	ctx := context.Background()
	o := &observed{}
	for _, l := range p.log {
		o.Outcomes = append(o.Outcomes, p.withIDs(l))
	}
	msgs, err := p.rt.History(ctx, "a", "k")
	if err != nil {
		p.t.Fatal(err)
	}
	place := map[string]string{}
	for i, m := range msgs {
		place[m.ID] = fmt.Sprintf("#%d", i+1)
		meta := ""
		if len(m.Metadata) > 0 {
			md := maps.Clone(m.Metadata)
			if ids, ok := md["pending"].([]any); ok {
				// The runtime lists them in the order of their IDs, which
				// are random.
				names := make([]string, len(ids))
				for i, id := range ids {
					names[i] = p.withIDs(fmt.Sprint(id))
				}
				slices.Sort(names)
				md["pending"] = names
			}
			b, _ := json.Marshal(md)
			meta = " " + string(b)
		}
		o.History = append(o.History, fmt.Sprintf("%s %s %s %s%s", m.Role, m.Source.Type, m.Source.Extension, p.withIDs(m.Content), meta))
	}
	items, err := p.rt.Pending(ctx, ledger.Filter{Agent: "a"})
	if err != nil {
		p.t.Fatal(err)
	}
	slices.SortFunc(items, itemOrder)
	for _, it := range items {
		expires := ""
		if !it.ExpiresAt.IsZero() {
			expires = it.ExpiresAt.Sub(it.CreatedAt).String()
		}
		o.Items = append(o.Items, parityItem{Kind: it.Kind, Extension: it.Extension, Agent: it.Agent, Instance: it.Instance,
			TurnID: it.TurnID, Step: it.Step, Request: string(it.Request), Required: it.Required, Open: it.Open, Fails: it.Fails,
			Status: it.Status, Checkpoint: cmp.Or(place[it.Checkpoint], it.Checkpoint), Answer: it.Answer, Reason: it.Reason,
			Message: it.Message, ResumedBy: it.ResumedBy, Expires: expires})
	}
	for _, in := range p.model.inputs() {
		o.Inputs = append(o.Inputs, p.withIDs(in))
	}
	for _, e := range p.events.all() {
		o.Events = append(o.Events, p.withIDs(e))
	}
	return o
}

func (o *observed) render() string {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// firstDiff shows where two renderings part.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		x, y := "", ""
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			from := max(0, i-3)
			return fmt.Sprintf("at line %d, after\n%s\nnative: %s\nrust:   %s", i+1, strings.Join(la[from:i], "\n"), x, y)
		}
	}
	return "(no difference)"
}

// inputRecorder is the scripted model, noting what each call is sent.
type inputRecorder struct {
	next model.Provider
	mu   sync.Mutex
	seen []string
}

func (r *inputRecorder) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "turn %d step %d (%s):", req.Turn, req.Step, req.InputKind)
	for i := range req.Messages.Len() {
		m := req.Messages.At(i)
		fmt.Fprintf(&b, "\n  %s: %s", m.Role, m.Content)
	}
	r.mu.Lock()
	r.seen = append(r.seen, b.String())
	r.mu.Unlock()
	return r.next.Stream(ctx, req)
}

func (r *inputRecorder) inputs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// eventRecorder notes the topics of the pending items' events, and the
// data of the protocol's (without the event's turn: a guest publishes for
// its instance).
type eventRecorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *eventRecorder) record(ev events.Event) {
	s := ev.Topic
	if strings.HasPrefix(ev.Topic, "protocol.") {
		b, _ := json.Marshal(ev.Data)
		s += " " + string(b)
	}
	r.mu.Lock()
	r.evs = append(r.evs, s)
	r.mu.Unlock()
}

func (r *eventRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

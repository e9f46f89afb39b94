package approval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// callsScript is a script whose first turn makes one call per step, each
// with its raw arguments (tool:arguments), then says "done"; the turns
// after it say what they read.
func callsScript(calls ...string) string {
	var b strings.Builder
	b.WriteString("agents:\n  a:\n    turns:\n      - steps:\n")
	for i, c := range calls {
		tool, args, _ := strings.Cut(c, ":")
		fmt.Fprintf(&b, "          - tool_calls: [{name: %s, id: c%d, arguments: %q}]\n", tool, i+1, args)
	}
	b.WriteString("          - text: \"done\"\n      - steps:\n          - text: \"resumed: {{ .LastMessage }}\"\n")
	b.WriteString("    fallback:\n      steps:\n        - text: \"fallback\"\n")
	return b.String()
}

// probe is a second tool, for calls of another tool with the same
// arguments.
var probe = pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "probe", Description: "Probes.", Category: pipeline.CategoryRead},
	Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		return &pipeline.ToolResult{Content: "probed"}, nil
	}}

const repetitionAgent = `agents:
  - name: a
    tools: [deploy, probe]
    extensions: [{name: approval, config: {rules: rules.yaml%s}}]
`

// TestRepetitionLimit: the same tool with the same arguments (as canonical
// JSON) N times in a row pauses the turn before the Nth call runs; another
// call in between starts the count again.
func TestRepetitionLimit(t *testing.T) {
	ctx := context.Background()
	const prod = `{"env":"prod"}`
	tests := []struct {
		name     string
		settings string // after rules: in the extension's config
		rules    string
		calls    []string // tool:arguments, one per step
		paused   string   // the call that pauses, or "" for none
		runs     int32    // deploy's runs
		results  map[string]string
	}{
		{"three identical calls pause before the third runs", "", approveAll,
			[]string{"deploy:" + prod, "deploy:" + prod, "deploy:" + prod}, "c3", 2,
			map[string]string{"c2": "deployed", "c3": "not run: deploy was called with the same arguments 3 times in a row; a human was asked for guidance (pending item $ID)"}},
		{"key order, spacing and escapes do not matter", "", approveAll,
			[]string{`deploy:{"env":"prod","n":1}`, `deploy:{ "n" : 1,  "env": "prod" }`, "deploy:{\"n\":1,\n\"env\":\"pr\\u006fd\"}"}, "c3", 2, nil},
		{"another call in between resets", "", approveAll,
			[]string{"deploy:" + prod, "deploy:" + prod, `deploy:{"env":"staging"}`, "deploy:" + prod, "deploy:" + prod}, "", 5, nil},
		{"another tool with the same arguments resets", "", approveAll,
			[]string{"deploy:" + prod, "deploy:" + prod, "probe:" + prod, "deploy:" + prod, "deploy:" + prod}, "", 4, nil},
		{"a value that differs counts as another call", "", approveAll,
			[]string{`deploy:{"env":"prod","n":1}`, `deploy:{"env":"prod","n":2}`, `deploy:{"env":"prod","n":1}`}, "", 3, nil},
		{"repetition_limit: 4", ", repetition_limit: 4", approveAll,
			[]string{"deploy:" + prod, "deploy:" + prod, "deploy:" + prod, "deploy:" + prod}, "c4", 3, nil},
		{"repetition_limit: 2", ", repetition_limit: 2", approveAll,
			[]string{"deploy:" + prod, "deploy:" + prod}, "c2", 1, nil},
		{"a call the rules deny counts too", "", "default: approve\nrules:\n  - name: frozen\n    when: tool.name == \"deploy\"\n    decision: deny\n",
			[]string{"deploy:" + prod, "deploy:" + prod, "deploy:" + prod}, "c3", 0,
			map[string]string{"c2": `tool call denied: rule "frozen" decides deny`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t, callsScript(tt.calls...), tt.rules, fmt.Sprintf(repetitionAgent, tt.settings))
			var mu sync.Mutex
			var evs []approval.RepetitionLimitEvent
			bus := events.NewBus()
			bus.Subscribe("approval.repetition_limit", func(ev events.Event) {
				mu.Lock()
				defer mu.Unlock()
				evs = append(evs, ev.Data.(approval.RepetitionLimitEvent))
			})
			rt := p.open(runtime.WithMemoryStore(), runtime.WithoutExpiryTimer(), runtime.WithTool(probe), runtime.WithEvents(bus))
			defer rt.Close()
			res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go"))
			if err != nil {
				t.Fatal(err)
			}
			items, err := rt.Pending(ctx, ledger.Filter{Open: true})
			if err != nil {
				t.Fatal(err)
			}
			if tt.paused == "" {
				if res.FinishReason == pipeline.FinishPaused || len(items) != 0 {
					t.Fatalf("Send = %s with items %+v; want no pause", res.FinishReason, items)
				}
			} else {
				if res.FinishReason != pipeline.FinishPaused || len(items) != 1 || items[0].Kind != approval.ItemRepetition || items[0].CallID != tt.paused {
					t.Fatalf("Send = %s with items %+v; want paused on a repetition item of call %s", res.FinishReason, items, tt.paused)
				}
				if !items[0].ExpiresAt.IsZero() {
					t.Errorf("the item expires at %v; want no deadline", items[0].ExpiresAt)
				}
				var req struct {
					Tool  string
					Args  json.RawMessage
					Calls int
				}
				if err := json.Unmarshal(items[0].Request, &req); err != nil {
					t.Fatal(err)
				}
				n := len(tt.calls)
				last := tt.calls[n-1][len("deploy:"):]
				if req.Tool != "deploy" || req.Calls != n || string(req.Args) != compact(t, last) {
					t.Errorf("request = %s, want deploy, %d calls, args %s", items[0].Request, n, last)
				}
				mu.Lock()
				if want := (approval.RepetitionLimitEvent{CallID: tt.paused, Calls: n, Tool: "deploy", TurnID: res.TurnID}); len(evs) != 1 || evs[0] != want {
					t.Errorf("events = %+v, want %+v", evs, want)
				}
				mu.Unlock()
			}
			if n := p.runs.Load(); n != tt.runs {
				t.Errorf("deploy ran %d times, want %d", n, tt.runs)
			}
			got := toolResults(t, rt)
			for id, want := range tt.results {
				if len(items) > 0 {
					want = strings.ReplaceAll(want, "$ID", items[0].ID)
				}
				if got[id] != want {
					t.Errorf("result of %s = %q\nwant %q", id, got[id], want)
				}
			}
		})
	}
}

const approveAll = "default: approve\nrules: []\n"

// compact returns s as compact JSON, as it is written otherwise.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// toolResults returns the tool results of instance a/k by call ID.
func toolResults(t *testing.T, rt *runtime.Runtime) map[string]string {
	t.Helper()
	msgs, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range msgs {
		if m.Role == pipeline.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// TestRepetitionAcrossTurns: a user message starts the count afresh; calls
// a human approved count, and the third pauses on the repetition, not on
// another approval.
func TestRepetitionAcrossTurns(t *testing.T) {
	ctx := context.Background()
	t.Run("a user message starts the count afresh", func(t *testing.T) {
		p := newProject(t, `agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: deploy, id: d1, args: {env: prod}}]
          - tool_calls: [{name: deploy, id: d2, args: {env: prod}}]
          - text: "twice"
      - steps:
          - tool_calls: [{name: deploy, id: d3, args: {env: prod}}]
          - tool_calls: [{name: deploy, id: d4, args: {env: prod}}]
          - tool_calls: [{name: deploy, id: d5, args: {env: prod}}]
          - text: "not reached"
`, approveAll, fmt.Sprintf(repetitionAgent, ""))
		rt := p.open(runtime.WithMemoryStore(), runtime.WithoutExpiryTimer(), runtime.WithTool(probe))
		defer rt.Close()
		if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("deploy")); err != nil || res.Response.Content != "twice" {
			t.Fatalf("first Send = %+v, %v", res, err)
		}
		res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("again"))
		if err != nil || res.FinishReason != pipeline.FinishPaused {
			t.Fatalf("second Send = %+v, %v; want paused", res, err)
		}
		items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
		if len(items) != 1 || items[0].CallID != "d5" || p.runs.Load() != 4 {
			t.Fatalf("items = %+v, runs %d; want a pause at d5 after 4 runs", items, p.runs.Load())
		}
	})
	t.Run("calls a human approved count", func(t *testing.T) {
		p := newProject(t, `agents:
  a:
    turns:
      - steps: [{tool_calls: [{name: deploy, id: d1, args: {env: prod}}]}]
      - steps: [{tool_calls: [{name: deploy, id: d2, args: {env: prod}}]}]
      - steps: [{tool_calls: [{name: deploy, id: d3, args: {env: prod}}]}]
      - steps: [{text: "resumed: {{ .LastMessage }}"}]
`, "default: ask\nrules: []\n", fmt.Sprintf(repetitionAgent, ""))
		rt := p.open(runtime.WithMemoryStore(), runtime.WithoutExpiryTimer(), runtime.WithTool(probe))
		defer rt.Close()
		if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("deploy")); err != nil || res.FinishReason != pipeline.FinishPaused {
			t.Fatalf("Send = %+v, %v; want paused", res, err)
		}
		for i, want := range []string{approval.ItemApproval, approval.ItemApproval, approval.ItemRepetition} {
			items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
			if len(items) != 1 || items[0].Kind != want || items[0].CallID != fmt.Sprintf("d%d", i+1) {
				t.Fatalf("pause %d: items = %+v, want one %s item of d%d", i+1, items, want, i+1)
			}
			if want == approval.ItemRepetition {
				break
			}
			if res, err := rt.Answer(ctx, items[0].ID, "approve"); err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("approve %d = %+v, %v; want paused again", i+1, res, err)
			}
		}
		if n := p.runs.Load(); n != 2 {
			t.Errorf("deploy ran %d times, want 2", n)
		}
	})
}

// TestRepetitionAnswers: guidance resumes the turn, the model reads it, and
// the call that did not run says so; a rejection fails the task; an empty
// answer or an edit is refused and changes nothing.
func TestRepetitionAnswers(t *testing.T) {
	ctx := context.Background()
	const prod = `{"env":"prod"}`
	tests := []struct {
		name    string
		act     func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error)
		err     string // the error, $ID for the item's ID
		reply   string // the resume turn's reply
		result  string // the paused call's result afterwards
		status  ledger.Status
		failed  bool // the error wraps runtime.ErrTaskFailed
		stopped bool // the item is still open
	}{
		{"guidance", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(ctx, id, "  deploy to staging instead ")
		}, "",
			"resumed: You called deploy with the same arguments 3 times in a row; the last call did not run. The user says: deploy to staging instead",
			"not run: deploy was called with the same arguments 3 times in a row; the user says: deploy to staging instead", ledger.Answered, false, false},
		{"reject fails the task", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Reject(ctx, id, "it is looping")
		}, `agent "a" instance "k" turn-2: task failed: stopped after 3 calls in a row of deploy with the same arguments: it is looping`, "",
			"not run: deploy was called with the same arguments 3 times in a row; a human was asked for guidance (pending item $ID)", ledger.Rejected, true, false},
		{"empty guidance is refused", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(ctx, id, " ")
		}, `pending item "$ID": invalid action: answer with guidance for the agent, or reject to stop it`, "",
			"not run: deploy was called with the same arguments 3 times in a row; a human was asked for guidance (pending item $ID)", ledger.Pending, false, true},
		{"an edit is refused", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Edit(ctx, id, json.RawMessage(`{"env":"staging"}`))
		}, `pending item "$ID": invalid action: answer with guidance, or reject to stop the agent`, "",
			"not run: deploy was called with the same arguments 3 times in a row; a human was asked for guidance (pending item $ID)", ledger.Pending, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t, callsScript("deploy:"+prod, "deploy:"+prod, "deploy:"+prod), approveAll, fmt.Sprintf(repetitionAgent, ""))
			rt := p.open(runtime.WithMemoryStore(), runtime.WithoutExpiryTimer(), runtime.WithTool(probe))
			defer rt.Close()
			if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("Send = %+v, %v; want paused", res, err)
			}
			items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
			if len(items) != 1 {
				t.Fatalf("items = %+v", items)
			}
			id := items[0].ID
			res, err := tt.act(rt, id)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("act: %v", err)
			case tt.err != "" && (err == nil || err.Error() != strings.ReplaceAll(tt.err, "$ID", id)):
				t.Fatalf("act error = %v\nwant %s", err, strings.ReplaceAll(tt.err, "$ID", id))
			case errors.Is(err, runtime.ErrTaskFailed) != tt.failed:
				t.Errorf("errors.Is(%v, ErrTaskFailed) = %v, want %v", err, !tt.failed, tt.failed)
			}
			if tt.reply != "" && (res == nil || res.Response.Content != tt.reply) {
				t.Errorf("resume = %+v\nwant reply %q", res, tt.reply)
			}
			if got := toolResults(t, rt)["c3"]; got != strings.ReplaceAll(tt.result, "$ID", id) {
				t.Errorf("result of c3 = %q\nwant %q", got, strings.ReplaceAll(tt.result, "$ID", id))
			}
			it, err := rt.PendingItem(ctx, id)
			if err != nil || it.Status != tt.status || it.Open != tt.stopped {
				t.Errorf("item = %+v, %v; want %s, open %v", it, err, tt.status, tt.stopped)
			}
			if n := p.runs.Load(); n != 2 {
				t.Errorf("deploy ran %d times, want 2", n)
			}
		})
	}
}

// TestRepetitionLimitSetting: repetition_limit is at least 2; 0 or absent
// is the default.
func TestRepetitionLimitSetting(t *testing.T) {
	for _, tt := range []struct {
		value string
		err   string
	}{
		{"0", ""},
		{"2", ""},
		{"100", ""},
		{"1", `agent "a": extension "approval": repetition_limit must be at least 2 (a call and a repeat of it), got 1`},
		{"-1", `agent "a": extension "approval": repetition_limit must be at least 2 (a call and a repeat of it), got -1`},
	} {
		t.Run(tt.value, func(t *testing.T) {
			p := newProject(t, callsScript(), approveAll, fmt.Sprintf(repetitionAgent, ", repetition_limit: "+tt.value))
			rt, err := runtime.New(context.Background(), runtime.WithConfig(p.cfg), runtime.WithTool(p.deploy()), runtime.WithTool(probe), runtime.WithMemoryStore())
			if err == nil {
				rt.Close()
			}
			if got := fmt.Sprint(err); (tt.err == "" && err != nil) || (tt.err != "" && got != tt.err) {
				t.Errorf("New = %v\nwant %s", err, tt.err)
			}
		})
	}
}

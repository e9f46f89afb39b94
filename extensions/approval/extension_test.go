package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

const script = `
agents:
  a:
    fallback:
      steps:
        - tool_calls:
            - {name: read_file, id: r, args: {path: notes.txt}}
            - {name: execute_command, id: x, args: {command: "rm -rf build"}}
        - text: "done"
`

const firstRules = `
default: ask
rules:
  - name: reads
    when: tool.category == "read"
    decision: approve
  - name: no rm
    when: tool.name == "execute_command" && any(shell.commands, {.name == "rm"})
    decision: deny
    reason: rm is not allowed
`

// TestApprovalExtension: approve runs the tool, deny returns the reason to
// the model; an edit of the rules file takes effect at the next call, and
// a broken edit leaves the rules in force and says why in an event.
func TestApprovalExtension(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	write("ws/notes.txt", "remember the milk\n")
	write("script.yaml", script)
	write("rules.yaml", firstRules)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
workspace: ws
agents:
  - name: a
    tools: [read_file, execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var topics []string
	bus := events.NewBus()
	bus.Subscribe("approval.*", func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		var tool, decision string
		switch d := ev.Data.(type) {
		case approval.DecidedEvent:
			tool, decision = d.Tool, string(d.Decision)
			if ev.TurnID == "" || ev.TurnID != d.TurnID {
				t.Errorf("approval.decided of turn %q carries turn_id %q", ev.TurnID, d.TurnID)
			}
		case approval.RuleErrorEvent:
			tool = d.Tool
		}
		topics = append(topics, strings.TrimSpace(fmt.Sprint(ev.Topic, " ", tool, " ", decision)))
	})
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithEvents(bus))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	results := func() map[string]string {
		t.Helper()
		msgs, err := rt.History(context.Background(), "a", "k")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range msgs {
			if m.ToolCallID != "" {
				out[m.ToolCallID] = m.Content
			}
		}
		return out
	}
	send := func() {
		t.Helper()
		if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("go")); err != nil {
			t.Fatal(err)
		}
	}

	send()
	got := results()
	if !strings.Contains(got["r"], "remember the milk") {
		t.Errorf("approved read_file = %q", got["r"])
	}
	if want := `tool call denied: rule "no rm" decides deny: rm is not allowed`; got["x"] != want {
		t.Errorf("denied execute_command = %q\nwant %q", got["x"], want)
	}

	// An edit: reads are now asked, and commands are fine.
	write("rules.yaml", "default: approve\nrules:\n  - name: ask reads\n    when: tool.category == \"read\"\n    decision: deny\n    reason: no reading today\n")
	send()
	got = results()
	if want := `tool call denied: rule "ask reads" decides deny: no reading today`; got["r"] != want {
		t.Errorf("after the edit, read_file = %q\nwant %q", got["r"], want)
	}

	// A broken edit: the rules in force stay, and an event says why.
	write("rules.yaml", "default: approve\nrules:\n  - name: broken\n    when: tool.name ==\n    decision: deny\n")
	send()
	if got = results(); !strings.HasPrefix(got["r"], "tool call denied: rule \"ask reads\"") {
		t.Errorf("after a broken edit, read_file = %q, want the previous rules' decision", got["r"])
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(topics, "\n")
	for _, want := range []string{"approval.decided read_file approve", "approval.decided execute_command deny", "approval.reload_failed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %q:\n%s", want, joined)
		}
	}
}

const askScript = `
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: deploy, id: d1, args: {env: prod}}]
          - text: "not reached before the answer"
      - steps:
          - text: "after: {{ .LastMessage }}"
    fallback:
      steps:
        - text: "fallback"
`

// project is a directory with a scripted model's script, a rules file and
// a config, and a counting deploy tool: what the approval tests share.
type project struct {
	t    *testing.T
	dir  string
	cfg  *config.File
	runs atomic.Int32
}

// newProject writes script and rules and parses agentsYAML (the config's
// agents: section) as its config.
func newProject(t *testing.T, script, rules, agentsYAML string) *project {
	t.Helper()
	p := &project{t: t, dir: t.TempDir()}
	for name, data := range map[string]string{"script.yaml": script, "rules.yaml": rules} {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(filepath.Join(p.dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\n"+agentsYAML))
	if err != nil {
		t.Fatal(err)
	}
	p.cfg = cfg
	return p
}

// deploy is a tool that counts its runs.
func (p *project) deploy() pipeline.Tool {
	return pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "deploy", Description: "Deploys.", Category: pipeline.CategoryExecute},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			p.runs.Add(1)
			return &pipeline.ToolResult{Content: "deployed"}, nil
		}}
}

// open starts a runtime on the project with the deploy tool; the test
// closes it.
func (p *project) open(opts ...runtime.Option) *runtime.Runtime {
	p.t.Helper()
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(p.cfg), runtime.WithTool(p.deploy())}, opts...)...)
	if err != nil {
		p.t.Fatal(err)
	}
	return rt
}

const deployAgent = `agents:
  - name: a
    tools: [deploy]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`

// TestAsk: an ask pauses the turn; approving resumes it and runs the call
// exactly once, with its result where the placeholder was; denying, or no
// answer in time, resumes it without running the call.
func TestAsk(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		resolve func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error)
		runs    int32
		result  string
		reply   string
	}{
		{"approve", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(ctx, id, "approve")
		},
			1, "deployed", "after: A human approved the call of deploy; it ran."},
		{"deny", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) { return rt.Answer(ctx, id, "no") },
			0, "tool call denied: a human denied it", "after: A human denied the call of deploy; it did not run."},
		{"reject with a reason", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Reject(ctx, id, "not on a Friday")
		}, 0, "tool call denied: a human denied it: not on a Friday", "after: A human denied the call of deploy (not on a Friday); it did not run."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t, askScript, "default: ask\nrules: []\n", deployAgent)
			rt := p.open(runtime.WithMemoryStore(), runtime.WithoutExpiryTimer())
			runs := &p.runs
			defer rt.Close()
			res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("ship it"))
			if err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("Send = %+v, %v; want paused", res, err)
			}
			items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
			if len(items) != 1 || items[0].Kind != "approval" || items[0].CallID != "d1" || runs.Load() != 0 {
				t.Fatalf("items = %+v, runs = %d", items, runs.Load())
			}
			res, err = tt.resolve(rt, items[0].ID)
			if err != nil || res.Response.Content != tt.reply {
				t.Fatalf("resolve = %+v, %v\nwant reply %q", res, err, tt.reply)
			}
			if runs.Load() != tt.runs {
				t.Errorf("the tool ran %d times, want %d", runs.Load(), tt.runs)
			}
			msgs, _ := rt.History(ctx, "a", "k")
			var result string
			for _, m := range msgs {
				if m.ToolCallID == "d1" {
					result = m.Content
				}
			}
			if result != tt.result {
				t.Errorf("the call's result = %q, want %q", result, tt.result)
			}
		})
	}
}

// TestAskTimeout: no answer in time counts as deny.
func TestAskTimeout(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(1_800_000_000+now.Load(), 0) }
	p := newProject(t, askScript, "default: ask\nrules: []\n", strings.Replace(deployAgent, "rules: rules.yaml}", "rules: rules.yaml, timeout: 10m}", 1))
	rt := p.open(runtime.WithMemoryStore(), runtime.WithClock(clock), runtime.WithoutExpiryTimer())
	runs := &p.runs
	defer rt.Close()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("ship it")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	now.Store(11 * 60)
	expired, err := rt.ExpirePending(ctx)
	if err != nil || len(expired) != 1 || expired[0].Status != ledger.Timeout {
		t.Fatalf("ExpirePending = %+v, %v", expired, err)
	}
	msgs, _ := rt.History(ctx, "a", "k")
	last := msgs[len(msgs)-1].Content
	if runs.Load() != 0 || last != "after: Nobody approved the call of deploy in time; it did not run." {
		t.Fatalf("runs %d, last message %q", runs.Load(), last)
	}
}

// TestMistakeLimit: tool calls that fail in a row pause the turn at the
// limit for a human, whose guidance resumes it; a success resets the count.
func TestMistakeLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`
agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: flaky, id: f1, args: {ok: false}}]
          - tool_calls: [{name: flaky, id: f2, args: {ok: true}}]
          - tool_calls: [{name: flaky, id: f3, args: {ok: false}}]
          - tool_calls: [{name: flaky, id: f4, args: {ok: false}}]
          - text: "not reached"
      - steps:
          - text: "resumed: {{ .LastMessage }}"
`), 0o644)
	os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("default: approve\nrules: []\n"), 0o644)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    tools: [flaky]
    extensions: [{name: approval, config: {rules: rules.yaml, mistake_limit: 2}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	flaky := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "flaky", Description: "Fails unless ok.", Category: pipeline.CategoryRead},
		Func: func(_ context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			if strings.Contains(string(c.Arguments()), "true") {
				return &pipeline.ToolResult{Content: "fine"}, nil
			}
			return nil, fmt.Errorf("it broke")
		}}
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithTool(flaky), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishPaused || res.Steps != 4 {
		t.Fatalf("Send = %+v, %v; want paused after the 4th step (fail, ok, fail, fail)", res, err)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 || items[0].Kind != "mistakes" || items[0].CallID != "f4" {
		t.Fatalf("items = %+v", items)
	}
	res, err = rt.Answer(ctx, items[0].ID, "use the cache instead")
	if err != nil || res.Response.Content != "resumed: 2 tool calls in a row failed. The user says: use the cache instead" {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
}

// TestAskAcrossRestart: the ask survives the process; approving in the next
// one runs the call once.
func TestAskAcrossRestart(t *testing.T) {
	ctx := context.Background()
	p := newProject(t, askScript, "default: ask\nrules: []\n", deployAgent)
	runs := &p.runs
	open := func() *runtime.Runtime { return p.open(runtime.WithDataDir(filepath.Join(p.dir, "data"))) }
	rt := open()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("ship it")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	rt.Close()
	rt = open()
	defer rt.Close()
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 {
		t.Fatalf("after restart: %+v", items)
	}
	if _, err := rt.Answer(ctx, items[0].ID, "approve"); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the call ran %d times, want 1", runs.Load())
	}
}

// TestChain: rules see the chain of agents that started the turn.
func TestChain(t *testing.T) {
	ctx := context.Background()
	p := newProject(t, `
agents:
  worker: {fallback: {steps: [{text: "worker done"}]}}
  helper:
    fallback:
      steps:
        - tool_calls: [{name: deploy, id: d}]
        - text: "helper: {{ .LastMessage }}"
`, `
default: approve
rules:
  - name: not on behalf of another agent
    when: chain.depth > 0 && chain.agents[0] == "worker"
    decision: deny
    reason: delegated turns cannot deploy
`, `agents:
  - name: worker
    extensions: [{name: ask}]
  - name: helper
    tools: [deploy]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`)
	var answer string
	ask := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				a, err := tc.Agents().Request(ctx, "helper", "deploy please", pipeline.AgentCallOptions{})
				if err != nil {
					return nil, err
				}
				answer = a
				return tc.Next(ctx)
			})
			return nil
		}), nil
	}
	rt := p.open(runtime.WithMemoryStore(), runtime.WithExtension("ask", ask))
	defer rt.Close()
	if _, err := rt.Send(ctx, "worker", "k", runtime.UserMessage("go")); err != nil {
		t.Fatal(err)
	}
	if want := `helper: tool call denied: rule "not on behalf of another agent" decides deny: delegated turns cannot deploy`; answer != want {
		t.Errorf("delegated = %q\nwant %q", answer, want)
	}
	// Asked directly, the helper deploys.
	res, err := rt.Send(ctx, "helper", "direct", runtime.UserMessage("deploy"))
	if err != nil || res.Response.Content != "helper: deployed" {
		t.Fatalf("direct = %+v, %v", res, err)
	}
}

// TestDelegationNarrowing: when another agent started the turn, by
// call_agent or ctx.agents, the caller's rules judge the call too, and the
// stricter decision wins: a child's own rules can only make it stricter.
func TestDelegationNarrowing(t *testing.T) {
	const (
		denyDeploy    = "default: approve\nrules:\n  - name: no deploys\n    when: tool.name == \"deploy\"\n    decision: deny\n    reason: releases are frozen\n"
		askDeploy     = "default: approve\nrules:\n  - name: deploys need a human\n    when: tool.name == \"deploy\"\n    decision: ask\n"
		approveAll    = "default: approve\nrules: []\n"
		childApproves = "default: deny\nrules:\n  - name: deploys are mine\n    when: tool.name == \"deploy\"\n    decision: approve\n"
	)
	const script = `
agents:
  root:
    turns: [{match: "report", steps: [{text: "root done"}]}]
    fallback: {steps: [{tool_calls: [{name: call_agent, args: {agent_id: lead, message: "ship it"}}]}, {text: "delegated"}]}
  lead:
    turns: [{match: "report", steps: [{text: "lead done"}]}]
    fallback: {steps: [{tool_calls: [{name: call_agent, args: {agent_id: coder, message: "deploy it"}}]}, {text: "delegated"}]}
  requester: {fallback: {steps: [{text: "requested"}]}}
  coder:
    fallback: {steps: [{tool_calls: [{name: deploy, id: d}]}, {text: "coder: {{ .LastMessage }}"}]}
`
	tests := []struct {
		name             string
		root, lead, mine string // rules files; "" loads no approval extension
		from             string // who starts: root, lead, requester (ctx.agents) or coder (direct)
		want             string // the deploy call's result, or "ask: " and the explanation
		runs             int32
	}{
		{"caller denies, child approves: denied", "", denyDeploy, childApproves, "lead",
			`tool call denied: the rules of lead, which called this agent, are stricter: rule "no deploys" decides deny: releases are frozen`, 0},
		{"asked directly, the child's own rules", "", denyDeploy, childApproves, "coder", "deployed", 1},
		{"caller approves, child denies: the child's stricter rules stand", "", approveAll, denyDeploy, "lead",
			`tool call denied: rule "no deploys" decides deny: releases are frozen`, 0},
		{"caller asks: ask", "", askDeploy, childApproves, "lead",
			`ask: the rules of lead, which called this agent, are stricter: rule "deploys need a human" decides ask`, 0},
		{"caller without rules: the child's", "", "", childApproves, "lead", "deployed", 1},
		{"the whole ancestry: root's rules reach the grandchild", denyDeploy, "", childApproves, "root",
			`tool call denied: the rules of root, which called this agent, are stricter: rule "no deploys" decides deny: releases are frozen`, 0},
		{"ctx.agents request: the requester's rules", "", "", childApproves, "requester",
			`tool call denied: the rules of requester, which called this agent, are stricter: rule "no deploys" decides deny: releases are frozen`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ext := func(file, rules string) string {
				if rules == "" {
					return "[]"
				}
				return "[{name: approval, config: {rules: " + file + "}}]"
			}
			requesterRules, requesterExts := "", "[{name: ask}]"
			if tt.from == "requester" {
				requesterRules, requesterExts = denyDeploy, "[{name: ask}, {name: approval, config: {rules: requester.yaml}}]"
			}
			p := newProject(t, script, approveAll, `agents:
  - name: root
    tools: [call_agent]
    extensions: `+ext("root.yaml", tt.root)+`
  - name: lead
    tools: [call_agent]
    extensions: `+ext("lead.yaml", tt.lead)+`
  - name: requester
    extensions: `+requesterExts+`
  - name: coder
    tools: [deploy]
    extensions: `+ext("coder.yaml", tt.mine)+`
`)
			for file, rules := range map[string]string{"root.yaml": tt.root, "lead.yaml": tt.lead, "requester.yaml": requesterRules, "coder.yaml": tt.mine} {
				if err := os.WriteFile(filepath.Join(p.dir, file), []byte(rules), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ask := func(extensions.Config) (extensions.Extension, error) {
				return extensions.Func(func(api *extensions.API) error {
					api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
						if _, err := tc.Agents().Request(ctx, "coder", "deploy please", pipeline.AgentCallOptions{}); err != nil {
							return nil, err
						}
						return tc.Next(ctx)
					})
					return nil
				}), nil
			}
			rt := p.open(runtime.WithMemoryStore(), runtime.WithExtension("ask", ask))
			defer rt.Close()
			if _, err := rt.Send(ctx, tt.from, "k", runtime.UserMessage("go")); err != nil {
				t.Fatal(err)
			}
			if err := rt.WaitTasks(ctx); err != nil {
				t.Fatal(err)
			}
			got := ""
			msgs, err := rt.History(ctx, "coder", "k")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.ToolCallID == "d" {
					got = m.Content
				}
			}
			if strings.HasPrefix(tt.want, "ask: ") {
				items, err := rt.Pending(ctx, ledger.Filter{Agent: "coder", Open: true})
				if err != nil || len(items) != 1 {
					t.Fatalf("pending = %v, %v; want one approval", items, err)
				}
				var req struct{ Explanation string }
				if err := json.Unmarshal(items[0].Request, &req); err != nil {
					t.Fatal(err)
				}
				got = "ask: " + req.Explanation
			}
			if got != tt.want {
				t.Errorf("deploy = %q\nwant    %q", got, tt.want)
			}
			if n := p.runs.Load(); n != tt.runs {
				t.Errorf("deploy ran %d times, want %d", n, tt.runs)
			}
		})
	}
}

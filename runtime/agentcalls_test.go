package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

const agentsScript = `
agents:
  worker: {fallback: {steps: [{text: "worker answers {{ .LastMessage }}"}]}}
  helper: {fallback: {steps: [{text: "helper says {{ .Input }}"}]}}
  critic: {fallback: {steps: [{text: "critic says {{ .Input }}"}]}}
  observer: {fallback: {steps: [{text: "noted"}]}}
`

// caller is an extension whose turn middleware calls target before next,
// as its config says, and injects the answer as a system message.
type callerCfg struct {
	Target  string `yaml:"target"`
	Mode    string `yaml:"mode"` // request (default) or send
	Timeout string `yaml:"timeout"`
}

type recorded struct {
	mu   sync.Mutex
	meta []map[string]any
	errs []error
}

func (r *recorded) add(md map[string]any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if md != nil {
		r.meta = append(r.meta, md)
	}
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func callerExtension(rec *recorded) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		var c callerCfg
		if err := cfg.Decode(&c); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				if t.Input().Kind == pipeline.InputAgentRequest {
					rec.add(t.Input().Metadata, nil)
				}
				if c.Target == "" {
					return t.Next(ctx)
				}
				var o pipeline.AgentCallOptions
				o.Metadata = map[string]any{"purpose": "test"}
				if c.Timeout != "" {
					o.Timeout, _ = time.ParseDuration(c.Timeout)
				}
				if c.Mode == "send" {
					if err := t.Agents().Send(ctx, c.Target, "observe: "+t.Input().Text, o); err != nil {
						return nil, err
					}
					return t.Next(ctx)
				}
				answer, err := t.Agents().Request(ctx, c.Target, "about: "+t.Input().Text, o)
				if err != nil {
					rec.add(nil, err)
					return nil, err
				}
				if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend,
					Message: pipeline.Message{Role: pipeline.RoleSystem, Content: "unconscious: " + answer}}); err != nil {
					return nil, err
				}
				return t.Next(ctx)
			})
			return nil
		}), nil
	}
}

func agentsHarness(t *testing.T, cfg string, rec *recorded, opts ...runtime.Option) *harness {
	t.Helper()
	return newHarness(t, cfg, agentsScript, append([]runtime.Option{runtime.WithExtension("caller", callerExtension(rec))}, opts...)...)
}

func TestAgentsRequest(t *testing.T) {
	rec := &recorded{}
	h := agentsHarness(t, `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: helper}}]
  - name: helper
    extensions: [{name: caller}]
`, rec)
	res := h.mustSend("worker", "k", "plan the day")
	if res.Response.Content != "worker answers plan the day" {
		t.Errorf("response = %q", res.Response.Content)
	}
	got := strings.Join(h.history("worker", "k"), "\n")
	if !strings.Contains(got, "unconscious: helper says about: plan the day") {
		t.Errorf("worker history:\n%s", got)
	}
	if strings.Count(got, "about:") != 1 {
		t.Errorf("the request itself reached the caller's history:\n%s", got)
	}
	if hh := h.history("helper", "k"); len(hh) != 2 {
		t.Errorf("helper history = %q, want the request and the answer, in the caller's instance key", hh)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.meta) != 1 {
		t.Fatalf("metadata seen: %v", rec.meta)
	}
	md := rec.meta[0]
	want := map[string]any{"callerAgent": "worker", "callerInstanceKey": "k", "callerTurnId": "turn-1", "callSource": "extension-middleware", "purpose": "test"}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("metadata %s = %v, want %v", k, md[k], v)
		}
	}
	if !reflect.DeepEqual(md["chain"], []string{"worker/k"}) {
		t.Errorf("chain = %v", md["chain"])
	}
}

func TestAgentsCycleAndDepth(t *testing.T) {
	tests := []struct {
		name, cfg string
		opts      []runtime.Option
		is        error
		want      string
	}{
		{"A → B → A", `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: critic}}]
  - name: critic
    extensions: [{name: caller, config: {target: worker}}]
`, nil, runtime.ErrCycle, `call agent "worker": agent call cycle: worker/k → critic/k → worker/k`},
		{"A → B → C → A", `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: critic}}]
  - name: critic
    extensions: [{name: caller, config: {target: helper}}]
  - name: helper
    extensions: [{name: caller, config: {target: worker}}]
`, nil, runtime.ErrCycle, `agent call cycle: worker/k → critic/k → helper/k → worker/k`},
		{"depth limit", `
agent_calls: {max_depth: 2}
agents:
  - name: worker
    extensions: [{name: caller, config: {target: critic}}]
  - name: critic
    extensions: [{name: caller, config: {target: helper}}]
  - name: helper
    extensions: [{name: caller, config: {target: observer}}]
  - name: observer
`, nil, runtime.ErrDepth, `agent call chain too deep: worker/k → critic/k → helper/k → observer/k is deeper than 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorded{}
			h := agentsHarness(t, tt.cfg, rec, tt.opts...)
			_, err := h.send(context.Background(), "worker", "k", "go")
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %v containing %q", err, tt.is, tt.want)
			}
		})
	}
}

func TestAgentsTimeout(t *testing.T) {
	rec := &recorded{}
	blocked := make(chan struct{})
	slow := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				<-ctx.Done() // never answers; must be aborted
				close(blocked)
				return nil, ctx.Err()
			})
			return nil
		}), nil
	}
	h := agentsHarness(t, `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: helper, timeout: 50ms}}]
  - name: helper
    extensions: [{name: slow}]
`, rec, runtime.WithExtension("slow", slow))
	_, err := h.send(context.Background(), "worker", "k", "go")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `call agent "helper" instance "k": no answer within 50ms (its turn was aborted)`) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("the target's turn was left running")
	}
}

func TestAgentsSend(t *testing.T) {
	rec := &recorded{}
	done := make(chan events.Event, 1)
	h := agentsHarness(t, `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: observer, mode: send}}]
  - name: observer
    extensions: [{name: caller}]
`, rec)
	h.rt.Events().Subscribe(events.TurnFinished, func(ev events.Event) {
		if ev.Agent == "observer" {
			done <- ev
		}
	})
	if res := h.mustSend("worker", "k", "hello"); res.Response.Content != "worker answers hello" {
		t.Errorf("worker = %q", res.Response.Content)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sent turn never ran")
	}
	if got := h.history("observer", "k"); len(got) != 2 || !strings.Contains(got[0], "observe: hello") {
		t.Errorf("observer history = %q", got)
	}
	if got := strings.Join(h.history("worker", "k"), "\n"); strings.Contains(got, "observe") {
		t.Errorf("the send reached the caller's history:\n%s", got)
	}
}

// TestNoAgentsOnToolCalls: toolCall contexts offer no agent calls.
func TestNoAgentsOnToolCalls(t *testing.T) {
	if _, ok := reflect.TypeOf(&pipeline.ToolCallContext{}).MethodByName("Agents"); ok {
		t.Fatal("ToolCallContext has an Agents method")
	}
	for _, typ := range []any{&pipeline.TurnContext{}, &pipeline.StepContext{}} {
		if _, ok := reflect.TypeOf(typ).MethodByName("Agents"); !ok {
			t.Errorf("%T lacks Agents", typ)
		}
	}
}

// countingTransport wraps the in-process transport of a runtime.
type countingTransport struct {
	rt    func() *runtime.Runtime
	mu    sync.Mutex
	calls []string
}

func (c *countingTransport) Deliver(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	c.mu.Lock()
	c.calls = append(c.calls, agent+"/"+key)
	c.mu.Unlock()
	return c.rt().Deliver(ctx, agent, key, in)
}

// TestAgentsTransport: agent calls go through the configured transport.
func TestAgentsTransport(t *testing.T) {
	rec := &recorded{}
	var h *harness
	tr := &countingTransport{rt: func() *runtime.Runtime { return h.rt }}
	h = agentsHarness(t, `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: helper}}]
  - name: helper
`, rec, runtime.WithTransport(tr))
	h.mustSend("worker", "k", "hi")
	if len(tr.calls) != 1 || tr.calls[0] != "helper/k" {
		t.Errorf("transport calls = %q", tr.calls)
	}
}

// TestAgentsHammer: many instances calling one another at once (a chain
// worker → critic → helper on each of 40 keys, and sends to an observer),
// under -race: no deadlock, every turn answers, and no goroutine outlives
// Close.
func TestAgentsHammer(t *testing.T) {
	before := goroutines()
	rec := &recorded{}
	h := newHarness(t, `
agents:
  - name: worker
    extensions: [{name: caller, config: {target: critic}}, {name: sender, config: {target: observer, mode: send}}]
  - name: critic
    extensions: [{name: caller, config: {target: helper}}]
  - name: helper
  - name: observer
`, agentsScript, runtime.WithExtension("caller", callerExtension(rec)), runtime.WithExtension("sender", callerExtension(rec)))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 40 {
		wg.Go(func() {
			for j := range 3 {
				key := fmt.Sprintf("k%d", i)
				res, err := h.send(context.Background(), "worker", key, fmt.Sprintf("job %d", j))
				if err != nil {
					errs <- err
					return
				}
				if !strings.HasPrefix(res.Response.Content, "worker answers") {
					errs <- fmt.Errorf("%s: %q", key, res.Response.Content)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

func goroutines() int { return goruntime.NumGoroutine() }

// waitGoroutines waits for the goroutine count to come back to before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, %d before", goroutines(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSystemTools: list_agents shows the other agents and what they are
// for, as JSON the model reads (not escaped for HTML); get_my_tools the
// tools of the step.
func TestSystemTools(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: lead
    description: plans the work
    tools: [list_agents, get_my_tools]
  - name: coder
    description: writes the code <fast & well>
  - name: tester
`, `
agents:
  lead:
    fallback:
      steps:
        - tool_calls: [{name: list_agents, id: l}, {name: get_my_tools, id: g}]
        - text: "done"
`)
	h.mustSend("lead", "k", "who can help?")
	msgs, err := h.rt.History(context.Background(), "lead", "k")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range msgs {
		if m.ToolCallID != "" {
			got[m.ToolCallID] = m.Content
		}
	}
	if want := `{"agents":[{"name":"coder","description":"writes the code <fast & well>"},{"name":"tester"}]}`; got["l"] != want {
		t.Errorf("list_agents = %s\nwant %s", got["l"], want)
	}
	if !strings.HasPrefix(got["g"], `[{"name":"list_agents",`) || !strings.Contains(got["g"], `"name":"get_my_tools"`) || strings.Contains(got["g"], "read_file") {
		t.Errorf("get_my_tools = %s", got["g"])
	}
}

// TestAgentsCrossTurnCycle: two independent turns that request each
// other's instance would each hold its slot waiting for the other until
// the timeout; the wait-for graph fails the second request at once.
func TestAgentsCrossTurnCycle(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	barrier := func(cfg extensions.Config) (extensions.Extension, error) {
		var c callerCfg
		if err := cfg.Decode(&c); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				if tc.Input().Kind != pipeline.InputUserMessage {
					return tc.Next(ctx)
				}
				arrived.Done()
				arrived.Wait() // both turns run, each holding its instance
				if _, err := tc.Agents().Request(ctx, c.Target, "hi", pipeline.AgentCallOptions{}); err != nil {
					return nil, err
				}
				return tc.Next(ctx)
			})
			return nil
		}), nil
	}
	// A cycle missed would wait for the timeout: an hour, past the test's
	// own deadline.
	h := newHarness(t, `
agent_calls: {timeout: 1h}
agents:
  - name: worker
    extensions: [{name: barrier, config: {target: critic}}]
  - name: critic
    extensions: [{name: barrier, config: {target: worker}}]
`, agentsScript, runtime.WithExtension("barrier", barrier))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 2)
	for _, a := range []string{"worker", "critic"} {
		go func() {
			_, err := h.send(ctx, a, "k", "start")
			errs <- err
		}()
	}
	var cycles, ok int
	for range 2 {
		err := <-errs
		switch {
		case err == nil:
			ok++
		case errors.Is(err, runtime.ErrCycle):
			cycles++
			if !regexp.MustCompile(`agent call cycle: (worker/k → critic/k → worker/k \(a turn of critic/k waits for worker/k already\)|critic/k → worker/k → critic/k \(a turn of worker/k waits for critic/k already\))`).MatchString(err.Error()) {
				t.Errorf("cycle error = %v", err)
			}
		default:
			t.Errorf("err = %v", err)
		}
	}
	if cycles != 1 || ok != 1 {
		t.Errorf("%d cycles and %d answers, want one of each", cycles, ok)
	}
}

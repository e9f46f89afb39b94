package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// modelLine starts every test config: the scripted model, reading
// script.yaml next to the config.
const modelLine = "model: {provider: scripted, script: script.yaml}\n"

// harness is a runtime built for one test from an inline config and script,
// with an in-memory store and the scripted model behind a [recorder].
type harness struct {
	t   *testing.T
	dir string
	rt  *runtime.Runtime
	rec *recorder
}

// newHarness writes script to script.yaml in a new temporary directory,
// parses modelLine+cfg as ganglion.yaml there (so relative paths resolve in
// it) and starts a runtime on them. opts come last and so win. The runtime is
// closed when the test ends.
func newHarness(t *testing.T, cfg, script string, opts ...runtime.Option) *harness {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	rec := &recorder{p: sc}
	all := append([]runtime.Option{
		runtime.WithConfig(parseConfig(t, dir, modelLine+cfg)),
		runtime.WithMemoryStore(),
		runtime.WithModel(rec),
	}, opts...)
	rt, err := runtime.New(context.Background(), all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &harness{t: t, dir: dir, rt: rt, rec: rec}
}

func parseConfig(t testing.TB, dir, cfg string) *config.File {
	t.Helper()
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return c
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// send runs a turn with a user message.
func (h *harness) send(ctx context.Context, agent, key, text string) (*pipeline.TurnResult, error) {
	return h.rt.Send(ctx, agent, key, runtime.UserMessage(text))
}

// mustSend runs a turn that must succeed.
func (h *harness) mustSend(agent, key, text string) *pipeline.TurnResult {
	h.t.Helper()
	res, err := h.send(context.Background(), agent, key, text)
	if err != nil {
		h.t.Fatalf("Send(%q, %q, %q): %v", agent, key, text, err)
	}
	return res
}

// history returns the stored history of an instance, one line a message.
func (h *harness) history(agent, key string) []string {
	h.t.Helper()
	msgs, err := h.rt.History(context.Background(), agent, key)
	if err != nil {
		h.t.Fatalf("History: %v", err)
	}
	return describeAll(msgs)
}

// describe renders a message on one line:
//
//	user: hi
//	assistant: Let me look. +call(c1 echo {"text":"x"})
//	tool(c1 echo): echo: x       (tool! when IsError)
func describe(m pipeline.Message) string {
	var b strings.Builder
	if m.Role == pipeline.RoleTool {
		b.WriteString("tool")
		if m.IsError {
			b.WriteString("!")
		}
		fmt.Fprintf(&b, "(%s %s):", m.ToolCallID, m.Name)
	} else {
		b.WriteString(string(m.Role) + ":")
	}
	if m.Reasoning != "" {
		fmt.Fprintf(&b, " [reasoning: %s]", m.Reasoning)
	}
	if m.Content != "" {
		b.WriteString(" " + m.Content)
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, " +call(%s %s %s)", c.ID, c.Name, c.Arguments)
	}
	return b.String()
}

func describeAll(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = describe(m)
	}
	return out
}

// checkLines compares two listings line by line.
func checkLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s:\n got:\n\t%s\nwant:\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
}

// checkErr checks that err's text is want, or that err is nil when want is "".
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("err = %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("err = nil, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("err:\n got %q\nwant %q", err.Error(), want)
	}
}

// recorder is a model.Provider that remembers what each request showed the
// model (a deep copy: the runtime's request is a view it keeps changing) and
// delegates to the scripted model.
type recorder struct {
	p    model.Provider
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	Agent, Instance, TurnID, System string
	Kind                            pipeline.InputKind
	Turn, Step                      int
	Messages                        []pipeline.Message
	Tools                           []string
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	s := seenRequest{Agent: req.Agent, Instance: req.InstanceKey, TurnID: req.TurnID, System: req.System, Kind: req.InputKind,
		Turn: req.Turn, Step: req.Step, Messages: make([]pipeline.Message, req.Messages.Len())}
	for i := range req.Messages.Len() {
		m := req.Messages.At(i)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = slices.Clone(m.ToolCalls[j].Arguments)
		}
		if m.Metadata != nil {
			md := make(map[string]any, len(m.Metadata))
			for k, v := range m.Metadata {
				md[k] = v
			}
			m.Metadata = md
		}
		s.Messages[i] = m
	}
	for _, t := range req.Tools {
		s.Tools = append(s.Tools, t.Name)
	}
	r.mu.Lock()
	r.seen = append(r.seen, s)
	r.mu.Unlock()
	return r.p.Stream(ctx, req)
}

func (r *recorder) requests() []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// calls renders each model call on one line:
//
//	turn-1/1 [echo]: user: hi | assistant: ...
func (r *recorder) calls() []string {
	var out []string
	for _, s := range r.requests() {
		out = append(out, fmt.Sprintf("%s/%d [%s]: %s", s.TurnID, s.Step, strings.Join(s.Tools, ","), strings.Join(describeAll(s.Messages), " | ")))
	}
	return out
}

var _ model.Provider = (*recorder)(nil)

// Tools for the tests.

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

// echoTool answers "echo: <text>".
func echoTool() pipeline.Tool {
	return pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "echo", Description: "Echoes its text.", Category: pipeline.CategoryOther, Parameters: json.RawMessage(echoSchema)},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			var a struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(c.Arguments(), &a); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{Content: "echo: " + a.Text}, nil
		},
	}
}

// funcTool is a tool called name that takes any object and runs fn.
func funcTool(name string, fn pipeline.ToolFunc) pipeline.Tool {
	return pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: name, Description: "A test tool.", Category: pipeline.CategoryOther}, Func: fn}
}

// waitTool is a tool called name that reports each call's instance on
// started and then waits for release to be closed (answering "released") or
// for its context to end (failing with the context's error).
func waitTool(name string, started chan<- string, release <-chan struct{}) pipeline.Tool {
	return funcTool(name, func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		started <- c.InstanceKey()
		select {
		case <-release:
			return &pipeline.ToolResult{Content: "released"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// barrier lets n goroutines through only once all n are inside.
type barrier struct {
	mu  sync.Mutex
	n   int
	all chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

// wait returns nil once n goroutines have called it, or ctx's error.
func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("barrier: not everyone came: %w", ctx.Err())
	}
}

// tracer collects lines from concurrent code.
type tracer struct {
	mu    sync.Mutex
	lines []string
}

func (t *tracer) add(format string, args ...any) {
	t.mu.Lock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
	t.mu.Unlock()
}

func (t *tracer) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.lines)
}

// extension is a native extension factory that runs register.
func extension(register func(api *extensions.API) error) extensions.Factory {
	return func(extensions.Config) (extensions.Extension, error) { return extensions.Func(register), nil }
}

// Synchronisation without sleeps: polling for a state, with a deadline so
// that a broken runtime fails the test instead of hanging it.

// waitUntil polls cond until it holds, failing the test after 10s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s; goroutines:\n%s", what, strings.Join(stacks(), "\n\n"))
		}
		goruntime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
}

// stacks returns the stack of every goroutine, one string each.
func stacks() []string {
	buf := make([]byte, 1<<16)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(strings.TrimSpace(string(buf[:n])), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// parkedIn counts the goroutines that are blocked (not running or runnable)
// with fn on their stack.
func parkedIn(fn string) int {
	n := 0
	for _, s := range stacks() {
		head, _, _ := strings.Cut(s, "\n")
		_, status, _ := strings.Cut(head, "[")
		if strings.Contains(s, fn) && !strings.HasPrefix(status, "running") && !strings.HasPrefix(status, "runnable") {
			n++
		}
	}
	return n
}

// waitQueued waits until n turns of the instance are queued: counted by the
// instance and parked on its slot, so that a turn sent next queues behind them.
func waitQueued(t *testing.T, rt *runtime.Runtime, agent, key string, n int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d turns are queued on %s/%s", n, agent, key), func() bool {
		return runtime.QueuedTurns(rt, agent, key) == n && parkedIn("/engine.(*Slot).Acquire") == n
	})
}

// checkGoroutineLeaks fails the test if goroutines it started still run when
// it ends, after the cleanups registered later (such as closing the runtime).
// Call it first; the test must not run in parallel with others.
func checkGoroutineLeaks(t *testing.T) {
	t.Helper()
	before := map[string]bool{}
	for _, s := range stacks() {
		before[goroutineID(s)] = true
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			var leaked []string
			for _, s := range stacks() {
				if !before[goroutineID(s)] {
					leaked = append(leaked, s)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// goroutineID returns N of a stack starting "goroutine N [...]".
func goroutineID(stack string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(stack, "goroutine "), " ")
	return id
}

// Tests.

const twoAgents = `
agents:
  - name: a
  - name: b
`

const textScript = `
agents:
  a:
    fallback:
      steps:
        - text: "ok"
  b:
    fallback:
      steps:
        - text: "ok"
`

func TestSendErrors(t *testing.T) {
	h := newHarness(t, twoAgents, textScript)
	const keyRule = ` (want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")`
	long := strings.Repeat("k", 257)
	tests := []struct {
		name, agent, key string
		md               map[string]any
		wantErr          string
		wantIs           error
	}{
		{name: "unknown agent", agent: "x", key: "i", wantErr: `unknown agent "x" (agents: a, b)`, wantIs: runtime.ErrUnknownAgent},
		{name: "empty agent", agent: "", key: "i", wantErr: `unknown agent "" (agents: a, b)`, wantIs: runtime.ErrUnknownAgent},
		{name: "empty key", agent: "a", key: "", wantErr: `store: invalid instance key "": empty` + keyRule, wantIs: store.ErrInvalidName},
		{name: "NUL in key", agent: "a", key: "a\x00b", wantErr: `store: invalid instance key "a\x00b": control character "\x00" at offset 1 not allowed` + keyRule, wantIs: store.ErrInvalidName},
		{name: "key not UTF-8", agent: "b", key: "\xff", wantErr: `store: invalid instance key "\xff": invalid UTF-8 at offset 0` + keyRule, wantIs: store.ErrInvalidName},
		{name: "path in key", agent: "a", key: "../b", wantErr: `store: invalid instance key "../b": character "/" at offset 2 not allowed` + keyRule, wantIs: store.ErrInvalidName},
		{name: "dot dot key", agent: "a", key: "..", wantErr: `store: invalid instance key "..": ".." is not allowed as a whole key` + keyRule, wantIs: store.ErrInvalidName},
		{name: "newline in key", agent: "a", key: "k\nadmin", wantErr: `store: invalid instance key "k\nadmin": control character "\n" at offset 1 not allowed` + keyRule, wantIs: store.ErrInvalidName},
		{name: "NATS wildcard in key", agent: "a", key: "a>b", wantErr: `store: invalid instance key "a>b": character ">" at offset 1 not allowed` + keyRule, wantIs: store.ErrInvalidName},
		{name: "reserved metadata", agent: "a", key: "k", md: map[string]any{"truncated": true},
			wantErr: `agent "a" instance "k": metadata key "truncated" is reserved by the runtime: the input's metadata may not set it (it leaves the message out of what the model sees); name your own keys with a prefix, such as "myapp.truncated"`,
			wantIs:  pipeline.ErrReservedMetadata},
		{name: "key too long", agent: "a", key: long, wantErr: `store: invalid instance key "` + long[:80] + `"...: 257 bytes long` + keyRule, wantIs: store.ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := runtime.UserMessage("hi")
			in.Metadata = tt.md
			res, err := h.rt.Send(context.Background(), tt.agent, tt.key, in)
			checkErr(t, err, tt.wantErr)
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false", tt.wantIs)
			}
			if res != nil {
				t.Errorf("result = %+v, want nil", res)
			}
		})
	}
	if n := len(h.rec.requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	t.Run("other methods", func(t *testing.T) {
		ctx := context.Background()
		const want = `unknown agent "x" (agents: a, b)`
		_, err := h.rt.History(ctx, "x", "i")
		checkErr(t, err, want)
		_, err = h.rt.Instances(ctx, "x")
		checkErr(t, err, want)
		_, err = h.rt.ExtensionState(ctx, "x", "i", "audit")
		checkErr(t, err, want)
	})
	if got := h.rt.Agents(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Agents() = %q", got)
	}
}

// TestWithModelNeedsNoModelInConfig: WithModel stands in for every agent's
// model, so the config need not name one.
func TestWithModelNeedsNoModelInConfig(t *testing.T) {
	dir := t.TempDir()
	sc, err := scripted.Parse("script.yaml", []byte(textScript))
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, dir, twoAgents)
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(sc))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer rt.Close()
	res, err := rt.Send(context.Background(), "b", "i", runtime.UserMessage("hi"))
	if err != nil || res.Response.Content != "ok" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if cfg.Agents[0].Model != nil {
		t.Errorf("New changed the caller's config: agent a has model %+v", cfg.Agents[0].Model)
	}

	// Without WithModel, the config must name one.
	_, err = runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err == nil || !strings.Contains(err.Error(), `agent "a": no model: set "model" on the agent or at the top level`) {
		t.Errorf("New without a model: err = %v", err)
	}
}

// TestConcurrentSendsToOneInstance hammers one instance: its turns never
// overlap, and all of them complete.
func TestConcurrentSendsToOneInstance(t *testing.T) {
	var inside, most atomic.Int32
	probe := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			n := inside.Add(1)
			defer inside.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			return tc.Next(ctx)
		})
		return nil
	})
	h := newHarness(t, `
agents:
  - name: a
    tools: [echo]
    extensions: [{name: probe}]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: echo, args: {text: "{{ .Input }}"}}]
        - text: "done"
`, runtime.WithTool(echoTool()), runtime.WithExtension("probe", probe))

	const senders, each = 8, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				res, err := h.send(context.Background(), "a", "i", fmt.Sprintf("g%d-%d", g, i))
				if err != nil || res.FinishReason != pipeline.FinishText || res.Steps != 2 {
					t.Errorf("Send: %+v, %v", res, err)
					return
				}
				mu.Lock()
				ids = append(ids, res.TurnID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("up to %d turns ran at once in one instance, want 1", m)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(strings.TrimPrefix(a, "turn-"))
		y, _ := strconv.Atoi(strings.TrimPrefix(b, "turn-"))
		return x - y
	})
	var want []string
	for i := 1; i <= senders*each; i++ {
		want = append(want, "turn-"+strconv.Itoa(i))
	}
	checkLines(t, "turn IDs", ids, want)
	if n := len(h.history("a", "i")); n != senders*each*4 {
		t.Errorf("history has %d messages, want %d", n, senders*each*4)
	}
}

// queueScript blocks the turn whose input is "first" in the tool "wait";
// every other turn answers at once.
const queueScript = `
agents:
  a:
    turns:
      - match: "^first$"
        steps:
          - tool_calls: [{name: wait, id: w1}]
          - text: "first done"
    fallback:
      steps:
        - text: "{{ .Input }} done"
`

func TestQueuedTurnsRunInArrivalOrder(t *testing.T) {
	started, release := make(chan string, 1), make(chan struct{})
	var order tracer
	recordOrder := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			order.add("%s %s", tc.Input().Text, tc.TurnID())
			return tc.Next(ctx)
		})
		return nil
	})
	h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
    extensions: [{name: order}]
`, queueScript, runtime.WithTool(waitTool("wait", started, release)), runtime.WithExtension("order", recordOrder))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type outcome struct {
		res *pipeline.TurnResult
		err error
	}
	inputs := []string{"first", "q1", "q2", "q3", "q4"}
	results := make([]chan outcome, len(inputs))
	for i, in := range inputs {
		results[i] = make(chan outcome, 1)
		go func() {
			res, err := h.send(ctx, "a", "i", in)
			results[i] <- outcome{res, err}
		}()
		if i == 0 {
			<-started // the first turn holds the instance
		} else {
			waitQueued(t, h.rt, "a", "i", i)
		}
	}
	close(release)
	for i, in := range inputs {
		o := <-results[i]
		if o.err != nil {
			t.Fatalf("Send(%q): %v", in, o.err)
		}
		if want := in + " done"; o.res.Response.Content != want || o.res.TurnID != "turn-"+strconv.Itoa(i+1) {
			t.Errorf("Send(%q) = %s %q, want turn-%d %q", in, o.res.TurnID, o.res.Response.Content, i+1, want)
		}
	}
	checkLines(t, "turns in the order they ran", order.get(),
		[]string{"first turn-1", "q1 turn-2", "q2 turn-3", "q3 turn-4", "q4 turn-5"})
	if n := runtime.QueuedTurns(h.rt, "a", "i"); n != 0 {
		t.Errorf("QueuedTurns = %d after all turns, want 0", n)
	}
}

func TestSendCancelledWhileQueued(t *testing.T) {
	started, release := make(chan string, 1), make(chan struct{})
	h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
`, queueScript, runtime.WithTool(waitTool("wait", started, release)))

	first := make(chan error, 1)
	go func() {
		_, err := h.send(context.Background(), "a", "i", "first")
		first <- err
	}()
	<-started

	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	var res *pipeline.TurnResult
	go func() {
		var err error
		res, err = h.send(ctx, "a", "i", "second")
		queued <- err
	}()
	waitQueued(t, h.rt, "a", "i", 1)
	cancel()
	err := <-queued
	checkErr(t, err, `agent "a" instance "i": waiting for the running turn: context canceled`)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) = false")
	}
	if res == nil || res.FinishReason != pipeline.FinishAborted {
		t.Errorf("result = %+v, want finish reason aborted", res)
	}

	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first turn: %v", err)
	}
	// The cancelled Send never started a turn: the next one is turn 2.
	if res := h.mustSend("a", "i", "third"); res.TurnID != "turn-2" || res.Response.Content != "third done" {
		t.Errorf("next turn = %s %q, want turn-2 \"third done\"", res.TurnID, res.Response.Content)
	}
	checkLines(t, "history", h.history("a", "i"), []string{
		"user: first",
		"assistant: +call(w1 wait {})",
		"tool(w1 wait): released",
		"assistant: first done",
		"user: third",
		"assistant: third done",
	})
}

// TestInstancesRunInParallel: the turns of two instances are inside the same
// tool at once, which a barrier for two requires.
func TestInstancesRunInParallel(t *testing.T) {
	b := newBarrier(2)
	meet := funcTool("meet", func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		if err := b.wait(ctx); err != nil {
			return nil, err
		}
		return &pipeline.ToolResult{Content: "met"}, nil
	})
	h := newHarness(t, `
agents:
  - name: a
    tools: [meet]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: meet, id: m1}]
        - text: "{{ .LastMessage }}"
`, runtime.WithTool(meet))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, key := range []string{"i1", "i2"} {
		wg.Go(func() {
			res, err := h.send(ctx, "a", key, "hi")
			if err != nil || res.Response.Content != "met" {
				t.Errorf("Send(%q) = %+v, %v; want the answer \"met\"", key, res, err)
			}
		})
	}
	wg.Wait()
	keys, err := h.rt.Instances(context.Background(), "a")
	if err != nil || !slices.Equal(keys, []string{"i1", "i2"}) {
		t.Errorf("Instances = %q, %v", keys, err)
	}
}

func TestEvents(t *testing.T) {
	h := newHarness(t, `
agents:
  - name: a
    tools: [echo]
`, `
agents:
  a:
    turns:
      - steps:
          - text: "Let me look."
            tool_calls: [{name: echo, id: c1, args: {text: ping}}]
          - text: "Done."
`, runtime.WithTool(echoTool()))

	var mu sync.Mutex
	var got []events.Event
	unsubscribe := h.rt.Events().Subscribe("*", func(ev events.Event) {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})
	defer unsubscribe()
	h.mustSend("a", "i", "hi")

	mu.Lock()
	defer mu.Unlock()
	var lines []string
	for _, ev := range got {
		if ev.Agent != "a" || ev.Instance != "i" || ev.TurnID != "turn-1" || ev.Source != "runtime" || ev.Time.IsZero() {
			t.Errorf("event %s: agent %q instance %q turn %q source %q time %v", ev.Topic, ev.Agent, ev.Instance, ev.TurnID, ev.Source, ev.Time)
		}
		d := evData(ev)
		line := ev.Topic
		switch ev.Topic {
		case events.TurnStarted:
			line += fmt.Sprintf(" %v %q", d["kind"], d["text"])
		case events.ModelDelta:
			line += fmt.Sprintf(" %v %q", d["kind"], d["text"])
		case events.MessageAppended:
			line += fmt.Sprintf(" %v %v %q", d["id"], d["role"], d["content"])
		case events.ToolStarted:
			line += fmt.Sprintf(" %v %v %v", d["call_id"], d["tool"], d["arguments"])
		case events.ToolFinished:
			line += fmt.Sprintf(" %v %v %q is_error=%v", d["call_id"], d["tool"], d["content"], d["is_error"])
		case events.StepFinished:
			line += fmt.Sprintf(" step=%v tool_calls=%v", d["step"], d["tool_calls"])
		case events.TurnFinished:
			line += fmt.Sprintf(" %v steps=%v %q", d["finish_reason"], d["steps"], d["response"])
		}
		lines = append(lines, line)
	}
	checkLines(t, "events", lines, []string{
		`turn.started user_message "hi"`,
		`message.appended msg-0 user "hi"`,
		`model.delta text "Let me look."`,
		`message.appended msg-1 assistant "Let me look."`,
		`tool.started c1 echo {"text":"ping"}`,
		`tool.finished c1 echo "echo: ping" is_error=false`,
		`message.appended msg-2 tool "echo: ping"`,
		`step.finished step=1 tool_calls=1`,
		`model.delta text "Done."`,
		`message.appended msg-3 assistant "Done."`,
		`step.finished step=2 tool_calls=0`,
		`turn.finished text_response steps=2 "Done."`,
	})
}

func TestClose(t *testing.T) {
	t.Run("Send after Close", func(t *testing.T) {
		h := newHarness(t, twoAgents, queueScript)
		h.mustSend("a", "i", "hello")
		if err := h.rt.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		res, err := h.send(context.Background(), "a", "i", "again")
		checkErr(t, err, "runtime: closed")
		if !errors.Is(err, runtime.ErrClosed) || res != nil {
			t.Errorf("Send after Close = %+v, %v; want nil, ErrClosed", res, err)
		}
	})
	t.Run("idempotent", func(t *testing.T) {
		h := newHarness(t, twoAgents, queueScript)
		for i := range 3 {
			if err := h.rt.Close(); err != nil {
				t.Errorf("Close #%d: %v", i+1, err)
			}
		}
	})
	t.Run("waits for the running turn", func(t *testing.T) {
		started, release := make(chan string, 1), make(chan struct{})
		h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
`, queueScript, runtime.WithTool(waitTool("wait", started, release)))
		turn := make(chan error, 1)
		go func() {
			_, err := h.send(context.Background(), "a", "i", "first")
			turn <- err
		}()
		<-started
		closed := make(chan error, 1)
		go func() { closed <- h.rt.Close() }()
		waitUntil(t, "Close blocks", func() bool { return parkedIn("/runtime.(*Runtime).Close") == 1 })
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a turn was running", err)
		default:
		}
		close(release)
		if err := <-turn; err != nil {
			t.Errorf("the running turn failed: %v", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := h.send(context.Background(), "a", "i", "again"); !errors.Is(err, runtime.ErrClosed) {
			t.Errorf("Send after Close: err = %v, want ErrClosed", err)
		}
	})
	t.Run("a turn that sends while Close waits is refused, not deadlocked", func(t *testing.T) {
		// An agent calling another agent starts a turn from inside a turn.
		// Close must refuse it rather than wait for it forever.
		started, release := make(chan string, 1), make(chan struct{})
		var rt *runtime.Runtime
		nested := make(chan error, 1)
		sendTool := funcTool("wait", func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			started <- c.Name()
			<-release
			_, err := rt.Send(ctx, "a", "other", runtime.UserMessage("nested"))
			nested <- err
			return &pipeline.ToolResult{Content: "sent"}, nil
		})
		h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
`, queueScript, runtime.WithTool(sendTool))
		rt = h.rt
		turn := make(chan error, 1)
		go func() {
			_, err := h.send(context.Background(), "a", "i", "first")
			turn <- err
		}()
		<-started
		closed := make(chan error, 1)
		go func() { closed <- h.rt.Close() }()
		waitUntil(t, "Close blocks", func() bool { return parkedIn("/runtime.(*Runtime).Close") == 1 })
		close(release)
		if err := <-nested; !errors.Is(err, runtime.ErrClosed) {
			t.Errorf("nested Send while closing: err = %v, want ErrClosed", err)
		}
		if err := <-turn; err != nil {
			t.Errorf("the running turn failed: %v", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// TestWorkspaceOnlyWhenUsed: a config whose agents use no workspace tool
// leaves the file system alone; one that does gets its workspace created.
func TestWorkspaceOnlyWhenUsed(t *testing.T) {
	for _, tt := range []struct {
		name, tools string
		created     bool
	}{
		{"no workspace tool", "", false},
		{"a workspace tool", "    tools: [list_files]\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := parseConfig(t, dir, "agents:\n  - name: a\n"+tt.tools)
			rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(&recorder{}))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			_, statErr := os.Stat(filepath.Join(dir, "workspace"))
			if created := statErr == nil; created != tt.created {
				t.Errorf("workspace created = %v, want %v", created, tt.created)
			}
			if want := map[bool]string{true: filepath.Join(dir, "workspace"), false: ""}[tt.created]; rt.Workspace() != want {
				t.Errorf("Workspace() = %q, want %q", rt.Workspace(), want)
			}
		})
	}
}

// TestInstanceCache: idle instances beyond the cache's size are dropped and
// come back from the store intact; a busy one is never dropped.
func TestInstanceCache(t *testing.T) {
	started, release := make(chan string, 1), make(chan struct{})
	h := newHarness(t, `
agents:
  - name: a
    tools: [wait]
`, queueScript, runtime.WithTool(waitTool("wait", started, release)), runtime.WithInstanceCache(2))
	for _, key := range []string{"i1", "i2", "i3"} {
		h.mustSend("a", key, "hello "+key)
	}
	if n := runtime.CachedInstances(h.rt); n != 2 {
		t.Errorf("cached instances = %d, want 2", n)
	}
	// i1 was dropped: it comes back from the store with its history and turn count.
	res := h.mustSend("a", "i1", "again")
	if res.TurnID != "turn-2" {
		t.Errorf("TurnID = %q, want turn-2", res.TurnID)
	}
	checkLines(t, "history of i1", h.history("a", "i1"), []string{
		"user: hello i1", "assistant: hello i1 done", "user: again", "assistant: again done",
	})
	// A running turn keeps its instance, however many others come and go.
	done := make(chan error, 1)
	go func() {
		_, err := h.send(context.Background(), "a", "busy", "first")
		done <- err
	}()
	<-started
	for _, key := range []string{"j1", "j2", "j3", "j4"} {
		h.mustSend("a", key, "hello "+key)
	}
	if n := runtime.CachedInstances(h.rt); n != 2 {
		t.Errorf("cached instances with one busy = %d, want 2 (the busy one and the newest)", n)
	}
	// The busy instance is still the same object: a second turn queues
	// behind the running one instead of running beside it.
	second := make(chan error, 1)
	go func() {
		_, err := h.send(context.Background(), "a", "busy", "second")
		second <- err
	}()
	waitQueued(t, h.rt, "a", "busy", 1)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	checkLines(t, "history of busy", h.history("a", "busy"), []string{
		"user: first", "assistant: +call(w1 wait {})", "tool(w1 wait): released", "assistant: first done",
		"user: second", "assistant: second done",
	})
}

// TestKeysStoredBeforeTheRule: an instance stored under a key the rule for
// new keys now refuses stays listed and readable, but takes no new input.
func TestKeysStoredBeforeTheRule(t *testing.T) {
	st := store.NewMemory()
	ctx := context.Background()
	for _, key := range []string{"team/alice", "k\n", ".."} {
		err := st.Commit(ctx, "a", key, store.Batch{Meta: &store.Meta{NextSeq: 1, Turns: 1},
			Put: []store.Record{{Seq: 0, Message: &pipeline.Message{ID: "msg-0", Role: pipeline.RoleUser, Content: "from before"}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, twoAgents, textScript, runtime.WithStore(st))
	keys, err := h.rt.Instances(ctx, "a")
	if err != nil || !slices.Equal(keys, []string{"..", "k\n", "team/alice"}) {
		t.Fatalf("Instances = %q, %v", keys, err)
	}
	for _, key := range keys {
		if msgs, err := h.rt.History(ctx, "a", key); err != nil || len(msgs) != 1 || msgs[0].Content != "from before" {
			t.Errorf("History(%q) = %v, %v", key, msgs, err)
		}
	}
	_, err = h.send(ctx, "a", "team/alice", "more")
	checkErr(t, err, `store: invalid instance key "team/alice": character "/" at offset 4 not allowed (want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")`)
}

package extensions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/guesttest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// examples are the extensions this folder holds, one directory each;
// testdata/sdkcheck is a guest that checks the SDK against the host.
var examples = []string{"guardrail", "redactor", "tool", "counter", "unconscious", "observer", "testdata/sdkcheck"}

var (
	guests    guesttest.Set
	builtOnce sync.Once
	built     map[string]string // the modules, by example name
	cacheDir  string            // their compiled code
)

func TestMain(m *testing.M) {
	code := m.Run()
	guests.Close()
	os.Exit(code)
}

// modules builds every example the first time it is called, and compiles
// them into cacheDir.
func modules(t *testing.T) {
	t.Helper()
	mods, cache := guests.Build(t, examples...)
	builtOnce.Do(func() { built, cacheDir = mods, cache })
}

// modulePath is where the example's module is built.
func modulePath(ex string) string { return built[filepath.Base(ex)] }

// scenario is a directory holding a config, a script for the scripted
// model and a data directory, which runtimes open one after the other.
//
// The runtimes keep their data in badger, not in memory, for the sake of
// the compilation cache: the runtime's WASM engine caches compiled code
// only in its data directory, whose wasm-cache the scenario links to the
// cache warm filled. Compiling a Go module takes over ten seconds with
// -race.
type scenario struct {
	t   *testing.T
	dir string
	log logtest.Buffer
}

// newScenario writes cfg and script. In cfg, {{name}} stands for the path
// of the example name's module.
func newScenario(t *testing.T, cfg, script string) *scenario {
	t.Helper()
	modules(t)
	s := &scenario{t: t, dir: t.TempDir()}
	for _, ex := range examples {
		cfg = strings.ReplaceAll(cfg, "{{"+filepath.Base(ex)+"}}", modulePath(ex))
	}
	cfg = "model: {provider: scripted, script: script.yaml}\ndata: data\n" + cfg
	for name, data := range map[string]string{"ganglion.yaml": cfg, "script.yaml": script} {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// tryOpen starts a runtime on the scenario with the compilation cache the
// modules were compiled into.
func (s *scenario) tryOpen(logger *slog.Logger, opts ...runtime.Option) (*runtime.Runtime, error) {
	opts = append([]runtime.Option{runtime.WithConfigFile(filepath.Join(s.dir, "ganglion.yaml")), runtime.WithLogger(logger),
		runtime.WithWasmCache(cacheDir)}, opts...)
	return runtime.New(context.Background(), opts...)
}

// open starts a runtime on the scenario, closed when the test ends.
func (s *scenario) open(opts ...runtime.Option) *runtime.Runtime {
	s.t.Helper()
	logger := slog.New(slog.NewTextHandler(&s.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := s.tryOpen(logger, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			s.t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// send runs a turn and fails the test if it fails.
func send(t *testing.T, rt *runtime.Runtime, instance, input string) *pipeline.TurnResult {
	t.Helper()
	res, err := rt.Send(context.Background(), "a", instance, runtime.UserMessage(input))
	if err != nil {
		t.Fatalf("Send(%q): %v", input, err)
	}
	return res
}

func TestGuardrail(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: a
    extensions:
      - wasm: "{{guardrail}}"
        config: {block: ['(?i)\brm\s+-rf\b', '(?i)\bdrop\s+table\b']}
`, `
agents:
  a:
    fallback:
      steps:
        - text: "the model answers {{ .Input }}"
`)
	rt := s.open()
	tests := []struct {
		name, input, want string
	}{
		{"allowed", "list the files", "the model answers list the files"},
		{"blocked", "please RM  -rf / for me", "I can't help with that: the request matches a blocked pattern (RM  -rf)."},
		{"blocked other pattern", "drop table users;", "I can't help with that: the request matches a blocked pattern (drop table)."},
		{"allowed after refusals", "what is rm?", "the model answers what is rm?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := send(t, rt, "k", tt.input)
			if res.FinishReason != pipeline.FinishText || res.Response.Content != tt.want {
				t.Errorf("Send(%q) = %s %q, want %s %q", tt.input, res.FinishReason, res.Response.Content, pipeline.FinishText, tt.want)
			}
		})
	}
	logs := s.log.String()
	if n := strings.Count(logs, "turn refused"); n != 2 {
		t.Errorf("the guardrail logged %d refusals, want 2:\n%s", n, logs)
	}
	if !strings.Contains(logs, `extension=guardrail`) || !strings.Contains(logs, `match=\"drop table\"`) {
		t.Errorf("the refusal log lacks the extension or the guest's attributes:\n%s", logs)
	}
}

// TestGuardrailBadConfig: a setting the guest refuses fails the load, with
// the guest's message at the setting's place in the config file, as a
// native extension's settings are reported.
func TestGuardrailBadConfig(t *testing.T) {
	for _, tt := range []struct{ config, want string }{
		{`{block: ['x', '(unclosed']}`, "agent \"a\": extension \"guardrail\": config.block[1]: error parsing regexp: missing closing ): `(unclosed`"},
		{`{block: []}`, `agent "a": extension "guardrail": config.block: lists no pattern, so the guardrail would refuse nothing`},
		{`{blocks: ['x']}`, `agent "a": extension "guardrail": config.blocks: unknown field "blocks" (known: block)`},
		{`{block: [1]}`, `agent "a": extension "guardrail": config.block[0]: expected a string, found integer 1`},
	} {
		t.Run(tt.config, func(t *testing.T) {
			s := newScenario(t, `
agents:
  - name: a
    extensions: [{wasm: "{{guardrail}}", config: `+tt.config+`}]
`, "agents: {a: {fallback: {steps: [{text: x}]}}}\n")
			_, err := s.tryOpen(slog.New(slog.DiscardHandler))
			// The file, the line and column of the setting, the message, and
			// an excerpt of the file with a caret.
			positioned := regexp.MustCompile(`^\S+/ganglion\.yaml:6:(\d+): ` + regexp.QuoteMeta(tt.want) + "\n(?s:.*)\n> +6 \\| ")
			if err == nil || !positioned.MatchString(err.Error()) {
				t.Fatalf("New: %v\nwant the message %q at line 6 of the config, with the excerpt", err, tt.want)
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	s := newScenario(t, `
workspace: workspace
agents:
  - name: a
    tools: [read_file]
    extensions: [{wasm: "{{redactor}}"}]
`, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: c1, args: {path: env.txt}}]
        - text: "The file says: {{ .LastMessage }}"
`)
	const secret = "sk-AbCdEf0123456789xyz"
	ws := filepath.Join(s.dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := "OPENAI_API_KEY=" + secret + "\nSHORT=sk-tooshort\nSECOND=sk-ZZZZZZZZZZZZZZZZ\n"
	if err := os.WriteFile(filepath.Join(ws, "env.txt"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := s.open()
	res := send(t, rt, "k", "what is in env.txt?")
	got := res.Response.Content
	for _, want := range []string{"OPENAI_API_KEY=[redacted]", "SHORT=sk-tooshort", "SECOND=[redacted]"} {
		if !strings.Contains(got, want) {
			t.Errorf("response %q lacks %q", got, want)
		}
	}
	history, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	var tools int
	for _, m := range history {
		if strings.Contains(m.Content, "sk-AbCdEf") || strings.Contains(m.Content, "sk-ZZZZ") {
			t.Errorf("history message %s (%s) holds a key: %q", m.ID, m.Role, m.Content)
		}
		if m.Role == pipeline.RoleTool {
			tools++
			if m.IsError || !strings.Contains(m.Content, "[redacted]") {
				t.Errorf("tool message = %q (is_error %v), want a redacted result", m.Content, m.IsError)
			}
		}
	}
	if tools != 1 {
		t.Errorf("history holds %d tool messages, want 1", tools)
	}
}

func TestTool(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: a
    extensions: [{wasm: "{{tool}}"}]
`, `
agents:
  a:
    turns:
      - match: "^count"
        steps:
          - tool_calls: [{name: word_count, args: {text: "the quick  brown fox\njumps"}}]
          - text: "{{ .LastMessage }} words"
      - match: "^empty"
        steps:
          - tool_calls: [{name: word_count, args: {text: "   "}}]
          - text: "{{ .LastMessage }}"
      - match: "^schema"
        steps:
          - tool_calls: [{name: word_count, args: {words: 3}}]
          - text: "{{ .LastMessage }}"
`)
	rt := s.open()
	tests := []struct {
		name, input string
		want        string
		isError     bool
	}{
		{"counts", "count", "5 words", false},
		{"tool error", "empty", "tool \"word_count\" failed: word_count: the text is empty", true},
		{"schema violation", "schema", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			instance := tt.name
			res := send(t, rt, instance, tt.input)
			if tt.want != "" && res.Response.Content != tt.want {
				t.Errorf("response %q, want %q", res.Response.Content, tt.want)
			}
			history, err := rt.History(context.Background(), "a", instance)
			if err != nil {
				t.Fatal(err)
			}
			var tool *pipeline.Message
			for i := range history {
				if history[i].Role == pipeline.RoleTool {
					tool = &history[i]
				}
			}
			if tool == nil || tool.Name != "word_count" || tool.IsError != tt.isError {
				t.Fatalf("tool message %+v, want one from word_count with is_error %v", tool, tt.isError)
			}
			if tt.isError && tool.Content == "" {
				t.Error("an error result without a message")
			}
		})
	}
}

func TestCounter(t *testing.T) {
	// The counter's step middleware runs while its turn middleware waits in
	// Next: the host re-enters the Go module. The tool example gives the
	// first turn a second step.
	s := newScenario(t, `
agents:
  - name: a
    extensions:
      - wasm: "{{counter}}"
      - wasm: "{{tool}}"
`, `
agents:
  a:
    turns:
      - match: "^count"
        steps:
          - tool_calls: [{name: word_count, args: {text: "one two three"}}]
          - text: "{{ .LastMessage }}"
    fallback:
      steps:
        - text: "ok"
`)
	ctx := context.Background()
	type counts struct{ Turns, Steps int }
	state := func(rt *runtime.Runtime, instance string) counts {
		t.Helper()
		raw, err := rt.ExtensionState(ctx, "a", instance, "counter")
		if err != nil {
			t.Fatal(err)
		}
		var c counts
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("state %q: %v", raw, err)
		}
		return c
	}
	var (
		mu        sync.Mutex
		published []string
	)
	watch := func(rt *runtime.Runtime) {
		un := rt.Events().Subscribe("counter.*", func(ev events.Event) {
			b, _ := json.Marshal(ev.Data)
			mu.Lock()
			published = append(published, fmt.Sprintf("%s %s %s %s", ev.Topic, ev.Instance, ev.Source, b))
			mu.Unlock()
		})
		t.Cleanup(un)
	}

	rt := s.open()
	watch(rt)
	if res := send(t, rt, "k", "count please"); res.Response.Content != "3" {
		t.Errorf("first turn answered %q, want 3", res.Response.Content)
	}
	if got, want := state(rt, "k"), (counts{1, 2}); got != want {
		t.Errorf("after turn 1: %+v, want %+v", got, want)
	}
	send(t, rt, "k", "hello")
	send(t, rt, "other", "hello")
	if got, want := state(rt, "k"), (counts{2, 3}); got != want {
		t.Errorf("after turn 2: %+v, want %+v", got, want)
	}
	if got, want := state(rt, "other"), (counts{1, 1}); got != want {
		t.Errorf("instance other: %+v, want %+v", got, want)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	// A new runtime on the same data directory (badger): the count goes on.
	rt = s.open()
	watch(rt)
	send(t, rt, "k", "hello again")
	if got, want := state(rt, "k"), (counts{3, 4}); got != want {
		t.Errorf("after a restart: %+v, want %+v", got, want)
	}

	mu.Lock()
	got := strings.Join(published, "\n")
	mu.Unlock()
	want := strings.Join([]string{
		`counter.turn k counter {"turns":1,"steps":2}`,
		`counter.turn k counter {"turns":2,"steps":3}`,
		`counter.turn other counter {"turns":1,"steps":1}`,
		`counter.turn k counter {"turns":3,"steps":4}`,
	}, "\n")
	if got != want {
		t.Errorf("published:\n%s\nwant:\n%s", got, want)
	}
}

// TestUnconscious: a WASM extension asks another agent before the model
// runs (a reflex the model never sees), through the agents_request import,
// and injects the answer; the call is not in the caller's history. Without
// the config's grant, the module is refused at load.
func TestUnconscious(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: worker
    extensions: [{wasm: "{{unconscious}}", agents: [unconscious]}]
  - name: unconscious
`, `
agents:
  worker: {fallback: {steps: [{text: "worker read: {{ .LastMessage }}"}]}}
  unconscious: {fallback: {steps: [{text: "a hunch about {{ .Input }}"}]}}
`)
	rt := s.open()
	res, err := rt.Send(context.Background(), "worker", "k", runtime.UserMessage("the plan"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "worker read: the plan" {
		t.Errorf("response = %q", res.Response.Content)
	}
	msgs, err := rt.History(context.Background(), "worker", "k")
	if err != nil {
		t.Fatal(err)
	}
	// The injected answer (before the turn's input joins), the input, the
	// model's answer; not the call itself.
	if len(msgs) != 3 || msgs[0].Role != "system" || msgs[0].Content != "unconscious: a hunch about the plan" {
		t.Errorf("worker history = %+v", msgs)
	}
	other, _ := rt.History(context.Background(), "unconscious", "k")
	if len(other) != 2 || other[0].Metadata["callerAgent"] != "worker" {
		t.Errorf("unconscious history = %+v", other)
	}

	denied := newScenario(t, `
agents:
  - name: worker
    extensions: [{wasm: "{{unconscious}}"}]
  - name: unconscious
`, "agents: {worker: {fallback: {steps: [{text: x}]}}}\n")
	_, err = denied.tryOpen(slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "its manifest asks to call agents the config does not grant: unconscious") {
		t.Fatalf("without the grant: %v", err)
	}
}

// TestBrainWASM is examples/brain with both halves in WebAssembly: the
// worker loads the unconscious guest (agents_request before the model
// runs) and the observer guest (agents_send after it), and the observer
// agent counts what it is told in its state with a native extension, like
// the brain's tally. The observer's turns run in the background; the test
// waits for each on the runtime's turn.finished event, published once the
// turn's messages are stored.
func TestBrainWASM(t *testing.T) {
	s := newScenario(t, `
agents:
  - name: worker
    extensions:
      - wasm: "{{unconscious}}"
        agents: [unconscious]
      - wasm: "{{observer}}"
        agents: [observer]
  - name: unconscious
  - name: observer
    extensions: [{name: tally}]
`, `
agents:
  worker: {fallback: {steps: [{text: "on it: {{ .Input }}"}]}}
  unconscious: {fallback: {steps: [{text: "a hunch about {{ .Input }}"}]}}
  observer: {fallback: {steps: [{text: "observed"}]}}
`)
	type tallyState struct{ Observations int }
	tally := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				var n tallyState
				if _, err := api.State.Load(ctx, tc.InstanceKey(), &n); err != nil {
					return nil, err
				}
				n.Observations++
				if err := api.State.Save(ctx, tc.InstanceKey(), n); err != nil {
					return nil, err
				}
				return tc.Next(ctx)
			})
			return nil
		}), nil
	}
	rt := s.open(runtime.WithExtension("tally", tally))
	ctx := context.Background()

	// The observer's finished turns, in order (Publish delivers in the
	// publishing goroutine, after the turn's flush).
	observed := make(chan events.Event, 8)
	t.Cleanup(rt.Events().Subscribe(events.TurnFinished, func(ev events.Event) {
		if ev.Agent == "observer" {
			observed <- ev
		}
	}))
	waitObserved := func() events.Event {
		t.Helper()
		select {
		case ev := <-observed:
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("the observer's turn did not finish within 30s")
			return events.Event{}
		}
	}

	inputs := []string{"ship the release", "answer the customer"}
	for i, input := range inputs {
		res, err := rt.Send(ctx, "worker", "k", runtime.UserMessage(input))
		if err != nil {
			t.Fatal(err)
		}
		if want := "on it: " + input; res.FinishReason != pipeline.FinishText || res.Response.Content != want {
			t.Errorf("worker answered %s %q, want %s %q", res.FinishReason, res.Response.Content, pipeline.FinishText, want)
		}
		// Waiting for each observation before the next worker turn keeps
		// the observer's turns in order.
		ev := waitObserved()
		if ev.Instance != "k" {
			t.Errorf("observer turn in instance %q, want k (the caller's)", ev.Instance)
		}
		if data, _ := ev.Data.(events.TurnFinishedData); data.Error != "" || data.Response != "observed" {
			t.Errorf("observer turn finished with %v", ev.Data)
		}
		raw, err := rt.ExtensionState(ctx, "observer", "k", "tally")
		if err != nil {
			t.Fatal(err)
		}
		var n tallyState
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatalf("tally state %q: %v", raw, err)
		}
		if n.Observations != i+1 {
			t.Errorf("after %d worker turns the observer counted %d observations", i+1, n.Observations)
		}
	}

	// The worker's conversation: per turn, the injected answer, the input,
	// the model's answer; neither agent call.
	hist, err := rt.History(ctx, "worker", "k")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, in := range inputs {
		want = append(want, "system: unconscious: a hunch about "+in, "user: "+in, "assistant: on it: "+in)
	}
	if got := roleContents(hist); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("worker history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, m := range hist {
		if m.Metadata["callerAgent"] != nil || strings.Contains(m.Content, "worker said:") {
			t.Errorf("worker history holds an agent call: %+v", m)
		}
	}

	// The callees' conversations: each call is an input from the worker's
	// middleware, in the worker's instance key.
	for _, callee := range []struct {
		agent  string
		inputs []string
	}{
		{"unconscious", inputs},
		{"observer", []string{"worker said: on it: " + inputs[0], "worker said: on it: " + inputs[1]}},
	} {
		hist, err := rt.History(ctx, callee.agent, "k")
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2*len(callee.inputs) {
			t.Errorf("%s history: %q, want %d messages", callee.agent, roleContents(hist), 2*len(callee.inputs))
			continue
		}
		for i, in := range callee.inputs {
			m := hist[2*i]
			if m.Role != pipeline.RoleUser || m.Content != in || m.Metadata["callerAgent"] != "worker" ||
				m.Metadata["callerInstanceKey"] != "k" || m.Metadata["callerTurnId"] != fmt.Sprintf("turn-%d", i+1) ||
				m.Metadata["callSource"] != "extension-middleware" {
				t.Errorf("%s input %d = %s %q %v, want user %q from worker/k turn-%d by %s",
					callee.agent, i, m.Role, m.Content, m.Metadata, in, i+1, "extension-middleware")
			}
		}
	}

	// Without the config's grant, the observer guest is refused at load.
	denied := newScenario(t, `
agents:
  - name: worker
    extensions: [{wasm: "{{observer}}"}]
  - name: observer
`, "agents: {worker: {fallback: {steps: [{text: x}]}}}\n")
	_, err = denied.tryOpen(slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "its manifest asks to call agents the config does not grant: observer") {
		t.Fatalf("without the grant: %v", err)
	}
}

// roleContents renders messages as "role: content".
func roleContents(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ": " + m.Content
	}
	return out
}

package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/audit"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// modelLine starts every test config: the scripted model, reading
// script.yaml next to the config.
const modelLine = "model: {provider: scripted, script: script.yaml}\n"

// script is the model of most tests. Turn 1 calls check twice in one step
// (c1 passes, c2 returns an error result), turn 2 calls it once (c3 passes).
// An input containing "fail" makes the model fail; any later turn answers
// in text.
const script = `
agents:
  worker:
    turns:
      - match: fail
        steps:
          - error: "simulated provider failure"
      - steps:
          - text: "Let me check."
            tool_calls:
              - {name: check, id: c1, args: {fail: false}}
              - {name: check, id: c2, args: {fail: true}}
          - text: "One check failed."
      - steps:
          - tool_calls: [{name: check, id: c3, args: {fail: false}}]
          - text: "All good."
    fallback:
      steps:
        - text: "Nothing to check."
`

// checkTool answers "ok", or an error result when its argument fail is true.
func checkTool() pipeline.Tool {
	return pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{
			Name: "check", Description: "Checks something.", Category: pipeline.CategoryRead,
			Parameters: json.RawMessage(`{"type":"object","properties":{"fail":{"type":"boolean"}},"required":["fail"]}`),
		},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			var a struct{ Fail bool }
			if err := json.Unmarshal(c.Arguments(), &a); err != nil {
				return nil, err
			}
			if a.Fail {
				return &pipeline.ToolResult{Content: "check failed", IsError: true}, nil
			}
			return &pipeline.ToolResult{Content: "ok"}, nil
		},
	}
}

// setup writes script to script.yaml in a new temporary directory, parses
// modelLine+cfg as ganglion.yaml there and returns the options of a runtime
// on them: the config, an in-memory store, the scripted model and the check
// tool. The directory is returned for error positions.
func setup(t *testing.T, cfg, script string) (string, []runtime.Option) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	f, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(modelLine+cfg))
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return dir, []runtime.Option{runtime.WithConfig(f), runtime.WithMemoryStore(), runtime.WithModel(sc), runtime.WithTool(checkTool())}
}

// newRuntime starts a runtime on cfg and script (see setup); opts come last
// and so win. The runtime is closed when the test ends.
func newRuntime(t *testing.T, cfg, script string, opts ...runtime.Option) *runtime.Runtime {
	t.Helper()
	_, base := setup(t, cfg, script)
	rt, err := runtime.New(context.Background(), append(base, opts...)...)
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// agentWith is the config of the agent worker, with the check tool and the
// given extensions block (YAML, indented for the agent's mapping).
func agentWith(extensions string) string {
	return "agents:\n  - name: worker\n    tools: [check]\n" + extensions
}

// checkState checks the audit state of an instance; want "" means none.
func checkState(t *testing.T, rt *runtime.Runtime, instance, want string) {
	t.Helper()
	got, err := rt.ExtensionState(context.Background(), "worker", instance, audit.Name)
	if err != nil {
		t.Fatalf("ExtensionState(%q): %v", instance, err)
	}
	if string(got) != want {
		t.Errorf("audit state of %q = %s, want %s", instance, got, want)
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		name   string
		cfg    string
		inputs []string // sent in order to the instance "i1"
		// failed lists the indexes of inputs whose turn fails.
		failed []int
		want   string
	}{
		{name: "two turns, three calls, one error",
			cfg:    agentWith("    extensions: [{name: audit}]\n"),
			inputs: []string{"check twice", "check once"},
			want:   `{"turns":2,"tool_calls":3,"tool_errors":1}`},
		{name: "a turn without tools",
			cfg:    agentWith("    extensions: [{name: audit}]\n"),
			inputs: []string{"check twice", "check once", "just talk"},
			want:   `{"turns":3,"tool_calls":3,"tool_errors":1}`},
		{name: "a failed turn counts",
			cfg:    agentWith("    extensions: [{name: audit}]\n"),
			inputs: []string{"please fail"},
			failed: []int{0},
			want:   `{"turns":1,"tool_calls":0,"tool_errors":0}`},
		{name: "with settings",
			cfg:    agentWith("    extensions:\n      - name: audit\n        config: {log_arguments: true}\n"),
			inputs: []string{"check twice", "check once"},
			want:   `{"turns":2,"tool_calls":3,"tool_errors":1}`},
		{name: "fail_open and a priority change nothing",
			cfg:    agentWith("    extensions: [{name: audit, on_error: fail_open, priority: 5}]\n"),
			inputs: []string{"check twice", "check once"},
			want:   `{"turns":2,"tool_calls":3,"tool_errors":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRuntime(t, tt.cfg, script)
			checkState(t, rt, "i1", "")
			for i, in := range tt.inputs {
				_, err := rt.Send(context.Background(), "worker", "i1", runtime.UserMessage(in))
				if fail := slices.Contains(tt.failed, i); (err != nil) != fail {
					t.Fatalf("Send(%q): err = %v, want failure %v", in, err, fail)
				}
			}
			checkState(t, rt, "i1", tt.want)
		})
	}
}

func TestCountsPerInstance(t *testing.T) {
	rt := newRuntime(t, agentWith("    extensions: [{name: audit}]\n"), script)
	send := func(instance, text string) {
		t.Helper()
		if _, err := rt.Send(context.Background(), "worker", instance, runtime.UserMessage(text)); err != nil {
			t.Fatalf("Send(%q, %q): %v", instance, text, err)
		}
	}
	send("i1", "check twice")
	send("i1", "check once")
	// i2 starts at its own turn 1: the script's first turn again.
	send("i2", "check twice")
	checkState(t, rt, "i1", `{"turns":2,"tool_calls":3,"tool_errors":1}`)
	checkState(t, rt, "i2", `{"turns":1,"tool_calls":2,"tool_errors":1}`)
	checkState(t, rt, "i3", "")
	send("i2", "check once")
	send("i2", "chat")
	checkState(t, rt, "i1", `{"turns":2,"tool_calls":3,"tool_errors":1}`)
	checkState(t, rt, "i2", `{"turns":3,"tool_calls":3,"tool_errors":1}`)
}

// gate is an extension whose turn middleware answers "blocked" inputs itself,
// without running the rest of the chain.
func gate(cfg extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			if t.Input().Text != "blocked" {
				return t.Next(ctx)
			}
			return &pipeline.TurnResult{TurnID: t.TurnID(), FinishReason: pipeline.FinishText,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: "Not today."}}, nil
		})
		return nil
	}), nil
}

func TestShortCircuitedTurn(t *testing.T) {
	tests := []struct {
		name string
		exts string
		// after is the state after the blocked turn, then after the next one.
		after []string
	}{
		{name: "audit outside the gate counts the turn",
			exts: "    extensions: [{name: audit}, {name: gate}]\n",
			after: []string{
				`{"turns":1,"tool_calls":0,"tool_errors":0}`,
				`{"turns":2,"tool_calls":2,"tool_errors":1}`,
			}},
		{name: "audit outside the gate by priority",
			exts: "    extensions: [{name: gate}, {name: audit, priority: -1}]\n",
			after: []string{
				`{"turns":1,"tool_calls":0,"tool_errors":0}`,
				`{"turns":2,"tool_calls":2,"tool_errors":1}`,
			}},
		{name: "audit inside the gate never sees the turn",
			exts: "    extensions: [{name: gate}, {name: audit}]\n",
			after: []string{
				"",
				`{"turns":1,"tool_calls":2,"tool_errors":1}`,
			}},
	}
	// The blocked turn is turn 1 of the instance; "check" matches no entry,
	// so turn 2 is the script's second plain turn.
	const script = `
agents:
  worker:
    turns:
      - steps:
          - text: "unused: the gate answers turn 1"
      - steps:
          - tool_calls:
              - {name: check, id: c1, args: {fail: false}}
              - {name: check, id: c2, args: {fail: true}}
          - text: "Checked."
`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRuntime(t, agentWith(tt.exts), script, runtime.WithExtension("gate", gate))
			ctx := context.Background()
			res, err := rt.Send(ctx, "worker", "i1", runtime.UserMessage("blocked"))
			if err != nil || res.Response.Content != "Not today." {
				t.Fatalf("blocked turn: %+v, %v", res, err)
			}
			checkState(t, rt, "i1", tt.after[0])
			if _, err := rt.Send(ctx, "worker", "i1", runtime.UserMessage("check")); err != nil {
				t.Fatal(err)
			}
			checkState(t, rt, "i1", tt.after[1])
		})
	}
}

// records returns the log records in buf whose msg starts with prefix, each
// without its time. duration, if present, must be a number and is dropped
// too: it varies.
func records(t *testing.T, buf *bytes.Buffer, prefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if msg, _ := rec["msg"].(string); !strings.HasPrefix(msg, prefix) {
			continue
		}
		delete(rec, "time")
		if d, ok := rec["duration"]; ok {
			if _, isNum := d.(float64); !isNum {
				t.Errorf("duration = %v, want a number", d)
			}
			delete(rec, "duration")
		}
		out = append(out, rec)
	}
	return out
}

func TestLogging(t *testing.T) {
	// The calls of the script's two turns, in call ID order.
	calls := []map[string]any{
		{"level": "INFO", "msg": "tool call", "turn": "turn-1", "call_id": "c1", "result_bytes": 2.0},
		{"level": "INFO", "msg": "tool call returned an error", "turn": "turn-1", "call_id": "c2", "result_bytes": 12.0},
		{"level": "INFO", "msg": "tool call", "turn": "turn-2", "call_id": "c3", "result_bytes": 2.0},
	}
	arguments := []string{`{"fail":false}`, `{"fail":true}`, `{"fail":false}`}
	tests := []struct {
		name    string
		exts    string
		logArgs bool
	}{
		{name: "default", exts: "    extensions: [{name: audit}]\n"},
		{name: "empty config", exts: "    extensions:\n      - name: audit\n        config: {}\n"},
		{name: "null config", exts: "    extensions:\n      - name: audit\n        config:\n"},
		{name: "log_arguments false", exts: "    extensions:\n      - name: audit\n        config: {log_arguments: false}\n"},
		{name: "log_arguments true", exts: "    extensions:\n      - name: audit\n        config: {log_arguments: true}\n", logArgs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			rt := newRuntime(t, agentWith(tt.exts), script, runtime.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
			for _, in := range []string{"check twice", "check once"} {
				if _, err := rt.Send(context.Background(), "worker", "i1", runtime.UserMessage(in)); err != nil {
					t.Fatal(err)
				}
			}
			got := records(t, &buf, "tool call")
			// The two calls of turn 1 run concurrently: order by call ID.
			slices.SortFunc(got, func(a, b map[string]any) int {
				return strings.Compare(fmt.Sprint(a["call_id"]), fmt.Sprint(b["call_id"]))
			})
			var want []map[string]any
			for i, c := range calls {
				w := map[string]any{"agent": "worker", "extension": "audit", "instance": "i1", "tool": "check"}
				for k, v := range c {
					w[k] = v
				}
				if tt.logArgs {
					w["arguments"] = arguments[i]
				}
				want = append(want, w)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestLoggingFailedCall: a toolCall middleware inside audit that fails
// fail_closed fails the call; audit logs it as a warning with the error.
func TestLoggingFailedCall(t *testing.T) {
	breaker := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				return nil, errors.New("denied")
			})
			return nil
		}), nil
	}
	const script = `
agents:
  worker:
    turns:
      - steps:
          - tool_calls: [{name: check, id: c1, args: {fail: false}}]
          - text: "unreached"
`
	var buf bytes.Buffer
	rt := newRuntime(t, agentWith("    extensions: [{name: audit}, {name: breaker}]\n"), script,
		runtime.WithExtension("breaker", breaker), runtime.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	if _, err := rt.Send(context.Background(), "worker", "i1", runtime.UserMessage("go")); err == nil {
		t.Fatal("Send succeeded; want the breaker to fail the turn")
	}
	want := []map[string]any{{
		"level": "WARN", "msg": "tool call failed", "agent": "worker", "extension": "audit", "instance": "i1",
		"turn": "turn-1", "tool": "check", "call_id": "c1", "err": `extension "breaker": toolCall middleware: denied`,
	}}
	if got := records(t, &buf, "tool call"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records:\n got %v\nwant %v", got, want)
	}
	// The failed call's answer is in the history, marked as an error.
	checkState(t, rt, "i1", `{"turns":1,"tool_calls":1,"tool_errors":1}`)
}

// TestUnreadableState: state that does not decode is logged and the counts
// start again from zero.
func TestUnreadableState(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	if err := st.SetState(ctx, "worker", "i1", audit.Name, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rt := newRuntime(t, agentWith("    extensions: [{name: audit}]\n"), script,
		runtime.WithStore(st), runtime.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	if _, err := rt.Send(ctx, "worker", "i1", runtime.UserMessage("check twice")); err != nil {
		t.Fatal(err)
	}
	checkState(t, rt, "i1", `{"turns":1,"tool_calls":2,"tool_errors":1}`)
	want := []map[string]any{{
		"level": "ERROR", "msg": "audit: state unreadable; counting from zero", "agent": "worker", "extension": "audit",
		"instance": "i1", "err": `invalid character 'g' looking for beginning of value`,
	}}
	if got := records(t, &buf, "audit:"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records:\n got %v\nwant %v", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		config string // the extension's config line
		line   int
		column int
		msg    string
	}{
		{name: "unknown key", config: "config: {log_args: true}", line: 7, column: 18,
			msg: `agent "worker": extension "audit": config: unknown field "log_args" (known: log_arguments)`},
		{name: "wrong type", config: "config: {log_arguments: loud}", line: 7, column: 33,
			msg: `agent "worker": extension "audit": config.log_arguments: expected true or false, found string "loud"`},
		{name: "not a mapping", config: "config: [log_arguments]", line: 7, column: 17,
			msg: `agent "worker": extension "audit": config: expected a mapping, found a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, opts := setup(t, agentWith("    extensions:\n      - name: audit\n        "+tt.config+"\n"), script)
			rt, err := runtime.New(context.Background(), opts...)
			if err == nil {
				rt.Close()
				t.Fatal("runtime.New succeeded")
			}
			file := filepath.Join(dir, "ganglion.yaml")
			header := fmt.Sprintf("%s:%d:%d: %s", file, tt.line, tt.column, tt.msg)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("errors.As(%v, *config.Error) = false", err)
			}
			if ce.File != file || ce.Line != tt.line || ce.Column != tt.column || ce.Msg != tt.msg {
				t.Errorf("config.Error = %s:%d:%d: %s\n                 want %s", ce.File, ce.Line, ce.Column, ce.Msg, header)
			}
			if first, _, _ := strings.Cut(ce.Error(), "\n"); first != header {
				t.Errorf("config.Error's first line:\n got %q\nwant %q", first, header)
			}
			// The runtime passes the positioned error through as it is: it
			// names the agent and the extension already.
			if first, _, _ := strings.Cut(err.Error(), "\n"); first != header {
				t.Errorf("first line:\n got %q\nwant %q", first, header)
			}
			if !strings.Contains(err.Error(), "\n>  7 |         "+tt.config+"\n") {
				t.Errorf("error has no snippet of line 7:\n%s", err)
			}
		})
	}
}

// TestNew drives the factory without a runtime: decoding errors come back
// from New as they are, and a valid config registers one turn and one
// toolCall layer.
func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  extensions.Config
		want string
	}{
		{name: "no settings", cfg: decoder(func(any) error { return nil })},
		{name: "decode error", cfg: decoder(func(any) error { return errors.New("bad config") }), want: "bad config"},
		{name: "settings", cfg: decoder(func(v any) error { v.(*audit.Settings).LogArguments = true; return nil })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := audit.New(tt.cfg)
			if tt.want != "" {
				if err == nil || err.Error() != tt.want || ext != nil {
					t.Fatalf("New = %v, %v; want nil, %q", ext, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var b pipeline.Builder
			if err := ext.Register(extensions.NewAPI(audit.Name, extensions.Host{Agent: "worker", Builder: &b})); err != nil {
				t.Fatalf("Register: %v", err)
			}
			p, err := b.Build(pipeline.Handlers{
				Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, nil },
				Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) { return nil, nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			for h, n := range map[pipeline.Hook]int{pipeline.HookTurn: 1, pipeline.HookStep: 0, pipeline.HookToolCall: 1} {
				layers := p.Layers(h)
				if len(layers) != n || n > 0 && layers[0].Owner.Extension != audit.Name {
					t.Errorf("Layers(%s) = %+v, want %d of audit", h, layers, n)
				}
			}
		})
	}
}

// decoder adapts a function to [extensions.Config].
type decoder func(v any) error

func (d decoder) Decode(v any) error { return d(v) }

// TestAbortedTurnIsCounted: a turn whose caller gives up still happened, so
// audit counts it and its tool call, with the cancelled context or without.
func TestAbortedTurnIsCounted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The tool cancels the caller's context, as a caller giving up mid-turn would.
	quitter := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{Name: "quit", Description: "Gives up.", Category: pipeline.CategoryRead},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			cancel()
			return &pipeline.ToolResult{Content: "gave up"}, nil
		},
	}
	rt := newRuntime(t, "agents:\n  - name: worker\n    tools: [quit]\n    extensions: [{name: audit}]\n", `
agents:
  worker:
    fallback:
      steps:
        - tool_calls: [{name: quit, id: q1}]
        - text: "never reached"
`, runtime.WithTool(quitter))
	res, err := rt.Send(ctx, "worker", "i1", runtime.UserMessage("go"))
	if !errors.Is(err, context.Canceled) || res.FinishReason != pipeline.FinishAborted {
		t.Fatalf("Send = %+v, %v; want an aborted turn", res, err)
	}
	checkState(t, rt, "i1", `{"turns":1,"tool_calls":1,"tool_errors":0}`)
}

// TestLoggingResults: a tool's output, an error's included, shows in the
// log only at debug level, cut to 200 bytes; at info level the log has its
// size alone.
func TestLoggingResults(t *testing.T) {
	const canary = "key=CANARY-5e0c1b9a7d3f"
	long := canary + strings.Repeat("é", 200) // byte 200 is inside an é: the cut is at 199
	leaky := pipeline.Tool{
		ToolSpec: pipeline.ToolSpec{
			Name: "leaky", Description: "Says too much.", Category: pipeline.CategoryRead,
			Parameters: json.RawMessage(`{"type":"object","properties":{"fail":{"type":"boolean"}},"required":["fail"]}`),
		},
		Func: func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			if strings.Contains(string(c.Arguments()), "true") {
				return &pipeline.ToolResult{Content: canary, IsError: true}, nil
			}
			return &pipeline.ToolResult{Content: long}, nil
		},
	}
	const script = `
agents:
  worker:
    turns:
      - steps:
          - tool_calls: [{name: leaky, id: c1, args: {fail: true}}]
          - tool_calls: [{name: leaky, id: c2, args: {fail: false}}]
          - text: "done"
`
	tests := []struct {
		name  string
		level slog.Level
		want  []map[string]any
	}{
		{name: "info", level: slog.LevelInfo, want: []map[string]any{
			{"level": "INFO", "msg": "tool call returned an error", "call_id": "c1", "result_bytes": float64(len(canary))},
			{"level": "INFO", "msg": "tool call", "call_id": "c2", "result_bytes": float64(len(long))},
		}},
		{name: "debug", level: slog.LevelDebug, want: []map[string]any{
			{"level": "INFO", "msg": "tool call returned an error", "call_id": "c1", "result_bytes": float64(len(canary))},
			{"level": "DEBUG", "msg": "tool call result", "call_id": "c1", "is_error": true, "result": canary},
			{"level": "INFO", "msg": "tool call", "call_id": "c2", "result_bytes": float64(len(long))},
			{"level": "DEBUG", "msg": "tool call result", "call_id": "c2", "is_error": false, "result": long[:199] + "…"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			rt := newRuntime(t, "agents:\n  - name: worker\n    tools: [leaky]\n    extensions: [{name: audit}]\n", script,
				runtime.WithTool(leaky), runtime.WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tt.level}))))
			if _, err := rt.Send(context.Background(), "worker", "i1", runtime.UserMessage("go")); err != nil {
				t.Fatal(err)
			}
			var want []map[string]any
			for _, w := range tt.want {
				r := map[string]any{"agent": "worker", "extension": "audit", "instance": "i1", "turn": "turn-1", "tool": "leaky"}
				maps.Copy(r, w)
				want = append(want, r)
			}
			if got := records(t, &buf, "tool call"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records:\n got %v\nwant %v", got, want)
			}
			if tt.level == slog.LevelInfo && strings.Contains(buf.String(), "CANARY") {
				t.Errorf("the info log shows a tool's output:\n%s", buf.String())
			}
		})
	}
}

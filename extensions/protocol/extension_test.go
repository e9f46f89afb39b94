package protocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// start runs a runtime on cfg and script in a new directory.
func start(t *testing.T, cfg, script string, opts ...runtime.Option) (*runtime.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\n"+cfg))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(c), runtime.WithMemoryStore(), runtime.WithoutExpiryTimer()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, dir
}

func contents(t *testing.T, rt *runtime.Runtime) []string {
	t.Helper()
	msgs, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ": " + m.Content
	}
	return out
}

// TestCorrection: a malformed block goes back to the model, which writes
// it again; the fixed block pauses the turn.
func TestCorrection(t *testing.T) {
	rt, _ := start(t, `
agents:
  - name: a
    extensions: [{name: protocol}]
`, `
agents:
  a:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: business
              [/USER_QUESTION]
          - text: |
              [USER_QUESTION]
              category: business
              question: Which plan?
              [/USER_QUESTION]
`)
	var mistakes []any
	rt.Events().Subscribe("protocol.mistake", func(ev events.Event) { mistakes = append(mistakes, ev.Data) })
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishPaused || res.Steps != 2 {
		t.Fatalf("Send = %+v, %v; want paused after 2 steps", res, err)
	}
	h := contents(t, rt)
	want := "user: Your last message has protocol block problems, so none of its blocks was acted on:\n" +
		`- line 1: [USER_QUESTION] is missing the required field "question"` + "\nWrite the blocks again, corrected."
	if len(h) != 4 || h[2] != want {
		t.Fatalf("history = %q\nwant the correction third: %q", h, want)
	}
	if len(mistakes) != 1 {
		t.Errorf("protocol.mistake events = %v", mistakes)
	}
}

// TestMistakeLimit: mistake_limit malformed responses in a row pause the
// turn for a human, whose guidance resumes it.
func TestMistakeLimit(t *testing.T) {
	rt, _ := start(t, `
agents:
  - name: a
    extensions: [{name: protocol, config: {mistake_limit: 2}}]
`, `
agents:
  a:
    turns:
      - steps:
          - text: "[DEPENDENCY_REQUEST]\ntype: api_key\n"
          - text: "[DEPENDENCY_REQUEST]\ntype: nonsense\nname: X\ndescription: d\n[/DEPENDENCY_REQUEST]\n"
      - steps:
          - text: "OK: {{ .LastMessage }}"
`)
	ctx := context.Background()
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	if len(items) != 1 || items[0].Kind != protocol.ItemIntervention || !items[0].Required {
		t.Fatalf("items = %+v, want one intervention", items)
	}
	if _, err := rt.Answer(ctx, items[0].ID, "  "); !errors.Is(err, extensions.ErrInvalidAction) {
		t.Fatalf("empty guidance: %v", err)
	}
	res, err = rt.Answer(ctx, items[0].ID, "Use type api_key.")
	if err != nil || res.Response.Content != "OK: Your protocol blocks failed several times in a row. Guidance from the user: Use type api_key." {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
}

// TestBlockEvents: PHASE_COMPLETE and a kind added to the registry are
// published, and do not pause.
func TestBlockEvents(t *testing.T) {
	reg := protocol.DefaultRegistry()
	if err := reg.Register(protocol.Kind{Name: "TASK_CREATE", Fields: []protocol.FieldSpec{{Name: "title", Type: protocol.TextField, Required: true}}}); err != nil {
		t.Fatal(err)
	}
	exts := extensions.NewRegistry()
	if err := exts.Register("protocol_custom", protocol.Factory(reg)); err != nil {
		t.Fatal(err)
	}
	rt, _ := start(t, `
agents:
  - name: a
    extensions: [{name: protocol_custom}]
`, `
agents:
  a:
    turns:
      - steps:
          - text: |
              Done with design.
              [PHASE_COMPLETE]
              phase: design
              summary: The schema is ready.
              [/PHASE_COMPLETE]
              [TASK_CREATE]
              title: Write the migrations
              [/TASK_CREATE]
`, runtime.WithExtensions(exts))
	var mu sync.Mutex
	var got []string
	rt.Events().Subscribe("protocol.block", func(ev events.Event) {
		b, _ := json.Marshal(ev.Data)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	})
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishText {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	want := []string{
		`{"kind":"PHASE_COMPLETE","line":2,"step":1,"turn_id":"turn-1","value":{"phase":"design","summary":"The schema is ready."}}`,
		`{"kind":"TASK_CREATE","line":6,"step":1,"turn_id":"turn-1","value":{"title":"Write the migrations"}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSettingsErrors: bad settings name the field.
func TestSettingsErrors(t *testing.T) {
	for _, tt := range []struct{ cfg, want string }{
		{`{timeout: soon}`, `timeout must be a positive duration such as 30m or 2h, got "soon"`},
		{`{question_timeout: -1m}`, `question_timeout must be a positive duration such as 30m or 2h, got "-1m"`},
		{`{mistake_limit: -2}`, `mistake_limit must be at least 1, got -2`},
	} {
		t.Run(tt.cfg, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("agents: {a: {fallback: {steps: [{text: x}]}}}\n"), 0o644)
			c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: [{name: protocol, config: "+tt.cfg+"}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithMemoryStore())
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("New: %v\nwant suffix %q", err, tt.want)
			}
		})
	}
}

// TestSecretCanary provides a unique API key and checks that it appears
// nowhere but where it belongs: the command's environment. Not in the
// history, the events, the logs, any extension's state, the command output
// the model reads, or the raw files of the badger database.
func TestSecretCanary(t *testing.T) {
	const canary = "sk-canary-3b8e1f0c9d2a4e67b5f1"
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	script := `
agents:
  a:
    turns:
      - steps:
          - text: |
              [DEPENDENCY_REQUEST]
              type: api_key
              name: OPENAI_API_KEY
              description: for the API
              required: true
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "Checking the key."
            tool_calls: [{name: execute_command, id: c1, args: {command: 'printf "%s bytes: %s" "${#OPENAI_API_KEY}" "$OPENAI_API_KEY"'}}]
          - text: "Done: {{ .LastMessage }}"
`
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644)
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
data: data
workspace: ws
agents:
  - name: a
    tools: [execute_command]
    extensions: [{name: protocol}, {name: audit, config: {log_arguments: true}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus()
	var evs bytes.Buffer
	var mu sync.Mutex
	bus.Subscribe("*", func(ev events.Event) {
		b, _ := json.Marshal(ev)
		mu.Lock()
		evs.Write(append(b, '\n'))
		mu.Unlock()
	})
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(c), runtime.WithLogger(logger), runtime.WithEvents(bus), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	res, err := rt.Provide(ctx, items[0].ID, canary)
	if err != nil || res.FinishReason != pipeline.FinishText {
		t.Fatalf("Provide = %+v, %v", res, err)
	}
	if want := fmt.Sprintf("Done: %d bytes: [secret OPENAI_API_KEY]", len(canary)); res.Response.Content != want {
		t.Errorf("response = %q, want %q (the command saw the key, its output is redacted)", res.Response.Content, want)
	}
	var where []string
	hist, _ := rt.History(ctx, "a", "k")
	hb, _ := json.Marshal(hist)
	state, _ := rt.ExtensionState(ctx, "a", "k", "audit")
	pend, _ := rt.Pending(ctx, ledger.Filter{})
	pb, _ := json.Marshal(pend)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"history": string(hb), "events": evs.String(), "logs": logs.String(), "state": string(state), "pending items": string(pb)} {
		if strings.Contains(text, canary) {
			where = append(where, name)
		}
	}
	files := 0
	filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(canary)) {
			where = append(where, "file "+p)
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no database files to check")
	}
	if len(where) > 0 {
		t.Fatalf("the secret leaked into: %s", strings.Join(where, ", "))
	}
	if !strings.Contains(evs.String(), "[secret OPENAI_API_KEY]") {
		t.Errorf("the events do not show the redacted command output")
	}
}

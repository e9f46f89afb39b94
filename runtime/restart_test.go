package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store/badger"
)

const restartConfig = modelLine + `
data: data
agents:
  - name: a
    tools: [echo]
    extensions: [{name: audit}]
`

const restartScript = `
agents:
  a:
    turns:
      - steps:
          - text: "Let me check."
            tool_calls: [{name: echo, id: c1, args: {text: ping}}]
          - text: "It said {{ .LastMessage }}."
      - steps:
          - text: "Turn {{ .Turn }}, and I remember {{ .LastMessage }}"
`

// persistent is a directory holding a config, a script and a badger data
// directory, and the runtimes opened on it one after the other.
type persistent struct {
	t    *testing.T
	dir  string
	now  atomic.Int64 // seconds since base, for a clock that moves
	opts []runtime.Option
}

func newPersistent(t *testing.T, cfg, script string, opts ...runtime.Option) *persistent {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ganglion.yaml"), cfg)
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	return &persistent{t: t, dir: dir, opts: opts}
}

// open starts a runtime from the config file (so the script and the data
// directory are the config's), or returns New's error.
func (p *persistent) open() (*runtime.Runtime, error) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return base.Add(time.Duration(p.now.Add(1)) * time.Second) }
	opts := append([]runtime.Option{runtime.WithConfigFile(filepath.Join(p.dir, "ganglion.yaml")), runtime.WithClock(clock)}, p.opts...)
	return runtime.New(context.Background(), opts...)
}

func (p *persistent) mustOpen() *runtime.Runtime {
	p.t.Helper()
	rt, err := p.open()
	if err != nil {
		p.t.Fatalf("New: %v", err)
	}
	p.t.Cleanup(func() { rt.Close() })
	return rt
}

func mustClose(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	if err := rt.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func mustHistory(t *testing.T, rt *runtime.Runtime, agent, key string) []pipeline.Message {
	t.Helper()
	msgs, err := rt.History(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return msgs
}

func checkState(t *testing.T, rt *runtime.Runtime, agent, key, ext, want string) {
	t.Helper()
	got, err := rt.ExtensionState(context.Background(), agent, key, ext)
	if err != nil || string(got) != want {
		t.Errorf("ExtensionState(%s, %s, %s) = %s, %v; want %s", agent, key, ext, got, err, want)
	}
}

func TestRestart(t *testing.T) {
	ctx := context.Background()
	p := newPersistent(t, restartConfig, restartScript, runtime.WithTool(echoTool()))

	rt := p.mustOpen()
	res, err := rt.Send(ctx, "a", "i", runtime.UserMessage("hi"))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText, Steps: 2, Response: assistant("It said echo: ping.")})
	first := mustHistory(t, rt, "a", "i")
	checkLines(t, "history", describeAll(first), []string{
		"user: hi",
		`assistant: Let me check. +call(c1 echo {"text":"ping"})`,
		"tool(c1 echo): echo: ping",
		"assistant: It said echo: ping.",
	})
	mustClose(t, rt)

	rt = p.mustOpen()
	if again := mustHistory(t, rt, "a", "i"); !reflect.DeepEqual(again, first) {
		t.Errorf("history after a restart:\n got %+v\nwant %+v", again, first)
	}
	for i, m := range first {
		if want := fmt.Sprintf("msg-%d", i); m.ID != want {
			t.Errorf("message %d has ID %q, want %q", i, m.ID, want)
		}
		if m.CreatedAt.IsZero() {
			t.Errorf("message %d has no time", i)
		}
	}
	checkState(t, rt, "a", "i", "audit", `{"turns":1,"tool_calls":1,"tool_errors":0}`)
	res, err = rt.Send(ctx, "a", "i", runtime.UserMessage("again"))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, pipeline.TurnResult{TurnID: "turn-2", FinishReason: pipeline.FinishText, Steps: 1, Response: assistant("Turn 2, and I remember again")})
	if keys, err := rt.Instances(ctx, "a"); err != nil || len(keys) != 1 || keys[0] != "i" {
		t.Errorf("Instances = %q, %v", keys, err)
	}
	mustClose(t, rt)

	rt = p.mustOpen()
	both := mustHistory(t, rt, "a", "i")
	if len(both) != 6 || !reflect.DeepEqual(both[:4], first) {
		t.Fatalf("history after the second restart:\n\t%s", strings.Join(describeAll(both), "\n\t"))
	}
	checkLines(t, "second turn", describeAll(both[4:]), []string{"user: again", "assistant: Turn 2, and I remember again"})
	if both[4].ID != "msg-4" || both[5].ID != "msg-5" {
		t.Errorf("the second turn's IDs are %q, %q; want msg-4, msg-5", both[4].ID, both[5].ID)
	}
	checkState(t, rt, "a", "i", "audit", `{"turns":2,"tool_calls":1,"tool_errors":0}`)
	mustClose(t, rt)
}

// TestRestartKeepsTurnCount: a turn that adds no message still counts, so
// turn IDs stay unique across restarts.
func TestRestartKeepsTurnCount(t *testing.T) {
	gate := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			if tc.Input().Text == "blocked" {
				return &pipeline.TurnResult{TurnID: tc.TurnID(), FinishReason: pipeline.FinishText, Response: assistant("No.")}, nil
			}
			return tc.Next(ctx)
		})
		return nil
	})
	p := newPersistent(t, modelLine+`
data: data
agents:
  - name: a
    extensions: [{name: gate}]
`, `
agents:
  a:
    fallback:
      steps:
        - text: "turn {{ .Turn }}"
`, runtime.WithExtension("gate", gate))

	rt := p.mustOpen()
	if res, err := rt.Send(context.Background(), "a", "i", runtime.UserMessage("blocked")); err != nil || res.TurnID != "turn-1" {
		t.Fatalf("blocked turn = %+v, %v", res, err)
	}
	mustClose(t, rt)

	rt = p.mustOpen()
	res, err := rt.Send(context.Background(), "a", "i", runtime.UserMessage("hello"))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, pipeline.TurnResult{TurnID: "turn-2", FinishReason: pipeline.FinishText, Steps: 1, Response: assistant("turn 2")})
}

// TestDataDirInUse: a data directory serves one runtime at a time.
func TestDataDirInUse(t *testing.T) {
	p := newPersistent(t, restartConfig, restartScript, runtime.WithTool(echoTool()))
	rt := p.mustOpen()

	_, err := p.open()
	dataDir := filepath.Join(p.dir, "data")
	prefix := fmt.Sprintf("store: open data directory %q: it is in use by another process (another ganglion running?): ", dataDir)
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("second New: err = %v\nwant it to start with %q", err, prefix)
	}
	if !errors.Is(err, badger.ErrInUse) {
		t.Errorf("errors.Is(err, badger.ErrInUse) = false")
	}

	// The failed New took nothing from the running one.
	if _, err := rt.Send(context.Background(), "a", "i", runtime.UserMessage("hi")); err != nil {
		t.Fatalf("Send on the first runtime: %v", err)
	}
	mustClose(t, rt)
	rt = p.mustOpen()
	if n := len(mustHistory(t, rt, "a", "i")); n != 4 {
		t.Errorf("history has %d messages after reopening, want 4", n)
	}
}

// TestMalformedArgumentsArePersisted: a tool call whose arguments are not
// JSON goes back to the model as a tool error and is stored byte for byte
// on badger too (encoding it as raw JSON used to fail the whole turn).
func TestMalformedArgumentsArePersisted(t *testing.T) {
	p := newPersistent(t, restartConfig, `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: echo, id: bad1, arguments: '{"text": <oops'}]
        - text: "I will fix my call."
`, runtime.WithTool(echoTool()))
	rt := p.mustOpen()
	res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishText {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	mustClose(t, rt)
	rt = p.mustOpen()
	checkLines(t, "history after restart", describeAll(mustHistory(t, rt, "a", "k")), []string{
		"user: go",
		`assistant: +call(bad1 echo {"text": <oops)`,
		`tool!(bad1 echo): tool "echo": arguments are not valid JSON: invalid character '<' looking for beginning of value`,
		"assistant: I will fix my call.",
	})
}

// TestEmitMessageEditsArePersisted: replace and remove through a
// middleware's EmitMessage change the history the model sees and what is
// stored, and bad edits are refused with a clear error, changing nothing.
func TestEmitMessageEditsArePersisted(t *testing.T) {
	var errs []string
	editor := extension(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			if tc.Input().Text != "edit" {
				return tc.Next(ctx)
			}
			conv := tc.Conversation()
			first, second := conv.At(0), conv.At(1)
			edits := []pipeline.MessageEvent{
				{Type: pipeline.MessageReplace, TargetID: first.ID, Message: pipeline.Message{Role: pipeline.RoleUser, Content: "first, redacted"}},
				{Type: pipeline.MessageRemove, TargetID: second.ID},
				// Refused, each changing nothing:
				{Type: pipeline.MessageReplace, TargetID: "nope", Message: pipeline.Message{Role: pipeline.RoleUser}},
				{Type: pipeline.MessageRemove, TargetID: "nope"},
				{Type: pipeline.MessageAppend, Message: pipeline.Message{ID: first.ID, Role: pipeline.RoleSystem}},
				{Type: pipeline.MessageAppend, Message: pipeline.Message{Role: "robot"}},
				{Type: pipeline.MessageAppend, Message: pipeline.Message{Role: pipeline.RoleTool, Content: "orphan"}},
				{Type: "rename", TargetID: first.ID},
			}
			for _, ev := range edits {
				if err := tc.EmitMessage(ev); err != nil {
					errs = append(errs, err.Error())
				}
			}
			return tc.Next(ctx)
		})
		return nil
	})
	p := newPersistent(t, modelLine+`
data: data
agents:
  - name: a
    extensions: [{name: editor}]
`, `
agents:
  a:
    fallback:
      steps:
        - text: "seen {{ .LastMessage }}"
`, runtime.WithExtension("editor", editor))
	rt := p.mustOpen()
	for _, in := range []string{"one", "edit"} {
		if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(in)); err != nil {
			t.Fatal(err)
		}
	}
	wantErrs := []string{
		`replace message: no message with id "nope"`,
		`remove message: no message with id "nope"`,
		`append message: id "msg-0" is already in the conversation`,
		`append message: unknown role "robot" (want system, user, assistant or tool)`,
		`append message: a tool message needs tool_call_id`,
		`message event: unknown type "rename" (want append, replace or remove)`,
	}
	checkLines(t, "refused edits", errs, wantErrs)
	want := []string{"user: first, redacted", "user: edit", "assistant: seen edit"}
	checkLines(t, "history", describeAll(mustHistory(t, rt, "a", "k")), want)
	mustClose(t, rt)
	rt = p.mustOpen()
	checkLines(t, "history after restart", describeAll(mustHistory(t, rt, "a", "k")), want)
	msgs := mustHistory(t, rt, "a", "k")
	if msgs[0].ID != "msg-0" {
		t.Errorf("a replaced message keeps its ID: got %q", msgs[0].ID)
	}
}

package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// askScript drives testdata/goask: "use danger" calls the tool the guest
// gates, "ask" makes the model ask a question the guest turns into an item.
const askScript = `
agents:
  a:
    turns:
      - kind: resume
        steps:
          - text: "resumed: {{ .ToolResult }}"
      - match: "^use danger"
        steps:
          - tool_calls: [{name: danger, id: c1, args: {x: 1}}]
          - text: "never reached"
      - match: "^ask"
        steps:
          - text: "[ASK] Which colour?"
    fallback:
      steps:
        - text: "plain"
`

// askRuntime is a runtime over a data directory, with goask loaded and
// its kinds granted, that a test can stop and start again.
type askRuntime struct {
	t     *testing.T
	dir   string
	cache string
	rt    *runtime.Runtime
	later atomic.Int64 // how far the clock is advanced
}

func newAskRuntime(t *testing.T, grants string) *askRuntime {
	t.Helper()
	mods, cache := guests.Build(t, goGuests...)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`model: {provider: scripted, script: script.yaml}
data: data
agents:
  - name: a
    extensions:
      - wasm: %q
        %s
`, mods["goask"], grants)
	for name, text := range map[string]string{"ganglion.yaml": cfg, "script.yaml": askScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &askRuntime{t: t, dir: dir, cache: cache}
}

func (a *askRuntime) open() error {
	rt, err := runtime.New(context.Background(), runtime.WithConfigFile(filepath.Join(a.dir, "ganglion.yaml")),
		runtime.WithWasmCache(a.cache), runtime.WithoutExpiryTimer(),
		runtime.WithClock(func() time.Time { return time.Now().Add(time.Duration(a.later.Load())) }))
	if err != nil {
		return err
	}
	a.rt = rt
	a.t.Cleanup(func() { rt.Close() })
	return nil
}

func (a *askRuntime) start() *runtime.Runtime {
	a.t.Helper()
	if err := a.open(); err != nil {
		a.t.Fatalf("New: %v", err)
	}
	return a.rt
}

// restart stops the process's runtime and starts another on its data.
func (a *askRuntime) restart() *runtime.Runtime {
	a.t.Helper()
	if err := a.rt.Close(); err != nil {
		a.t.Fatalf("Close: %v", err)
	}
	return a.start()
}

func (a *askRuntime) open1(k string) ledger.Item {
	a.t.Helper()
	items, err := a.rt.Pending(context.Background(), ledger.Filter{Agent: "a", Instance: k, Open: true})
	if err != nil {
		a.t.Fatalf("Pending: %v", err)
	}
	if len(items) != 1 {
		a.t.Fatalf("open items of %s = %+v, want 1", k, items)
	}
	return items[0]
}

const askGrants = "pending: [ask, question]"

// TestGuestPausesACall: a guest's toolCall hook pauses a call as the
// native approval gate does; the item survives a restart, a refused answer
// leaves it open with the guest's message, and the answer resumes the turn
// through the guest's Resume: approved, the call runs; edited, it runs with
// the human's arguments; denied, it gets the guest's result.
func TestGuestPausesACall(t *testing.T) {
	tests := []struct {
		name string
		act  func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error)
		want string // the resumed turn's response
	}{
		{"approve", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(context.Background(), id, "approve")
		}, `resumed: danger ran with {"x":1}`},
		{"edit", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Edit(context.Background(), id, json.RawMessage(`{"x": 2}`))
		}, "resumed: called with arguments a human edited: {\"x\":2}\ndanger ran with {\"x\":2}"},
		{"deny", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Answer(context.Background(), id, "deny")
		}, "resumed: tool call denied by goask"},
		{"reject", func(rt *runtime.Runtime, id string) (*pipeline.TurnResult, error) {
			return rt.Reject(context.Background(), id, "not today")
		}, "resumed: tool call denied by goask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			a := newAskRuntime(t, askGrants)
			rt := a.start()
			res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("use danger"))
			if err != nil || res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("Send = %+v, %v; want a paused turn", res, err)
			}
			it := a.open1("k")
			if it.Kind != "ask" || it.Extension != "goask" || it.CallID != "c1" || !it.Required || it.ExpiresAt.IsZero() {
				t.Errorf("item = %+v, want a required ask of goask for call c1 with a deadline", it)
			}
			if want := `{"tool":"danger","args":{"x":1}}`; string(it.Request) != want {
				t.Errorf("request = %s, want %s", it.Request, want)
			}
			msgs, err := rt.History(ctx, "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			if last := msgs[len(msgs)-1]; last.Role != pipeline.RoleTool || last.Content != "waiting for approval "+it.ID {
				t.Errorf("the call's result while paused = %s %q", last.Role, last.Content)
			}

			rt = a.restart()
			_, err = rt.Answer(ctx, it.ID, "maybe")
			if !errors.Is(err, extensions.ErrInvalidAction) || !strings.Contains(err.Error(), `answer approve or deny, not "maybe"`) {
				t.Fatalf("Answer(maybe) = %v, want the guest's refusal as an invalid action", err)
			}
			if got := a.open1("k"); got.ID != it.ID {
				t.Fatalf("after a refused answer the open item is %s, want %s", got.ID, it.ID)
			}
			res, err = tt.act(rt, it.ID)
			if err != nil {
				t.Fatalf("act: %v", err)
			}
			if res.FinishReason != pipeline.FinishText || res.Response.Content != tt.want {
				t.Errorf("resumed turn = %s %q, want text %q", res.FinishReason, res.Response.Content, tt.want)
			}
		})
	}
}

// TestGuestPausesAStep: a guest's reply hook turns the model's question
// into an item, stored with the message that asks; the turn ends paused
// after the step; the answer, after a restart, resumes the turn with the
// guest's message.
func TestGuestPausesAStep(t *testing.T) {
	ctx := context.Background()
	a := newAskRuntime(t, askGrants)
	rt := a.start()
	var topics []string
	rt.Events().Subscribe("pending.*", func(ev events.Event) { topics = append(topics, ev.Topic) })
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("ask me"))
	if err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v; want a paused turn", res, err)
	}
	it := a.open1("k")
	if it.Kind != "question" || it.Step != 1 || string(it.Request) != `{"question":"Which colour?"}` {
		t.Errorf("item = %+v", it)
	}
	msgs, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.ID != it.Checkpoint || last.Content != "[ASK] Which colour?" {
		t.Errorf("item checkpoints %s, the history ends with %s %q", it.Checkpoint, last.ID, last.Content)
	}
	if !slicesContains(topics, "pending.created") {
		t.Errorf("events = %v, want pending.created", topics)
	}

	rt = a.restart()
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("hello?")); !errors.Is(err, runtime.ErrPaused) {
		t.Fatalf("Send while paused = %v, want ErrPaused", err)
	}
	if _, err := rt.Answer(ctx, it.ID, "  "); !errors.Is(err, extensions.ErrInvalidAction) || !strings.Contains(err.Error(), "the answer is empty") {
		t.Fatalf("Answer(blank) = %v, want the guest's refusal", err)
	}
	if _, err := rt.Skip(ctx, it.ID); !errors.Is(err, extensions.ErrInvalidAction) || !strings.Contains(err.Error(), "a question takes an answer") {
		t.Fatalf("Skip = %v, want the guest's refusal", err)
	}
	res, err = rt.Answer(ctx, it.ID, "blue")
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if res.FinishReason != pipeline.FinishText {
		t.Errorf("resumed turn = %+v", res)
	}
	done, err := rt.PendingItem(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Open || done.Status != ledger.Answered || done.Answer != "blue" || done.Message != `The human answered "Which colour?": blue` {
		t.Errorf("resolved item = %+v", done)
	}
}

// TestGuestPauseExpires: the guest's Expire decides an item nobody
// answered in time.
func TestGuestPauseExpires(t *testing.T) {
	ctx := context.Background()
	a := newAskRuntime(t, askGrants)
	rt := a.start()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("use danger")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	it := a.open1("k")
	a.later.Store(int64(2 * time.Hour))
	if _, err := rt.ExpirePending(ctx); err != nil {
		t.Fatalf("ExpirePending: %v", err)
	}
	done, err := rt.PendingItem(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Open || done.Status != ledger.Timeout || done.Message != "Nobody approved the call in time." {
		t.Errorf("expired item = %+v", done)
	}
	msgs, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	if last := msgs[len(msgs)-1]; last.Content != "resumed: tool call denied by goask" {
		t.Errorf("after expiry the history ends with %q", last.Content)
	}
}

// TestGuestPauseNeedsTheGrant: a guest whose manifest asks for pending
// kinds loads only where the config grants every one.
func TestGuestPauseNeedsTheGrant(t *testing.T) {
	for _, grants := range []string{"", "pending: [ask]"} {
		a := newAskRuntime(t, grants)
		err := a.open()
		want := "its manifest asks to open pending items the config does not grant: question (add them under the extension's pending:)"
		if grants == "" {
			want = "its manifest asks to open pending items the config does not grant: ask, question (add them under the extension's pending:)"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("grants %q: New = %v, want %q", grants, err, want)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

// TestHostilePause: a guest that misuses pending items is refused, each
// misuse failing only its own call: it cannot open items from a turn hook,
// of a kind it did not declare, past the bound of one hook call, or run or
// pause a call it paused; and its pending hook can neither open items nor
// run anything, so it cannot answer its own.
func TestHostilePause(t *testing.T) {
	const script = `
agents:
  a:
    turns:
      - match: "^call"
        steps:
          - tool_calls: [{name: list_files, id: c1}]
          - text: "never reached"
    fallback:
      steps:
        - text: "plain"
`
	rt := start(t, "[{wasm: testdata/hostile_pause.wasm, pending: [ask]}]", script)
	ctx := context.Background()
	tests := []struct {
		input string
		want  []string // parts of the turn's error
	}{
		{"misuse", []string{
			`unlisted=-3: pause: the manifest's pending does not list the kind "other"`,
			`malformed=-1: pause request: unexpected EOF`,
			`notobject=-1: pause request: request must be a JSON object (what the human is asked)`}},
		{"turnpause", []string{`pause=-1: pause is for step, reply and tool_call hooks, not turn`}},
		{"call", []string{`next=-8: next: the call waits for pending item p-`, `; it runs when the turn resumes`,
			`pause=-8: pause: the call waits for pending item p-`, ` already; a call pauses once`}},
		{"flood", []string{`flood=-6: pause: over the limit of 16 pending items per hook call`}},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			_, err := rt.Send(ctx, "a", tt.input, runtime.UserMessage(tt.input))
			if err == nil {
				t.Fatalf("Send(%q) succeeded, want the guest's failure", tt.input)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Send(%q) = %v\nwant it to hold %q", tt.input, err, w)
				}
			}
			// Another instance's turn is not touched.
			if res, err := rt.Send(ctx, "a", "other-"+tt.input, runtime.UserMessage("hello")); err != nil || res.Response.Content != "plain" {
				t.Errorf("a plain turn after %q = %+v, %v", tt.input, res, err)
			}
		})
	}
	items, err := rt.Pending(ctx, ledger.Filter{Agent: "a", Instance: "flood", Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 16 {
		t.Fatalf("the flood opened %d items, want the bound, 16", len(items))
	}
	_, err = rt.Answer(ctx, items[0].ID, "yes")
	want := `invalid action: pause=-1: pause is for step, reply and tool_call hooks, not pending; ` +
		`next=-1: a pending hook calls next only to resume a paused call, not in the resolve phase`
	if !errors.Is(err, extensions.ErrInvalidAction) || !strings.Contains(err.Error(), want) {
		t.Errorf("Answer = %v\nwant %q", err, want)
	}
	if it, err := rt.PendingItem(ctx, items[0].ID); err != nil || !it.Open {
		t.Errorf("after the refused answer the item is %+v, %v; want it open", it, err)
	}
}

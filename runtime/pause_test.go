package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/extensions/standard"
	"github.com/ganglion-dev/ganglion/internal/logtest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

const pauseConfig = `
workspace: ws
agents:
  - name: a
    tools: [execute_command]
    extensions: [{name: protocol}]
`

// pauseScript asks an optional question and a required API key in one
// response, then, resumed, runs a command that uses the key.
const pauseScript = `
agents:
  a:
    turns:
      - steps:
          - text: |
              I need two things.
              [USER_QUESTION]
              category: business
              question: What pricing model?
              options: [Subscription, Freemium, "Ads, with a free tier"]
              default: Freemium
              required: false
              [/USER_QUESTION]
              [DEPENDENCY_REQUEST]
              type: api_key
              name: OPENAI_API_KEY
              description: Required for OpenAI API integration
              required: true
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "Resumed with: {{ .LastMessage }}"
            tool_calls: [{name: execute_command, id: c1, args: {command: 'echo "key=$OPENAI_API_KEY"'}}]
          - text: "Done: {{ .LastMessage }}"
    fallback:
      steps:
        - text: "fallback {{ .Input }}"
`

// clock is a settable clock for deadlines.
type clock struct{ ns atomic.Int64 }

var clockBase = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func (c *clock) now() time.Time          { return clockBase.Add(time.Duration(c.ns.Load())) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newPauseHarness(t *testing.T, script string, opts ...runtime.Option) (*harness, *clock) {
	t.Helper()
	c := &clock{}
	h := newHarness(t, pauseConfig, script, append([]runtime.Option{runtime.WithClock(c.now), runtime.WithoutExpiryTimer()}, opts...)...)
	if err := os.MkdirAll(filepath.Join(h.dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	return h, c
}

// openItems returns the open items of instance k, question first.
func openItems(t *testing.T, rt *runtime.Runtime, k string) []ledger.Item {
	t.Helper()
	items, err := rt.Pending(context.Background(), ledger.Filter{Agent: "a", Instance: k, Open: true})
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	slices.SortFunc(items, func(x, y ledger.Item) int { return strings.Compare(y.Kind, x.Kind) })
	return items
}

func TestPauseAndResume(t *testing.T) {
	ctx := context.Background()
	h, _ := newPauseHarness(t, pauseScript)
	var topics []string
	h.rt.Events().Subscribe("pending.*", func(ev events.Event) { topics = append(topics, ev.Topic) })

	res := h.mustSend("a", "k", "Build me a SaaS")
	if res.FinishReason != pipeline.FinishPaused || res.TurnID != "turn-1" {
		t.Fatalf("first turn = %s %s, want paused turn-1", res.TurnID, res.FinishReason)
	}
	items := openItems(t, h.rt, "k")
	if len(items) != 2 {
		t.Fatalf("open items = %+v, want a question and a dependency", items)
	}
	q, dep := items[0], items[1]
	if q.Kind != protocol.ItemQuestion || q.Required || q.TurnID != "turn-1" || q.Step != 1 || q.Extension != "protocol" ||
		q.Status != ledger.Pending || !q.ExpiresAt.Equal(clockBase.Add(time.Hour)) || q.Checkpoint == "" {
		t.Errorf("question item = %+v", q)
	}
	if dep.Kind != protocol.ItemDependency || !dep.Required || !strings.Contains(string(dep.Request), `"name":"OPENAI_API_KEY"`) {
		t.Errorf("dependency item = %+v", dep)
	}

	// Paused: a new message is refused, and nothing runs.
	_, err := h.send(ctx, "a", "k", "hello?")
	if !errors.Is(err, runtime.ErrPaused) || !strings.Contains(err.Error(), q.ID) || !strings.Contains(err.Error(), dep.ID) {
		t.Fatalf("Send while paused: %v", err)
	}

	// One answer of two: the turn still waits.
	got, err := h.rt.Answer(ctx, q.ID, "  freemium ")
	if err != nil || got != nil {
		t.Fatalf("Answer = %v, %v; want nil result (still waiting)", got, err)
	}
	if it, _ := h.rt.PendingItem(ctx, q.ID); it.Status != ledger.Answered || it.Answer != "Freemium" || it.Open {
		t.Errorf("answered question = %+v, want the canonical option stored", it)
	}
	// The value provided resumes the turn, which runs the command.
	const key = "sk-canary-7f3a9c1e5b2d4f60a8c7"
	res, err = h.rt.Provide(ctx, dep.ID, key+"\n")
	if err != nil {
		t.Fatalf("Provide: %v", err)
	}
	if res.FinishReason != pipeline.FinishText || res.TurnID != "turn-2" {
		t.Fatalf("resume turn = %+v", res)
	}
	hist := strings.Join(h.history("a", "k"), "\n")
	for _, want := range []string{
		`Answer to your question "What pricing model?": Freemium`,
		"The dependency OPENAI_API_KEY (api_key) was provided. Its value is not shown to you: execute_command receives it as the environment variable $OPENAI_API_KEY.",
		"key=[secret OPENAI_API_KEY]",
	} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}
	if strings.Contains(hist, key) {
		t.Fatalf("the secret is in the history:\n%s", hist)
	}
	for _, id := range []string{q.ID, dep.ID} {
		it, _ := h.rt.PendingItem(ctx, id)
		if it.ResumedBy != "turn-2" || it.Open {
			t.Errorf("item %s = %+v, want resumed by turn-2", id, it)
		}
		if strings.Contains(it.Answer+it.Message+string(it.Request), key) {
			t.Errorf("item %s holds the secret", id)
		}
	}
	if want := []string{"pending.created", "pending.created", "pending.answered", "pending.provided", "pending.resumed", "pending.resumed"}; !slices.Equal(topics, want) {
		t.Errorf("events = %v, want %v", topics, want)
	}
	// Unpaused: messages are taken again.
	if res := h.mustSend("a", "k", "thanks"); res.FinishReason != pipeline.FinishText {
		t.Errorf("after resume: %s", res.FinishReason)
	}
}

func TestPendingRefusals(t *testing.T) {
	ctx := context.Background()
	h, _ := newPauseHarness(t, pauseScript)
	h.mustSend("a", "k", "go")
	items := openItems(t, h.rt, "k")
	q, dep := items[0], items[1]
	tests := []struct {
		name    string
		act     func() (*pipeline.TurnResult, error)
		is      error
		wantErr string
	}{
		{"not an option", func() (*pipeline.TurnResult, error) { return h.rt.Answer(ctx, q.ID, "Premium") },
			extensions.ErrInvalidAction, `pending item "` + q.ID + `": invalid action: answer "Premium" must be one of: Subscription, Freemium, Ads, with a free tier`},
		{"provide to a question", func() (*pipeline.TurnResult, error) { return h.rt.Provide(ctx, q.ID, "x") },
			extensions.ErrInvalidAction, `pending item "` + q.ID + `": invalid action: a question is answered or skipped, not provided`},
		{"answer a dependency", func() (*pipeline.TurnResult, error) { return h.rt.Answer(ctx, dep.ID, "x") },
			extensions.ErrInvalidAction, `pending item "` + dep.ID + `": invalid action: a dependency is provided or rejected, not answered`},
		{"skip a dependency", func() (*pipeline.TurnResult, error) { return h.rt.Skip(ctx, dep.ID) },
			extensions.ErrInvalidAction, `pending item "` + dep.ID + `": invalid action: a dependency is provided or rejected, not skipped`},
		{"short key", func() (*pipeline.TurnResult, error) { return h.rt.Provide(ctx, dep.ID, "sk-q9z") },
			extensions.ErrInvalidAction, ""},
		{"unknown id", func() (*pipeline.TurnResult, error) { return h.rt.Answer(ctx, "p-000000000000", "x") },
			ledger.ErrNotFound, `pending item "p-000000000000": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.act()
			if !errors.Is(err, tt.is) || res != nil {
				t.Fatalf("err = %v (result %v), want %v", err, res, tt.is)
			}
			if tt.wantErr != "" && err.Error() != tt.wantErr {
				t.Errorf("err = %q\nwant  %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "sk-q9z") {
				t.Errorf("the refusal echoes the value: %v", err)
			}
		})
	}
	// Nothing changed.
	if got := openItems(t, h.rt, "k"); len(got) != 2 || got[0].Status != ledger.Pending || got[1].Status != ledger.Pending {
		t.Fatalf("after refusals: %+v", got)
	}
	// Resolved once, then refused.
	if _, err := h.rt.Skip(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	_, err := h.rt.Answer(ctx, q.ID, "Subscription")
	if !errors.Is(err, ledger.ErrResolved) || err.Error() != `pending item "`+q.ID+`": already resolved (it is skipped)` {
		t.Fatalf("second resolution: %v", err)
	}
	if it, _ := h.rt.PendingItem(ctx, q.ID); it.Answer != "Freemium" || it.Status != ledger.Skipped {
		t.Errorf("skipped question = %+v, want its default", it)
	}
}

// TestSkipRequiredQuestion: a required question cannot be skipped.
func TestSkipRequiredQuestion(t *testing.T) {
	h, _ := newPauseHarness(t, questionScript(true))
	h.mustSend("a", "k", "go")
	q := openItems(t, h.rt, "k")[0]
	_, err := h.rt.Skip(context.Background(), q.ID)
	if !errors.Is(err, extensions.ErrInvalidAction) || !strings.HasSuffix(err.Error(), "a required question cannot be skipped") {
		t.Fatalf("Skip(required) = %v", err)
	}
	res, err := h.rt.Answer(context.Background(), q.ID, "32")
	if err != nil || res.FinishReason != pipeline.FinishText || res.Response.Content != `Got Answer to your question "How old?": 32` {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
}

func questionScript(required bool) string {
	req := "false"
	if required {
		req = "true"
	}
	return `
agents:
  a:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: How old?
              default: 30
              required: ` + req + `
              [/USER_QUESTION]
      - steps:
          - text: "Got {{ .LastMessage }}"
`
}

func dependencyScript(typ, name string, required bool) string {
	req := "false"
	if required {
		req = "true"
	}
	return `
agents:
  a:
    turns:
      - steps:
          - text: |
              [DEPENDENCY_REQUEST]
              type: ` + typ + `
              name: ` + name + `
              description: needed
              required: ` + req + `
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "Got {{ .LastMessage }}"
    fallback:
      steps:
        - text: "fallback"
`
}

func TestRejectDependency(t *testing.T) {
	ctx := context.Background()
	t.Run("required fails the task", func(t *testing.T) {
		h, _ := newPauseHarness(t, dependencyScript("api_key", "STRIPE_KEY", true))
		h.mustSend("a", "k", "go")
		dep := openItems(t, h.rt, "k")[0]
		res, err := h.rt.Reject(ctx, dep.ID, "we do not use Stripe")
		if !errors.Is(err, runtime.ErrTaskFailed) || res.FinishReason != pipeline.FinishError {
			t.Fatalf("Reject = %+v, %v", res, err)
		}
		if want := `agent "a" instance "k" turn-2: task failed: required dependency STRIPE_KEY was rejected: we do not use Stripe`; err.Error() != want {
			t.Errorf("err = %q\nwant  %q", err, want)
		}
		// The task failed, the instance is no longer paused.
		if res := h.mustSend("a", "k", "next"); res.FinishReason != pipeline.FinishText {
			t.Errorf("after the failure: %s", res.FinishReason)
		}
	})
	t.Run("optional resumes empty", func(t *testing.T) {
		h, _ := newPauseHarness(t, dependencyScript("env_variable", "REGION", false))
		h.mustSend("a", "k", "go")
		dep := openItems(t, h.rt, "k")[0]
		res, err := h.rt.Reject(ctx, dep.ID, "use the default region")
		if err != nil || res.FinishReason != pipeline.FinishText {
			t.Fatalf("Reject = %+v, %v", res, err)
		}
		want := "Got The optional dependency REGION (env_variable) was declined (use the default region); its value is empty: go on without it."
		if res.Response.Content != want {
			t.Errorf("response = %q\nwant       %q", res.Response.Content, want)
		}
	})
	t.Run("file inside the workspace", func(t *testing.T) {
		h, _ := newPauseHarness(t, dependencyScript("file", "dataset", true))
		writeFile(t, filepath.Join(h.dir, "ws", "data.csv"), "a,b\n")
		if err := os.Symlink("/etc/passwd", filepath.Join(h.dir, "ws", "escape.csv")); err != nil {
			t.Fatal(err)
		}
		h.mustSend("a", "k", "go")
		dep := openItems(t, h.rt, "k")[0]
		if _, err := h.rt.Provide(ctx, dep.ID, "escape.csv"); !errors.Is(err, extensions.ErrInvalidAction) {
			t.Fatalf("a symlink out of the workspace: %v", err)
		}
		res, err := h.rt.Provide(ctx, dep.ID, "data.csv")
		if err != nil || res.Response.Content != "Got The file dataset was provided at data.csv in the workspace." {
			t.Fatalf("Provide = %+v, %v", res, err)
		}
	})
}

// TestTimeouts drives deadlines with the injected clock.
func TestTimeouts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		script     string
		wantStatus ledger.Status
		wantOpen   bool
		wantReply  string // the resume turn's response; "" when the turn stays paused
		wantErr    string
	}{
		{"optional question takes its default", questionScript(false), ledger.Timeout, false,
			`Got Nobody answered your question "How old?" in time; go on with the default: 30`, ""},
		{"required question stays paused", questionScript(true), ledger.Timeout, true, "", ""},
		{"optional dependency resumes empty", dependencyScript("api_key", "X_KEY", false), ledger.Timeout, false,
			"Got The optional dependency X_KEY (api_key) was not provided in time; its value is empty: go on without it.", ""},
		{"required dependency fails the task", dependencyScript("api_key", "X_KEY", true), ledger.Timeout, false, "",
			"task failed: required dependency X_KEY was not provided in time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, c := newPauseHarness(t, tt.script)
			h.mustSend("a", "k", "go")
			it := openItems(t, h.rt, "k")[0]
			c.advance(59 * time.Minute)
			if got, err := h.rt.ExpirePending(ctx); err != nil || len(got) != 0 {
				t.Fatalf("ExpirePending before the deadline = %+v, %v", got, err)
			}
			c.advance(time.Minute)
			got, err := h.rt.ExpirePending(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, runtime.ErrTaskFailed) {
					t.Fatalf("ExpirePending err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr == "" && (len(got) != 1 || got[0].ID != it.ID) {
				t.Fatalf("expired = %+v", got)
			}
			after, _ := h.rt.PendingItem(ctx, it.ID)
			if after.Status != tt.wantStatus || after.Open != tt.wantOpen {
				t.Errorf("item = %s open=%v, want %s open=%v", after.Status, after.Open, tt.wantStatus, tt.wantOpen)
			}
			hist := h.history("a", "k")
			last := hist[len(hist)-1]
			if tt.wantReply != "" && last != "assistant: "+tt.wantReply {
				t.Errorf("last message = %q\nwant            %q", last, "assistant: "+tt.wantReply)
			}
			if tt.wantOpen {
				// Not expired twice, and still answerable.
				if again, _ := h.rt.ExpirePending(ctx); len(again) != 0 {
					t.Errorf("expired twice: %+v", again)
				}
				if res, err := h.rt.Answer(ctx, it.ID, "41"); err != nil || res.FinishReason != pipeline.FinishText {
					t.Fatalf("answer after the timeout = %+v, %v", res, err)
				}
			}
		})
	}
}

// TestPauseSurvivesRestart: pause, stop the process, start again, answer.
func TestPauseSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	c := &clock{}
	p := newPersistent(t, modelLine+`
data: data
agents:
  - name: a
    extensions: [{name: protocol}]
`, questionScript(true), runtime.WithClock(c.now), runtime.WithoutExpiryTimer())
	rt := p.mustOpen()
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go"))
	if err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	mustClose(t, rt)

	rt = p.mustOpen()
	items := openItems(t, rt, "k")
	if len(items) != 1 {
		t.Fatalf("after restart: %+v", items)
	}
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("again")); !errors.Is(err, runtime.ErrPaused) {
		t.Fatalf("Send after restart: %v, want ErrPaused", err)
	}
	res, err = rt.Answer(ctx, items[0].ID, "40")
	if err != nil || res.TurnID != "turn-2" || res.Response.Content != `Got Answer to your question "How old?": 40` {
		t.Fatalf("Answer after restart = %+v, %v", res, err)
	}
	mustClose(t, rt)
}

// TestExpiryAtStartup: a deadline that passed while no process ran is
// handled when the next one starts.
func TestExpiryAtStartup(t *testing.T) {
	ctx := context.Background()
	c := &clock{}
	p := newPersistent(t, modelLine+`
data: data
agents:
  - name: a
    extensions: [{name: protocol}]
`, questionScript(false), runtime.WithClock(c.now), runtime.WithoutExpiryTimer())
	rt := p.mustOpen()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	mustClose(t, rt)
	c.advance(2 * time.Hour)
	rt = p.mustOpen()
	msgs, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if want := `Got Nobody answered your question "How old?" in time; go on with the default: 30`; last.Content != want {
		t.Fatalf("last message after restart = %q, want %q", last.Content, want)
	}
	if open := openItems(t, rt, "k"); len(open) != 0 {
		t.Fatalf("open after startup expiry: %+v", open)
	}
}

// TestExpiryTimer: while the runtime runs, a deadline passing expires the
// item on its own.
func TestExpiryTimer(t *testing.T) {
	cfg := `
agents:
  - name: a
    extensions: [{name: protocol, config: {timeout: 50ms}}]
`
	h := newHarness(t, cfg, questionScript(false))
	done := make(chan struct{}, 1)
	h.rt.Events().Subscribe("turn.finished", func(ev events.Event) {
		if ev.TurnID == "turn-2" {
			done <- struct{}{}
		}
	})
	if res := h.mustSend("a", "k", "go"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %s", res.FinishReason)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the expiry timer did not resume the turn")
	}
}

// TestExpiryTimerTaskFailureIsNoError: a required dependency nobody
// provides in time fails its task, as it should; the expiry loop logs that
// at info, not as a failure of its own at error.
func TestExpiryTimerTaskFailureIsNoError(t *testing.T) {
	cfg := `
agents:
  - name: a
    extensions: [{name: protocol, config: {dependency_timeout: 50ms}}]
`
	logs := &logtest.Recorder{}
	h := newHarness(t, cfg, dependencyScript("api_key", "X_KEY", true), runtime.WithLogger(slog.New(logs)))
	done := make(chan events.Event, 1)
	h.rt.Events().Subscribe("turn.finished", func(ev events.Event) {
		if ev.TurnID == "turn-2" {
			done <- ev
		}
	})
	if res := h.mustSend("a", "k", "go"); res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %s", res.FinishReason)
	}
	select {
	case ev := <-done:
		if d := ev.Data.(events.TurnFinishedData); d.FinishReason != pipeline.FinishError || !strings.Contains(d.Error, "required dependency X_KEY was not provided in time") {
			t.Errorf("resume turn finished %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the expiry timer did not resume the turn")
	}
	h.rt.Close()
	var infos []string
	for _, l := range levelLines(logs) {
		if strings.HasPrefix(l, "ERROR") {
			t.Errorf("logged at error: %s", l)
		}
		if strings.HasPrefix(l, "INFO") && strings.Contains(l, "timed out") {
			infos = append(infos, l)
		}
	}
	if len(infos) != 1 {
		t.Errorf("info lines about the timeout = %q, want 1", infos)
	}
}

// levelLines returns each record rec kept as "LEVEL message err=...".
func levelLines(rec *logtest.Recorder) []string {
	var out []string
	for _, r := range rec.Records() {
		line := r.Level.String() + " " + r.Message
		if err, ok := logtest.Attr(r, "err"); ok {
			line += " err=" + err.String()
		}
		out = append(out, line)
	}
	return out
}

// TestExtensionReadsGrantedSecret: an extension granted a secret in the
// config reads it in its middleware; one not granted is refused.
func TestExtensionReadsGrantedSecret(t *testing.T) {
	ctx := context.Background()
	type seen struct {
		v     string
		found bool
		err   error
	}
	got := map[string]seen{}
	reader := func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, tc *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			if tc.Input().Kind == pipeline.InputResume {
				v, found, err := api.Secrets.Get(ctx, tc.InstanceKey(), "OPENAI_API_KEY")
				got[api.Name] = seen{v, found, err}
			}
			return tc.Next(ctx)
		})
		return nil
	}
	exts := standard.Registry()
	for _, n := range []string{"granted", "denied"} {
		if err := exts.Register(n, func(extensions.Config) (extensions.Extension, error) { return extensions.Func(reader), nil }); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, `
agents:
  - name: a
    extensions:
      - name: protocol
      - {name: granted, secrets: [OPENAI_API_KEY]}
      - {name: denied}
`, dependencyScript("api_key", "OPENAI_API_KEY", true), runtime.WithExtensions(exts), runtime.WithoutExpiryTimer())
	h.mustSend("a", "k", "go")
	dep := openItems(t, h.rt, "k")[0]
	if _, err := h.rt.Provide(ctx, dep.ID, "sk-granted-0123456789"); err != nil {
		t.Fatal(err)
	}
	if g := got["granted"]; g.v != "sk-granted-0123456789" || !g.found || g.err != nil {
		t.Errorf("granted extension read %+v", g)
	}
	if d := got["denied"]; !errors.Is(d.err, extensions.ErrNotGranted) || d.v != "" {
		t.Errorf("denied extension read %+v", d)
	}
}

// TestResumeRecoveredAtStartup: items resolved by a process that stopped
// before resuming (simulated by resolving through the ledger alone) are
// resumed by the next process, once.
func TestResumeRecoveredAtStartup(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), questionScript(true)+`    fallback:
      steps:
        - text: "fallback"
`)
	cfg := parseConfig(t, dir, modelLine+`
agents:
  - name: a
    extensions: [{name: protocol}]
`)
	open := func() *runtime.Runtime {
		rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithStore(st), runtime.WithoutExpiryTimer())
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt := open()
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	q := openItems(t, rt, "k")[0]
	mustClose(t, rt)
	if _, err := ledger.New(st).Resolve(ctx, q.ID, ledger.Resolution{Status: ledger.Answered, Answer: "7", Message: "Answer: 7"}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second start finds nothing to do
		rt = open()
		mustClose(t, rt)
	}
	rt = open()
	defer mustClose(t, rt)
	msgs, _ := rt.History(ctx, "a", "k")
	var contents []string
	for _, m := range msgs {
		contents = append(contents, m.Content)
	}
	want := []string{"go", "[USER_QUESTION]\ncategory: clarification\nquestion: How old?\ndefault: 30\nrequired: true\n[/USER_QUESTION]\n", "Answer: 7", "Got Answer: 7"}
	if !slices.Equal(contents, want) {
		t.Fatalf("history = %q\nwant      %q", contents, want)
	}
	if it, _ := rt.PendingItem(ctx, q.ID); it.ResumedBy != "turn-2" {
		t.Errorf("item = %+v, want resumed by turn-2", it)
	}
}

// TestPauseUnhandledKind: an extension cannot pause on a kind it does not handle.
func TestPauseUnhandledKind(t *testing.T) {
	var pauseErr error
	exts := standard.Registry()
	exts.Register("pauser", func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
				_, pauseErr = api.Pending.Pause(ctx, s, ledger.Item{Kind: "approval"}, 0)
				return s.Next(ctx)
			})
			return nil
		}), nil
	})
	h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: pauser}]
`, "agents: {a: {fallback: {steps: [{text: hi}]}}}\n", runtime.WithExtensions(exts))
	h.mustSend("a", "k", "go")
	if pauseErr == nil || pauseErr.Error() != `extension "pauser": pause: it handles no pending items of kind "approval" (call Pending.Handle in Register)` {
		t.Fatalf("Pause = %v", pauseErr)
	}
}

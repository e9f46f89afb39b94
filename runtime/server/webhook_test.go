package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/logtest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/server"
)

const hookSecret = "whsec_" + "c2VjcmV0LWtleS1mb3ItdGVzdHM=" // "secret-key-for-tests"

// receiver is a webhook receiver that checks signatures and can refuse.
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	got    []received
	refuse int // answer 503 to this many requests first
	// redirects is how many requests, after those refused, are answered
	// with a 307 to redirect.
	redirects int
	redirect  string
	ts        *httptest.Server
}

type received struct {
	id, typ string
	body    map[string]any
}

func newReceiver(t *testing.T, refuse int) *receiver {
	r := &receiver{t: t, refuse: refuse}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		id, ts, sig := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(hookSecret, "whsec_"))
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(b)
		if want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)); sig != want {
			t.Errorf("webhook %s: signature %q, want %q", id, sig, want)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.refuse > 0 {
			r.refuse--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.redirects > 0 {
			r.redirects--
			http.Redirect(w, req, r.redirect, http.StatusTemporaryRedirect)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("webhook body %s: %v", b, err)
		}
		r.got = append(r.got, received{id: id, typ: body["type"].(string), body: body})
	}))
	t.Cleanup(r.ts.Close)
	return r
}

func (r *receiver) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.got {
		out = append(out, g.typ)
	}
	return out
}

// waitFor waits until the receiver took n notifications.
func (r *receiver) waitFor(n int) []string {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.types(); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatalf("the receiver took %v, want %d notifications", r.types(), n)
	return nil
}

const hookScript = `
agents:
  a:
    turns:
      - match: "ask me"
        steps:
          - text: "[USER_QUESTION]\ncategory: choice\nquestion: Which way?\noptions: [Left, Right]\nrequired: true\n[/USER_QUESTION]"
      - match: "Answer to your question"
        steps: [{text: "ok"}]
      - match: "fail"
        steps: [{error: "the provider fell over"}]
    fallback:
      steps: [{text: "fine"}]
`

// hookRuntime is a runtime whose server sends webhooks from outbox to r.
func hookRuntime(t *testing.T, outbox string, r *receiver, events ...string) (*runtime.Runtime, *server.Server) {
	t.Helper()
	return hookRuntimeWith(t, outbox, r, nil, events...)
}

// hookRuntimeWith is hookRuntime with more options for the server.
func hookRuntimeWith(t *testing.T, outbox string, r *receiver, opts []server.Option, events ...string) (*runtime.Runtime, *server.Server) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(hookScript), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml, max_retries: 0}\nagents:\n  - name: a\n    extensions: [{name: protocol}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithMemoryStore(), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(rt, append(opts, server.WithWebhooks(outbox, server.Webhook{URL: r.ts.URL + "/hook", Secret: hookSecret, Events: events}),
		server.WithWebhookBase(5*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); rt.Close() })
	return rt, srv
}

// TestWebhooks: a question, its answer and a failed turn are posted,
// signed, each once; a turn that finishes well is not.
func TestWebhooks(t *testing.T) {
	r := newReceiver(t, 0)
	rt, _ := hookRuntime(t, t.TempDir(), r)
	ctx := context.Background()
	rt.Send(ctx, "a", "k", runtime.UserMessage("ask me"))
	items, err := rt.Pending(ctx, ledgerOpen())
	if err != nil || len(items) != 1 {
		t.Fatalf("pending = %+v, %v", items, err)
	}
	if _, err := rt.Answer(ctx, items[0].ID, "left"); err != nil {
		t.Fatal(err)
	}
	rt.Send(ctx, "a", "k", runtime.UserMessage("fail now"))
	got := r.waitFor(3)
	time.Sleep(50 * time.Millisecond) // nothing more comes
	if strings.Join(r.types(), " ") != "pending.created pending.resolved turn.failed" {
		t.Errorf("notifications: %v", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	created := r.got[0].body["data"].(map[string]any)
	if created["agent"] != "a" || created["instance"] != "k" || !strings.Contains(mustMarshal(created["event"]), "Which way?") {
		t.Errorf("pending.created = %+v", r.got[0].body)
	}
	if failed := mustMarshal(r.got[2].body); !strings.Contains(failed, "the provider fell over") {
		t.Errorf("turn.failed = %s", failed)
	}
	if r.got[0].id == r.got[1].id || !strings.HasPrefix(r.got[0].id, "evt_") {
		t.Errorf("ids: %q %q", r.got[0].id, r.got[1].id)
	}
}

// TestWebhooksLeaveOtherProcessesEvents: in a cluster, every process's
// bus carries every process's events, and each process notifies its own:
// an event that names another process is not posted.
func TestWebhooksLeaveOtherProcessesEvents(t *testing.T) {
	r := newReceiver(t, 0)
	rt, _ := hookRuntime(t, t.TempDir(), r)
	rt.Events().Publish(events.Event{Topic: events.TurnFinished, Agent: "a", Instance: "k", TurnID: "turn-9", Source: "runtime", Process: "host-2",
		Data: events.TurnFinishedData{FinishReason: pipeline.FinishError, Error: "another process's failure"}})
	rt.Send(context.Background(), "a", "k", runtime.UserMessage("fail now"))
	r.waitFor(1)
	time.Sleep(50 * time.Millisecond) // nothing more comes
	if got := r.types(); len(got) != 1 || got[0] != "turn.failed" {
		t.Fatalf("notifications: %v", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if body := mustMarshal(r.got[0].body); strings.Contains(body, "another process") {
		t.Errorf("another process's event was posted: %s", body)
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestWebhookRetries: a receiver that refuses gets the same notification
// again, with the same ID, until it takes it; only the events a hook
// wants are sent.
func TestWebhookRetries(t *testing.T) {
	r := newReceiver(t, 2)
	rt, _ := hookRuntime(t, t.TempDir(), r, "pending.created")
	rt.Send(context.Background(), "a", "k", runtime.UserMessage("ask me"))
	r.waitFor(1)
	items, _ := rt.Pending(context.Background(), ledgerOpen())
	rt.Answer(context.Background(), items[0].ID, "left")
	time.Sleep(100 * time.Millisecond)
	if got := r.types(); len(got) != 1 || got[0] != "pending.created" {
		t.Errorf("notifications: %v", got)
	}
}

// TestWebhookOutboxSurvives: what a server could not send is sent by the
// next one on the same outbox; an event published again is not sent
// again.
func TestWebhookOutboxSurvives(t *testing.T) {
	outbox := t.TempDir()
	r := newReceiver(t, 1_000_000) // down
	rt, srv := hookRuntime(t, outbox, r)
	created := events.Event{Topic: "pending.created", Time: time.Now(), Agent: "a", Instance: "k", Source: "runtime",
		Data: map[string]any{"id": "p-000000000001", "status": "pending", "kind": "question"}}
	rt.Events().Publish(created)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if entries, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(entries) == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Close()
	rt.Close()
	if entries, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(entries) != 1 {
		t.Fatalf("outbox after the stop: %v", entries)
	}

	// The next server, on the same outbox, with the receiver up.
	r.mu.Lock()
	r.refuse = 0
	r.mu.Unlock()
	rt2, _ := hookRuntime(t, outbox, r)
	r.waitFor(1)
	rt2.Events().Publish(created) // published again: sent once only
	time.Sleep(100 * time.Millisecond)
	if got := r.types(); len(got) != 1 {
		t.Errorf("after the restart: %v", got)
	}
	if entries, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(entries) != 0 {
		t.Errorf("outbox after delivery: %v", entries)
	}
}

func ledgerOpen() ledger.Filter { return ledger.Filter{Open: true} }

// TestWebhookRedirectNotFollowed: a receiver that answers with a redirect
// to another host has not taken the notification: it is tried again, as
// after any other failure, and the warning names where the redirect
// pointed; the other host gets nothing, neither the body nor its
// signature.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	other := newReceiver(t, 0)
	r := newReceiver(t, 0)
	r.redirects, r.redirect = 2, other.ts.URL+"/elsewhere"
	logs := &logtest.Recorder{Min: slog.LevelWarn}
	rt, _ := hookRuntimeWith(t, t.TempDir(), r, []server.Option{server.WithLogger(slog.New(logs))}, "turn.failed")
	rt.Send(context.Background(), "a", "k", runtime.UserMessage("fail now"))
	deadline := time.Now().Add(10 * time.Second)
	for len(r.types())+len(other.types()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := other.types(); len(got) != 0 {
		t.Fatalf("the host the redirect pointed to got %v", got)
	}
	if got := r.waitFor(1); len(got) != 1 || got[0] != "turn.failed" {
		t.Fatalf("notifications: %v", got)
	}
	var warned []string
	for _, rec := range logs.Records() {
		if err, ok := logtest.Attr(rec, "err"); ok {
			warned = append(warned, rec.Message+": "+err.String())
		}
	}
	want := "webhook notification not taken; tried again later: the receiver answered 307 Temporary Redirect, to " + other.ts.URL +
		"/elsewhere: notifications do not follow redirects; configure the URL it points to"
	if len(warned) != 2 || warned[0] != want || warned[1] != want {
		t.Errorf("warnings:\n%s\nwant twice:\n%s", strings.Join(warned, "\n"), want)
	}
}

package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/server"
	"github.com/ganglion-dev/ganglion/store"
)

const guiConfig = `model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
`

const guiScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "All done: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write it"}}]
        - text: "delegated"
  coder: {fallback: {steps: [{text: "written"}]}}
`

// keptStore is a store that outlives the runtimes that use it, as a data
// directory outlives a process.
type keptStore struct{ store.Store }

func (keptStore) Close() error { return nil }

// guiServer runs a runtime with the gui channel on st, and its server.
func guiServer(t *testing.T, st store.Store) (*runtime.Runtime, *httptest.Server, func()) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(guiScript), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(guiConfig))
	if err != nil {
		t.Fatal(err)
	}
	gui := server.NewGUI()
	rt, err := runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithStore(st), runtime.WithoutExpiryTimer(),
		runtime.WithChannel(server.ChannelGUI, gui))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(rt, server.WithToken(token), server.WithGUI(gui))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	stop := func() { ts.Close(); srv.Close(); rt.Close() }
	t.Cleanup(stop)
	return rt, ts, stop
}

// openAnswers opens client's answer stream.
func openAnswers(t *testing.T, ts *httptest.Server, client string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/gui/"+client+"/answers", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("answer stream of %s: %v %v", client, res, err)
	}
	return res, cancel
}

func sendGUI(t *testing.T, ts *httptest.Server, client string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/agents/lead/instances/k/messages",
		strings.NewReader(`{"text": "build it", "metadata": {"channel": "gui", "replyTo": "`+client+`"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("message: %v %v", res, err)
	}
	res.Body.Close()
}

// TestGUIChannel: a browser client's answer reaches its open stream when
// the delegation chain ends; a client that is away gets it when it comes
// back, also from a server started after the answer came.
func TestGUIChannel(t *testing.T) {
	st := keptStore{store.NewMemory()}
	rt, ts, stop := guiServer(t, st)

	res, cancel := openAnswers(t, ts, "tab-1")
	sendGUI(t, ts, "tab-1")
	evs := readSSE(t, res.Body, func(e sseEvent) bool { return e.name == "answer" })
	cancel()
	res.Body.Close()
	if len(evs) != 1 || !strings.Contains(evs[0].data, `"reply_to":"tab-1"`) || !strings.Contains(evs[0].data, "All done:") {
		t.Fatalf("tab-1's answers: %+v", evs)
	}

	// tab-2 is away when its answer comes: it waits.
	sendGUI(t, ts, "tab-2")
	if err := rt.WaitTasks(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ts, _ := rt.Tasks(context.Background(), "", ""); len(ts) != 1 || ts[0].State != runtime.TaskAnswered {
		t.Fatalf("tasks while tab-2 is away: %+v", ts)
	}
	// The server restarts; tab-2 comes back to the new one.
	stop()
	rt2, ts2, _ := guiServer(t, st)
	res, cancel = openAnswers(t, ts2, "tab-2")
	defer cancel()
	defer res.Body.Close()
	evs = readSSE(t, res.Body, func(e sseEvent) bool { return e.name == "answer" })
	if len(evs) != 1 || !strings.Contains(evs[0].data, `"reply_to":"tab-2"`) || !strings.Contains(evs[0].data, "All done:") {
		t.Fatalf("tab-2's answers after coming back: %+v", evs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ts, _ := rt2.Tasks(context.Background(), "", ""); len(ts) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("the delivered answer's task is still stored")
}

// TestStreamedDelegation: a streamed message whose turn delegates goes on
// after its result with the delegations and the merged report, and ends
// with the chain's answer.
func TestStreamedDelegation(t *testing.T) {
	_, ts, _ := guiServer(t, keptStore{store.NewMemory()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a missing answer fails, not hangs
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/agents/lead/instances/k/messages?stream=true", strings.NewReader(`{"text": "build it"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	evs := readSSE(t, res.Body, func(e sseEvent) bool { return e.name == "answer" })
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	got := strings.Join(names, " ")
	if !strings.Contains(got, " result ") || !strings.Contains(got, "task.delegated") || !strings.Contains(got, "task.completed") || !strings.HasSuffix(got, "answer") {
		t.Errorf("events: %s", got)
	}
	if last := evs[len(evs)-1]; !strings.Contains(last.data, "All done:") || !strings.Contains(last.data, `"task.answered"`) {
		t.Errorf("answer = %+v", last)
	}
	if i := strings.Index(got, " result "); strings.Contains(got[:i], "task.completed") {
		t.Errorf("the chain reported before the turn's result: %s", got)
	}
}

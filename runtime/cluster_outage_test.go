package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
	jsstore "github.com/ganglion-dev/ganglion/store/jetstream"
)

const outageScript = `
agents:
  a:
    turns:
      - match: "second"
        steps: [{text: "second answered"}]
    fallback:
      steps:
        - tool_calls: [{name: freeze, id: f1, args: {}}]
        - text: "first answered"
`

// requestTimeout is the store's request timeout in the outage tests.
const requestTimeout = 2 * time.Second

// TestClusterCommitAnswerLost: the NATS server that took a step's commit
// goes silent before it answers (a proxy drops its replies, as when the
// server dies), then its connections drop. The turn ends within the
// store's request timeout with an error matching ErrOutcomeUnknown; the
// next turn of the instance runs, on a history that has the lost commit
// whole or not at all; Close returns.
func TestClusterCommitAnswerLost(t *testing.T) {
	servers := natstest.NewCluster(t, 3)
	proxy := natstest.NewProxy(t, servers.URL(0))
	rt := outageRuntime(t, proxy, 3)

	// The turn's step commits after the tool froze the proxy: the batch
	// reaches the server, its answer is lost.
	bound := requestTimeout + 20*time.Second
	var err error
	done := make(chan error, 1)
	go func() {
		_, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("first"))
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(bound):
		t.Fatalf("the turn whose commit got no answer did not end within %s", bound)
	}
	if !errors.Is(err, store.ErrOutcomeUnknown) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the turn whose commit got no answer: got %v, want an error matching ErrOutcomeUnknown and ErrUnavailable", err)
	}
	if want := `store: commit agent "a" instance "k": the server did not answer within 2s; the batch may or may not be stored`; !strings.Contains(err.Error(), want) {
		t.Fatalf("the turn whose commit got no answer: got %v, want it to say %q", err, want)
	}
	t.Logf("first turn: %v", err)

	// The server's connections drop: the clients reconnect to the others.
	proxy.Cut()
	var res *pipeline.TurnResult
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err = rt.Send(ctx, "a", "k", runtime.UserMessage("second"))
		cancel()
		// A request sent before a client saw its connection drop is lost
		// with it: unavailable, and worth trying again.
		if err == nil || !errors.Is(err, store.ErrUnavailable) || try == 5 {
			break
		}
		t.Logf("second turn, try %d: %v", try+1, err)
	}
	if err != nil || res.Response.Content != "second answered" {
		t.Fatalf("the next turn of the instance: %+v, %v", res, err)
	}
	msgs, err := rt.History(context.Background(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, msgs)

	closeWithin(t, rt)
}

// outageRuntime starts a runtime of a cluster (agent a, whose tool
// freeze freezes proxy) through proxy, whose store's requests wait
// requestTimeout for their answer, keeping replicas copies; closed when
// the test ends.
func outageRuntime(t *testing.T, proxy *natstest.Proxy, replicas int) *runtime.Runtime {
	t.Helper()
	dir := t.TempDir()
	bucket := unsafeName.ReplaceAllString(t.Name(), "_")
	sc, err := scripted.Parse("script.yaml", []byte(outageScript))
	if err != nil {
		t.Fatal(err)
	}
	freeze := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "freeze", Description: "Loses the server's answers.", Category: pipeline.CategoryOther},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			proxy.Freeze()
			return &pipeline.ToolResult{Content: "frozen"}, nil
		}}
	// One connection, through the proxy, for the store and the leases, as
	// a process has.
	file := parseConfig(t, dir, modelLine+fmt.Sprintf("agents:\n  - name: a\n    tools: [freeze]\ncluster: {url: %q, name: %s, lease_ttl: 4s, replicas: %d, request_timeout: %s}\n",
		proxy.URL(), bucket, replicas, requestTimeout))
	opts := []runtime.Option{runtime.WithConfig(file), runtime.WithModel(sc), runtime.WithTool(freeze),
		runtime.WithSecretKey(clusterKey), runtime.WithWasmCache(filepath.Join(dir, "wasm"))}
	if os.Getenv("GANGLION_TEST_CLUSTER_LOG") != "" {
		opts = append(opts, runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	rt, err := runtime.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// closeWithin closes rt, failing t unless Close returns within its
// bound: the store's request timeout, then a lease operation for each of
// the renewal round's steps (ping, membership, leases) and the releases,
// with slack.
func closeWithin(t *testing.T, rt *runtime.Runtime) {
	t.Helper()
	bound := requestTimeout + 4*5*time.Second + 10*time.Second
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- rt.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Close did not return within %s", bound)
	}
	t.Logf("Close took %s", time.Since(start).Round(time.Millisecond))
}

// TestClusterCloseWithSilentServer: Close returns within its bound while
// the NATS server answers nothing, a turn's commit waiting for it.
func TestClusterCloseWithSilentServer(t *testing.T) {
	proxy := natstest.NewProxy(t, natstest.Server(t).ClientURL())
	rt := outageRuntime(t, proxy, 1)
	if _, err := rt.Send(context.Background(), "a", "warm", runtime.UserMessage("second")); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("first"))
		ended <- err
	}()
	// The turn froze the proxy once its commit is what is left.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if proxy.Frozen() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the turn did not reach its tool within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	closeWithin(t, rt)
	if err := <-ended; !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("the turn cut off by the silent server: %v, want an error matching store.ErrUnavailable", err)
	}
}

// checkWellFormed fails t unless msgs is a history whose every tool call
// is answered once, after it, and whose last message is the second turn's
// answer.
func checkWellFormed(t *testing.T, msgs []pipeline.Message) {
	t.Helper()
	calls := map[string]bool{} // by ID: answered
	var lines []string
	for _, m := range msgs {
		lines = append(lines, fmt.Sprintf("%s: %q %v %q", m.Role, m.Content, m.ToolCalls, m.ToolCallID))
		for _, c := range m.ToolCalls {
			calls[c.ID] = false
		}
		if m.Role == pipeline.RoleTool {
			answered, ok := calls[m.ToolCallID]
			if !ok || answered {
				t.Fatalf("tool result for %q without its call, or twice, in:\n%s", m.ToolCallID, joinLines(lines))
			}
			calls[m.ToolCallID] = true
		}
	}
	for id, answered := range calls {
		if !answered {
			t.Fatalf("tool call %q without its result in:\n%s", id, joinLines(lines))
		}
	}
	if n := len(msgs); n == 0 || msgs[n-1].Content != "second answered" {
		t.Fatalf("the history does not end with the second turn's answer:\n%s", joinLines(lines))
	}
	t.Logf("history:\n%s", joinLines(lines))
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestClusterMemberLeavesWithoutStore: a process whose store stops
// answering, while its connection for leases still works, leaves the
// cluster (the other processes stop listing it as live, and take what it
// owned) and joins again once its store answers; it says so once.
func TestClusterMemberLeavesWithoutStore(t *testing.T) {
	srv := natstest.Server(t)
	proxy := natstest.NewProxy(t, srv.ClientURL())
	dir := t.TempDir()
	bucket := unsafeName.ReplaceAllString(t.Name(), "_")
	// Through the proxy first; once it is cut, to the server itself.
	nc, err := nats.Connect(proxy.URL()+","+srv.ClientURL(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	st, err := jsstore.Open(context.Background(), nc, bucket, jsstore.WithRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sc, err := scripted.Parse("script.yaml", []byte(agentsScript))
	if err != nil {
		t.Fatal(err)
	}
	file := parseConfig(t, dir, modelLine+fmt.Sprintf("agents:\n  - name: a\ncluster: {url: %q, name: %s, lease_ttl: 2s}\n", srv.ClientURL(), bucket))
	var logs logtest.Buffer
	for i, opts := range [][]runtime.Option{
		{runtime.WithStore(st), runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))},
		nil,
	} {
		opts = append(opts, runtime.WithConfig(file), runtime.WithModel(sc), runtime.WithSecretKey(clusterKey),
			runtime.WithWasmCache(filepath.Join(dir, fmt.Sprintf("wasm%d", i))))
		rt, err := runtime.New(context.Background(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
	}

	// The processes alive, as the members' bucket lists them.
	_, js := natstest.Connect(t, srv.ClientURL())
	members, err := coord.Open(context.Background(), js, bucket+"_nodes", "observer", 2*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	live := make(chan int, 100)
	watch, stop := context.WithCancel(context.Background())
	defer stop()
	if err := members.WatchHolders(watch, func(l []string) { live <- len(l) }); err != nil {
		t.Fatal(err)
	}
	await := func(want int, within time.Duration, what string) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case n := <-live:
				if n == want {
					return
				}
			case <-deadline:
				t.Fatalf("%s: not %d live processes within %s\nlogs of the process without a store:\n%s", what, want, within, logs.String())
			}
		}
	}
	await(2, 10*time.Second, "at start")
	proxy.Freeze()
	// A TTL of 2 s, a ping of at most 1 s a round: gone within 2 TTL,
	// with slack.
	await(1, 15*time.Second, "once a process's store stopped answering")
	proxy.Cut()
	await(2, 15*time.Second, "once its store answered again")
	if n := strings.Count(logs.String(), "this process leaves the cluster"); n != 1 {
		t.Fatalf("the process said %d times that it leaves the cluster, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "joins the cluster again") {
		t.Fatalf("the process did not say it joins again:\n%s", logs.String())
	}
}

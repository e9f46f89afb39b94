package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// clusterKey seals the secrets of every process of a test cluster: they
// share one.
var clusterKey = []byte("0123456789abcdef0123456789abcdef")

// relayCfg configures relay: which agent a turn asks first, and whether
// the turn instead waits until it is cancelled.
type relayCfg struct {
	Target string `yaml:"target"`
	Block  bool   `yaml:"block"`
	// Meet makes the turn wait, before it asks its target, until as many
	// turns of the cluster have met (testCluster.meet).
	Meet bool `yaml:"meet"`
}

// relay is an extension that marks each turn with the process it ran on
// ("ran on p1"), and asks its target agent (ctx.agents.request) before the
// model answers, unless the input is "warm up": a warm-up turn makes its
// process own the instance.
func relay(process string, blocked chan<- string, took func(time.Duration), meet func(context.Context) error) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		var c relayCfg
		if err := cfg.Decode(&c); err != nil {
			return nil, err
		}
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				mark := pipeline.Message{Role: pipeline.RoleSystem, Content: "ran on " + process}
				if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: mark}); err != nil {
					return nil, err
				}
				if t.Input().Text == "warm up" {
					return t.Next(ctx)
				}
				if c.Block {
					<-ctx.Done()
					blocked <- process
					return nil, ctx.Err()
				}
				if c.Meet {
					if err := meet(ctx); err != nil {
						return nil, err
					}
				}
				if c.Target != "" {
					start := time.Now()
					answer, err := t.Agents().Request(ctx, c.Target, "about: "+t.Input().Text, pipeline.AgentCallOptions{})
					if err != nil {
						return nil, err
					}
					if took != nil {
						took(time.Since(start))
					}
					msg := pipeline.Message{Role: pipeline.RoleSystem, Content: "unconscious: " + answer}
					if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: msg}); err != nil {
						return nil, err
					}
				}
				return t.Next(ctx)
			})
			return nil
		}), nil
	}
}

// testCluster is n runtimes on one config, as n processes of a cluster
// would run it, on a NATS server embedded in the test.
type testCluster struct {
	t       testing.TB
	rts     []*runtime.Runtime
	blocked chan string // the processes whose blocking turn was cancelled

	mu    sync.Mutex
	calls []time.Duration // how long each agent request took, as its caller saw it
	met   int             // the turns that reached meet
	all   chan struct{}   // closed when two have
}

// newCluster starts n runtimes ("p1", "p2", ...) on cfg, under a cluster
// block of its own (leases of 2 s, so that takeovers are quick), on one
// NATS server.
func newCluster(t testing.TB, n int, cfg string) *testCluster {
	t.Helper()
	return newClusterOn(t, natstest.Server(t).ClientURL(), 1, n, cfg, agentsScript)
}

// newClusterOn is newCluster on the NATS servers at urls, keeping
// replicas copies of the shared data, with the model's script; every
// runtime gets more, too.
func newClusterOn(t testing.TB, urls string, replicas, n int, cfg, script string, more ...runtime.Option) *testCluster {
	t.Helper()
	dir := t.TempDir()
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, blocked: make(chan string, n)}
	// Named after the test, so that tests sharing servers do not share
	// buckets.
	bucket := unsafeName.ReplaceAllString(t.Name(), "_")
	for i := range n {
		name := fmt.Sprintf("p%d", i+1)
		file := parseConfig(t, dir, modelLine+cfg+fmt.Sprintf("cluster: {url: %q, name: %s, lease_ttl: 2s, replicas: %d}\n", urls, bucket, replicas))
		opts := []runtime.Option{runtime.WithConfig(file), runtime.WithModel(sc),
			runtime.WithSecretKey(clusterKey), runtime.WithWasmCache(filepath.Join(dir, "wasm-"+name)),
			runtime.WithExtension("relay", relay(name, c.blocked, c.took, c.meet))}
		opts = append(opts, more...)
		if os.Getenv("GANGLION_TEST_CLUSTER_LOG") != "" { // to debug a cluster test
			opts = append(opts, runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("process", name)))
		}
		rt, err := runtime.New(context.Background(), opts...)
		if err != nil {
			t.Fatalf("New %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := rt.Close(); err != nil {
				t.Errorf("Close %s: %v", name, err)
			}
		})
		c.rts = append(c.rts, rt)
	}
	return c
}

// benchRuns counts the runs of a benchmark, to key their instances apart.
var benchRuns atomic.Int64

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// meet waits until two turns of the cluster have called it.
func (c *testCluster) meet(ctx context.Context) error {
	c.mu.Lock()
	if c.all == nil {
		c.all = make(chan struct{})
	}
	if c.met++; c.met == 2 {
		close(c.all)
	}
	all := c.all
	c.mu.Unlock()
	select {
	case <-all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *testCluster) took(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, d)
}

// send runs a turn through process i (0-based).
func (c *testCluster) send(i int, agent, key, text string) (*pipeline.TurnResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.rts[i].Send(ctx, agent, key, runtime.UserMessage(text))
}

func (c *testCluster) mustSend(i int, agent, key, text string) *pipeline.TurnResult {
	c.t.Helper()
	res, err := c.send(i, agent, key, text)
	if err != nil || res.FinishReason != pipeline.FinishText {
		c.t.Fatalf("turn of %s/%s through p%d: %+v, %v", agent, key, i+1, res, err)
	}
	return res
}

// history is the instance's stored history, as process i reads it.
func (c *testCluster) history(i int, agent, key string) []string {
	c.t.Helper()
	msgs, err := c.rts[i].History(context.Background(), agent, key)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]string, len(msgs))
	for j, m := range msgs {
		out[j] = string(m.Role) + ": " + m.Content
	}
	return out
}

func countLines(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// TestClusterTurnsRunOnTheOwner: a turn sent through any process runs on
// the process that owns the instance, one history; when the owner closes,
// the next turn takes the instance over where it is.
func TestClusterTurnsRunOnTheOwner(t *testing.T) {
	c := newCluster(t, 3, `
agents:
  - name: worker
    extensions: [{name: relay}]
`)
	c.mustSend(0, "worker", "k", "one")
	c.mustSend(1, "worker", "k", "two")
	c.mustSend(2, "worker", "k", "three")
	h := c.history(2, "worker", "k")
	if n := countLines(h, "ran on p1"); n != 3 {
		t.Fatalf("%d of 3 turns ran on p1, the owner:\n%s", n, strings.Join(h, "\n"))
	}
	if n := countLines(h, "user: "); n != 3 {
		t.Fatalf("%d user messages, want 3:\n%s", n, strings.Join(h, "\n"))
	}
	if err := c.rts[0].Close(); err != nil {
		t.Fatal(err)
	}
	// p1 gave its lease up as it closed: p2 takes the instance over at
	// once, with the history p1 left.
	res := c.mustSend(1, "worker", "k", "four")
	if res.Response.Content != "worker answers four" {
		t.Errorf("response = %q", res.Response.Content)
	}
	h = c.history(1, "worker", "k")
	if countLines(h, "ran on p2") != 1 || countLines(h, "user: ") != 4 || len(h) != 12 {
		t.Fatalf("after the takeover:\n%s", strings.Join(h, "\n"))
	}
	// p3 routes to the new owner.
	c.mustSend(2, "worker", "k", "five")
	if h = c.history(2, "worker", "k"); countLines(h, "ran on p2") != 2 {
		t.Fatalf("p3's turn did not run on p2:\n%s", strings.Join(h, "\n"))
	}
}

// TestClusterAgentRequestAcrossProcesses: ctx.agents.request reaches the
// process that owns the target instance, and the answer comes back.
func TestClusterAgentRequestAcrossProcesses(t *testing.T) {
	c := newCluster(t, 2, `
agents:
  - name: worker
    extensions: [{name: relay, config: {target: helper}}]
  - name: helper
    extensions: [{name: relay}]
`)
	c.mustSend(1, "helper", "k", "warm up") // p2 owns helper/k
	res := c.mustSend(0, "worker", "k", "plan the day")
	if res.Response.Content != "worker answers plan the day" {
		t.Errorf("response = %q", res.Response.Content)
	}
	w := c.history(0, "worker", "k")
	if countLines(w, "ran on p1") != 1 || countLines(w, "unconscious: helper says about: plan the day") != 1 {
		t.Errorf("worker's history:\n%s", strings.Join(w, "\n"))
	}
	if h := c.history(0, "helper", "k"); countLines(h, "ran on p2") != 2 || countLines(h, "ran on p1") != 0 {
		t.Errorf("helper's turns did not all run on p2, its owner:\n%s", strings.Join(h, "\n"))
	}
}

// TestClusterCycleAcrossProcesses: a cycle of agent calls through two
// processes fails at once, naming the chain, and the sentinel error
// survives the trip between processes.
func TestClusterCycleAcrossProcesses(t *testing.T) {
	c := newCluster(t, 2, `
agents:
  - name: worker
    extensions: [{name: relay, config: {target: critic}}]
  - name: critic
    extensions: [{name: relay, config: {target: worker}}]
`)
	c.mustSend(0, "worker", "k", "warm up")
	c.mustSend(1, "critic", "k", "warm up")
	_, err := c.send(0, "worker", "k", "go")
	want := `call agent "worker": agent call cycle: worker/k → critic/k → worker/k`
	if !errors.Is(err, runtime.ErrCycle) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant ErrCycle containing %q", err, want)
	}
	if h := c.history(0, "critic", "k"); countLines(h, "ran on p2") != 2 {
		t.Errorf("critic's turn did not run on p2:\n%s", strings.Join(h, "\n"))
	}
}

// TestClusterIndependentTurnsCycle: two turns started independently, one
// on each process, each ask the other's instance: no chain of calls links
// them, and the cluster's wait-for graph catches the cycle at once instead
// of letting both wait for their timeout.
func TestClusterIndependentTurnsCycle(t *testing.T) {
	c := newCluster(t, 2, `
agents:
  - name: worker
    extensions: [{name: relay, config: {target: critic, meet: true}}]
  - name: critic
    extensions: [{name: relay, config: {target: worker, meet: true}}]
`)
	c.mustSend(0, "worker", "k", "warm up")
	c.mustSend(1, "critic", "k", "warm up")
	errs := make(chan error, 2)
	go func() { _, err := c.send(0, "worker", "k", "go"); errs <- err }()
	go func() { _, err := c.send(1, "critic", "k", "go"); errs <- err }()
	graph := false
	for range 2 {
		err := <-errs
		if !errors.Is(err, runtime.ErrCycle) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v; want ErrCycle, at once", err)
		}
		graph = graph || strings.Contains(err.Error(), "waits for")
	}
	if !graph {
		t.Error("no turn was refused by the wait-for graph (\"… waits for … already\")")
	}
}

// TestClusterRequestTimeoutAcrossProcesses: the caller's timeout holds
// across processes, and the call's end reaches the owner, whose turn is
// cancelled.
func TestClusterRequestTimeoutAcrossProcesses(t *testing.T) {
	c := newCluster(t, 2, `
agent_calls: {timeout: 1s}
agents:
  - name: worker
    extensions: [{name: relay, config: {target: helper}}]
  - name: helper
    extensions: [{name: relay, config: {block: true}}]
`)
	c.mustSend(1, "helper", "k", "warm up")
	_, err := c.send(0, "worker", "k", "hurry")
	want := `call agent "helper" instance "k": no answer within 1s (its turn was aborted)`
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant DeadlineExceeded containing %q", err, want)
	}
	select {
	case p := <-c.blocked:
		if p != "p2" {
			t.Errorf("the blocked turn ran on %s, want p2", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the owner's turn was never cancelled")
	}
}

// TestClusterConcurrentSendsOneOwner: processes racing to run the first
// turns of one instance agree on one owner, and no turn is lost.
func TestClusterConcurrentSendsOneOwner(t *testing.T) {
	c := newCluster(t, 3, `
agents:
  - name: worker
    extensions: [{name: relay}]
`)
	const perProcess = 5
	var failed atomic.Int32
	done := make(chan struct{})
	for i := range c.rts {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range perProcess {
				if _, err := c.send(i, "worker", "k", fmt.Sprintf("p%d-%d", i+1, j)); err != nil {
					t.Errorf("p%d: %v", i+1, err)
					failed.Add(1)
				}
			}
		}()
	}
	for range c.rts {
		<-done
	}
	h := c.history(0, "worker", "k")
	if n := countLines(h, "user: "); n != 3*perProcess {
		t.Fatalf("%d user messages, want %d:\n%s", n, 3*perProcess, strings.Join(h, "\n"))
	}
	owners := 0
	for _, p := range []string{"ran on p1", "ran on p2", "ran on p3"} {
		if countLines(h, p) > 0 {
			owners++
		}
	}
	if owners != 1 {
		t.Fatalf("turns ran on %d processes, want one owner:\n%s", owners, strings.Join(h, "\n"))
	}
}

// fanOut returns the config and script of a lead that delegates width
// tasks, spread over workers agents, in one step, and answers "All done."
// to their merged report.
func fanOut(width, workers int) (cfg, script string) {
	var c, sc strings.Builder
	c.WriteString("agents:\n  - name: lead\n    tools: [call_agent]\n")
	sc.WriteString("agents:\n  lead:\n    turns:\n      - match: \"warm up\"\n        steps: [{text: \"ready\"}]\n")
	fmt.Fprintf(&sc, "      - match: \"Merged report of %d parallel delegations\"\n        steps: [{text: \"All done.\"}]\n", width)
	sc.WriteString("    fallback:\n      steps:\n        - tool_calls:\n")
	for i := range width {
		fmt.Fprintf(&sc, "            - {name: call_agent, args: {agent_id: w%d, message: \"part %d of the job\"}}\n", i%workers, i)
	}
	sc.WriteString("        - text: \"delegated\"\n")
	for i := range workers {
		fmt.Fprintf(&c, "  - name: w%d\n    extensions: [{name: relay}]\n", i)
		fmt.Fprintf(&sc, "  w%d: {fallback: {steps: [{text: \"part done\"}]}}\n", i)
	}
	return c.String(), sc.String()
}

// TestClusterDelegationFanOut: a lead delegates 100 tasks to ten workers
// whose instances the three processes own; each child runs on its
// worker's owner, the lead gets one merged report of all 100, and the
// answer reaches the Ask that waits for it, on whichever process.
func TestClusterDelegationFanOut(t *testing.T) {
	for _, tt := range []struct {
		name      string
		leadOwner int  // the process that owns the lead's instance; -1: none before the Ask
		placed    bool // the workers' instances are nobody's before: the tasks place them
	}{
		{"asked on the lead's owner", 2, false},
		{"asked on another process", 0, false},
		{"lead owned by nobody", -1, false},
		{"workers placed by their names", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testClusterFanOut(t, tt.leadOwner, tt.placed)
		})
	}
}

func testClusterFanOut(t *testing.T, leadOwner int, placed bool) {
	const width, workers = 100, 10
	cfg, script := fanOut(width, workers)
	c := newClusterOn(t, natstest.Server(t).ClientURL(), 1, 3, cfg, script)
	for i := range workers {
		if !placed {
			c.mustSend(i%3, fmt.Sprintf("w%d", i), "k", "warm up")
		}
	}
	if leadOwner >= 0 {
		c.mustSend(leadOwner, "lead", "k", "warm up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := c.rts[2].Ask(ctx, "lead", "k", "do the job")
	if err != nil || rep.Response != "All done." {
		t.Fatalf("Ask through p3: %+v, %v", rep, err)
	}
	h := c.history(0, "lead", "k")
	reports := 0
	for _, m := range h {
		if strings.HasPrefix(m, "user: [System notice") {
			reports++
			if n := strings.Count(m, "\npart done\n"); n != width {
				t.Errorf("the merged report holds %d answers, want %d", n, width)
			}
		}
	}
	if reports != 1 {
		t.Errorf("the lead got %d reports, want 1", reports)
	}
	ran := map[string]bool{} // the processes that ran a worker's turns
	for i := range workers {
		w := c.history(0, fmt.Sprintf("w%d", i), "k")
		if placed {
			// Each worker's tasks ran on one process, where its name
			// placed it; nine delegations (and no warm-up) each.
			for p := range 3 {
				mark := fmt.Sprintf("ran on p%d", p+1)
				if n := countLines(w, mark); n > 0 {
					ran[mark] = true
					if n != width/workers {
						t.Errorf("w%d ran %d of its %d turns on p%d:\n%s", i, n, width/workers, p+1, strings.Join(w, "\n"))
					}
				}
			}
			continue
		}
		want := fmt.Sprintf("ran on p%d", i%3+1)
		if n := countLines(w, want); n != width/workers+1 {
			t.Errorf("w%d ran %d turns on %s, its owner; want %d:\n%s", i, n, want, width/workers+1, strings.Join(w, "\n"))
		}
	}
	// Ten workers hashed to one process of three: once in 20,000 runs.
	if placed && len(ran) < 2 {
		t.Errorf("every worker ran on one process (%v): the tasks did not spread", ran)
	}
	for _, rt := range c.rts {
		if err := rt.WaitTasks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, rt := range c.rts {
		if ts, err := rt.Tasks(ctx, "", ""); err != nil || len(ts) != 0 {
			t.Errorf("p%d sees %d tasks left, %v; want none", i+1, len(ts), err)
		}
	}
}

// TestClusterOpenErrors: a cluster that cannot work fails New saying why,
// and never shows a password of the NATS URL.
func TestClusterOpenErrors(t *testing.T) {
	srv := natstest.Server(t)
	tests := []struct {
		name    string
		cluster string
		opts    []runtime.Option
		want    string
	}{
		{"no shared secret key", fmt.Sprintf("{url: %q}", srv.ClientURL()), nil,
			"cluster: every process seals and opens the same secrets, so they need the same key: set GANGLION_SECRET_KEY"},
		{"memory store", fmt.Sprintf("{url: %q}", srv.ClientURL()), []runtime.Option{runtime.WithSecretKey(clusterKey), runtime.WithMemoryStore()},
			"cluster: a cluster shares its store in JetStream; it cannot run on the memory store"},
		{"unreachable", `{url: "nats://ops:hunter2@127.0.0.1:1"}`, []runtime.Option{runtime.WithSecretKey(clusterKey)},
			"cluster: connect to nats://ops:xxxxx@127.0.0.1:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(runtime.SecretKeyEnv, "")
			dir := t.TempDir()
			sc, err := scripted.Parse("script.yaml", []byte(agentsScript))
			if err != nil {
				t.Fatal(err)
			}
			file := parseConfig(t, dir, modelLine+"agents: [{name: worker}]\ncluster: "+tt.cluster+"\n")
			rt, err := runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(file), runtime.WithModel(sc)}, tt.opts...)...)
			if err == nil {
				rt.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("err = %v\nwant it to contain %q, and no password", err, tt.want)
			}
		})
	}
}

// BenchmarkClusterRequest is a ctx.agents.request between two processes
// on loopback: worker's turn, on p1, asks helper, whose instance p2 owns
// (cross-process) or p1 (one-process), on a cluster of three NATS servers
// keeping three replicas. The p50 and p99 are of the request as its caller
// sees it: the helper's whole turn, its commit to JetStream included.
func BenchmarkClusterRequest(b *testing.B) {
	// Each run has instances of its own, on servers and buckets the
	// runs share.
	urls := natstest.Cluster(b, 3)
	for _, bc := range []struct {
		name  string
		owner int // the process that owns helper's instance
	}{{"one-process", 0}, {"cross-process", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newClusterOn(b, urls, 3, 2, `
agents:
  - name: worker
    extensions: [{name: relay, config: {target: helper}}]
  - name: helper
    extensions: [{name: relay}]
`, agentsScript)
			key := "k" + strconv.FormatInt(benchRuns.Add(1), 10)
			c.mustSend(bc.owner, "helper", key, "warm up")
			c.mustSend(0, "worker", key, "warm up")
			ctx := context.Background()
			in := runtime.UserMessage("go")
			c.calls = c.calls[:0]
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.rts[0].Send(ctx, "worker", key, in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.mu.Lock()
			defer c.mu.Unlock()
			slices.Sort(c.calls)
			b.ReportMetric(float64(c.calls[len(c.calls)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(c.calls[len(c.calls)*99/100].Microseconds()), "p99-µs")
		})
	}
}

const clusterPauseScript = `
agents:
  a:
    turns:
      - steps:
          - text: |
              I need two things.
              [USER_QUESTION]
              category: business
              question: What pricing model?
              options: [Subscription, Freemium]
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
`

// TestClusterEventsAndPendingsEverywhere: a question raised on p1 is seen
// in p2's events and answered through p2; the answers run on p1, the
// owner; a secret provided through p2 crosses to p1 sealed, never in
// clear on NATS; and the ledger's errors keep their identity on the way.
func TestClusterEventsAndPendingsEverywhere(t *testing.T) {
	srv := natstest.Server(t)
	c := newClusterOn(t, srv.ClientURL(), 1, 2, `
agents:
  - name: a
    extensions: [{name: relay}, {name: protocol}]
`, clusterPauseScript)
	// Everything that crosses NATS, to look for the secret in.
	spy, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	var wireMu sync.Mutex
	var wire [][]byte
	if _, err := spy.Subscribe(">", func(m *nats.Msg) {
		wireMu.Lock()
		defer wireMu.Unlock()
		wire = append(wire, slices.Clone(m.Data))
	}); err != nil {
		t.Fatal(err)
	}
	created := make(chan events.Event, 10)
	unsub := c.rts[1].Events().Subscribe("pending.created", func(ev events.Event) { created <- ev })
	defer unsub()

	res, err := c.send(0, "a", "k", "start")
	if !errors.Is(err, runtime.ErrPaused) && (err != nil || res.FinishReason != pipeline.FinishPaused) {
		t.Fatalf("the first turn: %+v, %v; want it paused", res, err)
	}
	for range 2 {
		select {
		case ev := <-created:
			if ev.Process == "" || ev.Agent != "a" || ev.Instance != "k" {
				t.Errorf("p2 saw %+v; want p1's pending.created of a/k, naming its process", ev)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("p2 never saw the items p1 created")
		}
	}
	ctx := context.Background()
	items, err := c.rts[1].Pending(ctx, ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 2 {
		t.Fatalf("p2's pending items: %+v, %v", items, err)
	}
	var question, dependency string
	for _, it := range items {
		if it.Kind == "question" {
			question = it.ID
		} else {
			dependency = it.ID
		}
	}
	if res, err := c.rts[1].Answer(ctx, question, "Subscription"); err != nil || res != nil {
		t.Fatalf("Answer through p2: %+v, %v; want no resume yet", res, err)
	}
	if _, err := c.rts[1].Answer(ctx, question, "Freemium"); !errors.Is(err, ledger.ErrResolved) {
		t.Errorf("answering again through p2: %v; want ledger.ErrResolved", err)
	}
	const secret = "sk-cluster-9f8e7d6c5b4a"
	res, err = c.rts[1].Provide(ctx, dependency, secret)
	if err != nil || res == nil || res.FinishReason != pipeline.FinishText || !strings.HasPrefix(res.Response.Content, "Resumed with:") {
		t.Fatalf("Provide through p2: %+v, %v; want the resume turn's answer", res, err)
	}
	h := c.history(1, "a", "k")
	if countLines(h, "ran on p1") != 2 || countLines(h, "ran on p2") != 0 {
		t.Errorf("the turns did not both run on p1, the owner:\n%s", strings.Join(h, "\n"))
	}
	wireMu.Lock()
	defer wireMu.Unlock()
	if len(wire) == 0 {
		t.Fatal("the spy saw nothing")
	}
	for _, m := range wire {
		if strings.Contains(string(m), secret) {
			t.Fatalf("the secret crossed NATS in clear: %.300s", m)
		}
	}
}

// BenchmarkClusterDelegationFanOut is BenchmarkDelegationFanOut's Ask (a
// lead delegating 100 tasks in one step, to its final answer on their
// merged report) on a cluster of three NATS servers keeping three
// replicas: the tasks spread over three processes, or all run in one.
// Each Ask has instances of its own, which the tasks place.
func BenchmarkClusterDelegationFanOut(b *testing.B) {
	urls := natstest.Cluster(b, 3)
	cfg, script := fanOut(fanOutWidth, fanOutWidth)
	for _, bc := range []struct {
		name      string
		processes int
	}{{"one-process", 1}, {"three-processes", 3}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newClusterOn(b, urls, 3, bc.processes, cfg, script)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				key := "k" + strconv.FormatInt(benchRuns.Add(1), 10)
				actx, cancel := context.WithTimeout(ctx, time.Minute)
				rep, err := c.rts[0].Ask(actx, "lead", key, "do the job")
				cancel()
				if err != nil || rep.Response != "All done." {
					ts, _ := c.rts[0].Tasks(ctx, "", "")
					for _, t := range ts {
						b.Logf("task %s %s/%s %s pending %d responses %d", t.ID, t.Agent, t.Instance, t.State, t.Pending, len(t.Context.Responses))
					}
					b.Fatalf("Ask: %+v, %v", rep, err)
				}
			}
		})
	}
}

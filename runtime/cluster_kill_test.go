package runtime_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// The environment of a cluster process that TestClusterOwnerKilledMidDelegation
// starts from the test binary: its config file, and the directory where
// its tools leave marks.
const (
	clusterNodeEnv  = "GANGLION_TEST_CLUSTER_NODE"
	clusterMarksEnv = "GANGLION_TEST_CLUSTER_MARKS"
)

const killScript = `
agents:
  lead:
    turns:
      - match: "Delegation report"
        steps: [{text: "lead got the report"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, id: d1, args: {agent_id: w, message: "do the work"}}]
        - text: "delegated"
  w:
    turns:
      - match: "warm up"
        steps: [{text: "ready"}]
    fallback:
      steps:
        - tool_calls: [{name: record, id: r1, args: {}}]
        - tool_calls: [{name: block, id: b1, args: {}}]
        - text: "w done"
`

// markTools are record, which appends a line naming its process to
// marks/record.log, and block, which says it started in marks/blocked and,
// in the process that will be killed, waits for the kill.
func markTools(marks string, waits bool) []runtime.Option {
	record := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "record", Description: "Records that it ran.", Category: pipeline.CategoryOther},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			f, err := os.OpenFile(filepath.Join(marks, "record.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			if _, err := fmt.Fprintf(f, "ran in %d\n", os.Getpid()); err != nil {
				return nil, err
			}
			return &pipeline.ToolResult{Content: "recorded"}, f.Sync()
		}}
	block := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "block", Description: "Blocks.", Category: pipeline.CategoryOther},
		Func: func(ctx context.Context, _ *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			name := "blocked"
			if !waits {
				name = "blocked-again" // the test fails on it
			}
			if err := os.WriteFile(filepath.Join(marks, name), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				return nil, err
			}
			if waits {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &pipeline.ToolResult{Content: "not blocked"}, nil
		}}
	return []runtime.Option{runtime.WithTool(record), runtime.WithTool(block)}
}

// runClusterNode is the process TestClusterOwnerKilledMidDelegation kills:
// it joins the cluster, takes worker w's instance with a first turn, says
// so, and serves until it is killed.
func runClusterNode(cfg string) {
	marks := os.Getenv(clusterMarksEnv)
	rt, err := runtime.New(context.Background(), append(markTools(marks, true),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster node:", err)
		os.Exit(1)
	}
	if _, err := rt.Send(context.Background(), "w", "k", runtime.UserMessage("warm up")); err != nil {
		fmt.Fprintln(os.Stderr, "cluster node:", err)
		os.Exit(1)
	}
	os.WriteFile(filepath.Join(marks, "ready"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	select {}
}

// startClusterChild writes a config of agents (a YAML list) and a model
// that plays script, in a cluster of leases of a second on a NATS server
// of its own, and starts the test binary as a process of that cluster in
// the role the environment variable role names (TestMain). It returns the
// config's path, the directory where the process's tools leave marks, the
// process, killed when the test ends, and the NATS server's URL.
func startClusterChild(t *testing.T, role, script, agents string) (cfg, marks string, child *exec.Cmd, url string) {
	t.Helper()
	srv := natstest.Server(t)
	dir := t.TempDir()
	marks = t.TempDir()
	writeFile(t, filepath.Join(dir, "script.yaml"), script)
	cfg = filepath.Join(dir, "ganglion.yaml")
	writeFile(t, cfg, modelLine+fmt.Sprintf("agents:%s\ncluster: {url: %q, lease_ttl: %s}\n", agents, srv.ClientURL(), clusterChildTTL))
	child = exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), role+"="+cfg, clusterMarksEnv+"="+marks)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if child.ProcessState == nil {
			child.Process.Kill() // stopped or not
			child.Wait()
		}
	})
	return cfg, marks, child, srv.ClientURL()
}

// clusterChildTTL is the lease TTL of startClusterChild's cluster.
const clusterChildTTL = time.Second

// awaitFile waits for path to exist.
func awaitFile(t *testing.T, path string, child *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if child.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("%s never appeared", filepath.Base(path))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterOwnerKilledMidDelegation: the process that owns a worker's
// instance is killed (SIGKILL) while the worker's task turn runs, after a
// tool call of the turn was committed and during the next. The other
// process takes the instance over once its lease expires, continues the
// task's turn from where the history says it was (the cut call gets its
// "interrupted" result; the committed one does not run again), and the
// lead gets its report: nothing answered is lost, nothing runs twice.
func TestClusterOwnerKilledMidDelegation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	cfg, marks, child, _ := startClusterChild(t, clusterNodeEnv, killScript, `
  - name: lead
    tools: [call_agent]
  - name: w
    tools: [record, block]`)
	awaitFile(t, filepath.Join(marks, "ready"), child)

	rt, err := runtime.New(context.Background(), append(markTools(marks, false),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	asked := make(chan error, 1)
	var rep *runtime.Report
	go func() {
		var err error
		rep, err = rt.Ask(ctx, "lead", "k", "get it done")
		asked <- err
	}()
	awaitFile(t, filepath.Join(marks, "blocked"), child)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	if err := <-asked; err != nil || rep.Response != "lead got the report" {
		t.Fatalf("Ask: %+v, %v", rep, err)
	}
	log, err := os.ReadFile(filepath.Join(marks, "record.log"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("ran in %d\n", child.Process.Pid); string(log) != want {
		t.Errorf("record ran:\n%s\nwant once, in the killed process (%d)", log, child.Process.Pid)
	}
	if _, err := os.Stat(filepath.Join(marks, "blocked-again")); err == nil {
		t.Error("the cut call ran again after the takeover")
	}
	msgs, err := rt.History(ctx, "w", "k")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	interrupted := false
	for _, m := range msgs {
		lines = append(lines, string(m.Role)+": "+m.Content)
		if m.Role == pipeline.RoleTool && m.Metadata[runtime.MetaInterrupted] == true {
			interrupted = true
		}
	}
	h := strings.Join(lines, "\n")
	if !interrupted || countLines(lines, "tool: recorded") != 1 || !strings.HasSuffix(h, "assistant: w done") {
		t.Errorf("w's history:\n%s\nwant record's result once, block's interrupted, then the answer", h)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if ts, err := rt.Tasks(ctx, "", ""); err != nil || len(ts) != 0 {
		t.Errorf("%d tasks left, %v; want none", len(ts), err)
	}
}

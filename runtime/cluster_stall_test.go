package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// clusterStallEnv names the config of the cluster process that
// TestClusterStalledOwnerIsFenced stops and resumes.
const clusterStallEnv = "GANGLION_TEST_CLUSTER_STALL"

const stallScript = `
agents:
  w:
    turns:
      - match: "take over"
        steps: [{text: "the second owner answered"}]
    fallback:
      steps:
        - tool_calls: [{name: slow, id: s1, args: {}}]
        - text: "the stalled owner answered"
`

// slowTool is slow: in the process to be stalled, it says it started in
// marks/slow and returns once marks/go exists; anywhere else it says it
// ran where it should not have.
func slowTool(marks string, stalls bool) runtime.Option {
	return runtime.WithTool(pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "slow", Description: "Takes its time.", Category: pipeline.CategoryOther},
		Func: func(ctx context.Context, _ *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			if !stalls {
				return &pipeline.ToolResult{Content: "slow ran on the second owner"}, nil
			}
			if err := os.WriteFile(filepath.Join(marks, "slow"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				return nil, err
			}
			for {
				if _, err := os.Stat(filepath.Join(marks, "go")); err == nil {
					return &pipeline.ToolResult{Content: "slow result"}, nil
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
		}})
}

// runStalledNode is the process TestClusterStalledOwnerIsFenced stalls: it
// runs one turn of w/k, which waits in slow, and writes how the turn ended
// to marks/outcome.
func runStalledNode(cfg string) {
	marks := os.Getenv(clusterMarksEnv)
	rt, err := runtime.New(context.Background(), slowTool(marks, true),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stalled node:", err)
		os.Exit(1)
	}
	outcome := ""
	res, err := rt.Send(context.Background(), "w", "k", runtime.UserMessage("work"))
	if err != nil {
		outcome = "failed: " + err.Error()
	} else {
		outcome = "answered: " + res.Response.Content
	}
	if err := os.WriteFile(filepath.Join(marks, "outcome"), []byte(outcome), 0o644); err != nil {
		os.Exit(1)
	}
	rt.Close()
	os.Exit(0)
}

// TestClusterStalledOwnerIsFenced: the process that owns an instance
// stalls (SIGSTOP) in a tool call of a turn, past its lease. Another
// process takes the instance over and runs a turn of it. When the stalled
// process resumes, its turn's next commit is refused by the instance's
// fence, so the history the second owner wrote stays whole: a lease that
// expired stops a process's renewals, the fence its writes.
func TestClusterStalledOwnerIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, stops and resumes a process")
	}
	cfg, marks, child := startClusterChild(t, clusterStallEnv, stallScript, `
  - name: w
    tools: [slow]`)
	awaitFile(t, filepath.Join(marks, "slow"), child)
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	rt, err := runtime.New(context.Background(), slowTool(marks, false),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	time.Sleep(3 * clusterChildTTL) // the stalled process's leases expire
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Send(ctx, "w", "k", runtime.UserMessage("take over"))
	if err != nil || res.Response.Content != "the second owner answered" {
		t.Fatalf("the second owner's turn: %+v, %v", res, err)
	}
	before := historyLines(t, rt, "w", "k")

	writeFile(t, filepath.Join(marks, "go"), "")
	if err := child.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	awaitFile(t, filepath.Join(marks, "outcome"), child)
	outcome, err := os.ReadFile(filepath.Join(marks, "outcome"))
	if err != nil {
		t.Fatal(err)
	}
	want := `failed: agent "w" instance "k" turn-1: save instance w/k: store: commit agent "w" instance "k" with fence `
	if !strings.HasPrefix(string(outcome), want) || !strings.HasSuffix(string(outcome), ": nothing written: store: fenced: another owner took the instance since") {
		t.Errorf("the stalled owner's turn: %s\nwant: %s<fence>: nothing written: store: fenced: another owner took the instance since", outcome, want)
	}
	child.Wait()

	after := historyLines(t, rt, "w", "k")
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("the stalled owner changed the history after the takeover:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	if n := len(after); n < 2 || after[n-2] != "user: take over" || after[n-1] != "assistant: the second owner answered" {
		t.Errorf("history:\n%s\nwant the second owner's turn last", strings.Join(after, "\n"))
	}
	// The instance goes on from there, with nothing overwritten.
	if _, err := rt.Send(ctx, "w", "k", runtime.UserMessage("take over")); err != nil {
		t.Fatal(err)
	}
	if again := historyLines(t, rt, "w", "k"); len(again) != len(after)+2 || strings.Join(again[:len(after)], "\n") != strings.Join(after, "\n") {
		t.Errorf("a later turn:\n%s\nwant the history before it and two more lines", strings.Join(again, "\n"))
	}
}

// historyLines is the instance's history, a line per message.
func historyLines(t *testing.T, rt *runtime.Runtime, agent, key string) []string {
	t.Helper()
	msgs, err := rt.History(context.Background(), agent, key)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(msgs))
	for i, m := range msgs {
		lines[i] = string(m.Role) + ": " + m.Content
	}
	return lines
}

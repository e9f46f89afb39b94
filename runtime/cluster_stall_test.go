package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
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

// slowTool is slow, which says on which owner it ran.
func slowTool(process string) runtime.Option {
	return runtime.WithTool(pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "slow", Description: "Takes its time.", Category: pipeline.CategoryOther},
		Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			return &pipeline.ToolResult{Content: "slow ran on the " + process + " owner"}, nil
		}})
}

// stall waits, in the process to be stalled, until marks/go exists, once
// it said it started in marks/slow.
func stall(ctx context.Context, marks string) error {
	if err := os.WriteFile(filepath.Join(marks, "slow"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(marks, "go")); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tally is an extension that keeps, in the instance's state, the process
// and the last thing it saw there: a turn starting, or a tool call about
// to run. In the process to be stalled (marks not empty), it stalls
// before it writes the tool call.
func tally(process, marks string) runtime.Option {
	return runtime.WithExtension("tally", func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			set := func(ctx context.Context, key, last string) error {
				v, err := json.Marshal(map[string]string{"by": process, "last": last})
				if err != nil {
					return err
				}
				return api.State.Set(ctx, key, v)
			}
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				if err := set(ctx, t.InstanceKey(), "turn "+t.Input().Text); err != nil {
					return nil, err
				}
				return t.Next(ctx)
			})
			api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				if marks != "" {
					if err := stall(ctx, marks); err != nil {
						return nil, err
					}
				}
				if err := set(ctx, c.InstanceKey(), "tool "+c.Name()); err != nil {
					return nil, err
				}
				return c.Next(ctx)
			})
			return nil
		}), nil
	})
}

// runStalledNode is the process TestClusterStalledOwnerIsFenced stalls: it
// runs one turn of w/k, which waits in slow, and writes how the turn ended
// to marks/outcome.
func runStalledNode(cfg string) {
	marks := os.Getenv(clusterMarksEnv)
	rt, err := runtime.New(context.Background(), slowTool("stalled"), tally("stalled", marks),
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
// fence, so the history and the extension state the second owner wrote
// stay whole: a lease that expired stops a process's renewals, the fence
// its writes.
func TestClusterStalledOwnerIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, stops and resumes a process")
	}
	cfg, marks, child, url := startClusterChild(t, clusterStallEnv, stallScript, `
  - name: w
    tools: [slow]
    extensions: [{name: tally}]`)
	awaitFile(t, filepath.Join(marks, "slow"), child)
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	rt, err := runtime.New(context.Background(), slowTool("second"), tally("second", ""),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	awaitNoOwner(ctx, t, url, "w/k") // the stalled process's lease expired
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
	// Its first write after it resumed, tally's, was refused (the state
	// below shows it), which failed the tool call; then the commit of the
	// failed call was refused, which failed the turn.
	want := regexp.MustCompile(`^failed: agent "w" instance "k" turn-1: save instance w/k: store: commit agent "w" instance "k" with fence \d+: nothing written: store: fenced: another owner took the instance since$`)
	if !want.Match(outcome) {
		t.Errorf("the stalled owner's turn: %s\nwant: %s", outcome, want)
	}
	child.Wait()
	if st, err := rt.ExtensionState(ctx, "w", "k", "tally"); err != nil || string(st) != `{"by":"second","last":"turn take over"}` {
		t.Errorf("tally's state: %s, %v; want the second owner's", st, err)
	}

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

// awaitNoOwner waits until nobody holds the lease of instance (agent/key)
// in the default cluster on the NATS server at url.
func awaitNoOwner(ctx context.Context, t *testing.T, url, instance string) {
	t.Helper()
	_, js := natstest.Connect(t, url)
	leases, err := coord.Open(ctx, js, "ganglion_leases", "observer", clusterChildTTL, 1)
	if err != nil {
		t.Fatal(err)
	}
	for {
		owner, err := leases.Owner(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		if owner == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s is still %s's: %v", instance, owner, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// cutStore writes nothing once cut, as a process killed then.
type cutStore struct {
	store.Store
	cut atomic.Bool
}

var errCut = errors.New("the process died here (test)")

func (c *cutStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Store.Commit(ctx, agent, key, b)
}

func (c *cutStore) CommitTasks(ctx context.Context, put []store.TaskRecord, del []string) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Store.CommitTasks(ctx, put, del)
}

func (c *cutStore) PutPending(ctx context.Context, r store.PendingRecord) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Store.PutPending(ctx, r)
}

func (c *cutStore) Close() error { return nil }

const resumeConfig = `workspace: workspace
model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
  - name: worker
    tools: [execute_command]
  - name: other
`

const resumeScript = `agents:
  lead:
    turns:
      - steps:
          - tool_calls: [{name: call_agent, id: d1, args: {agent_id: worker, message: "do the effect"}}]
          - text: "delegated"
      - steps: [{text: "All done."}]
  worker:
    fallback:
      steps:
        - tool_calls:
            - name: execute_command
              id: w1
              args: {command: 'echo "$GANGLION_IDEMPOTENCY_KEY" >> effects.log; while [ ! -e go ]; do sleep 0.01; done'}
        - text: "worker finished"
  other:
    fallback: {steps: [{text: "other here"}]}
`

// killedChain leaves in a new project's data directory what a process
// killed while a delegated worker's command ran leaves: the lead waits for
// the worker, whose call has no result. It returns the project directory.
func killedChain(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(resumeConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(resumeScript), 0o644))
	data := filepath.Join(dir, ".ganglion", "data")
	bs, err := badger.Open(data)
	must(t, err)
	cs := &cutStore{Store: bs}
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfigFile(filepath.Join(dir, "ganglion.yaml")), runtime.WithStore(cs),
		runtime.WithSecretKeyFile(filepath.Join(dir, ".ganglion", "data.key")))
	must(t, err)
	in := runtime.UserMessage("please delegate")
	in.Metadata = map[string]any{"channel": cliChannel, "requester": "user@cli"}
	res, err := rt.Send(ctx, "lead", "default", in)
	if err != nil || res.FinishReason != pipeline.FinishDelegated {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	waitFile(t, filepath.Join(ws, "effects.log"))
	cs.cut.Store(true)
	must(t, os.WriteFile(filepath.Join(ws, "go"), nil, 0o644))
	rt.Close()
	must(t, bs.Close())
	return dir
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func effects(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "workspace", "effects.log"))
	must(t, err)
	return strings.Fields(string(b))
}

var answerLine = regexp.MustCompile(`\[task\] answer to an earlier request \("please delegate"\) from lead/default:\nAll done\.\n`)

// cli runs the CLI on the project dir of killedChain.
func cli(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runCLI(t, "", append(args[:1:1], append([]string{dir, "--data", filepath.Join(dir, ".ganglion", "data")}, args[1:]...)...)...)
}

// TestReadOnlyCommandsRunNothing (D6): history, pending and tasks read a
// data directory with work left open and run none of it.
func TestReadOnlyCommandsRunNothing(t *testing.T) {
	dir := killedChain(t)
	before := cli(t, dir, "history", "--agent", "worker", "--json")
	for _, args := range [][]string{
		{"history", "--agent", "worker"},
		{"history", "--agent", "lead", "--json"},
		{"pending"},
		{"pending", "--all", "--json"},
		{"tasks"},
	} {
		r := cli(t, dir, args...)
		if r.code != exitOK {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	after := cli(t, dir, "history", "--agent", "worker", "--json")
	if after.stdout != before.stdout || strings.Count(after.stdout, "\n") != 2 {
		t.Errorf("reading changed the worker's history:\nbefore:\n%s\nafter:\n%s", before.stdout, after.stdout)
	}
	if got := effects(t, dir); len(got) != 1 {
		t.Errorf("effects = %v, want the one of the killed process", got)
	}
	if h := cli(t, dir, "history", "--agent", "worker"); !strings.HasSuffix(h.stdout, "  -> execute_command "+
		`{"command":"echo \"$GANGLION_IDEMPOTENCY_KEY\" >> effects.log; while [ ! -e go ]; do sleep 0.01; done"}`+
		"\n     [no result: the process stopped while it ran; ganglion resume answers it]\n") {
		t.Errorf("history does not show the call without a result:\n%s", h.stdout)
	}
	r := cli(t, dir, "tasks")
	if n := strings.Count(r.stdout, "\n"); n != 3 {
		t.Errorf("tasks after reading:\n%s", r.stdout)
	}
}

// TestResume (D5): ganglion resume closes the interrupted call, continues
// the worker from its next step (the command does not run again), and
// prints the chain's answer to the earlier request.
func TestResume(t *testing.T) {
	dir := killedChain(t)
	r := cli(t, dir, "resume")
	if r.code != exitOK {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "[interrupted] worker/default turn-1: the process stopped while execute_command (w1) ran; the model reads that it may have taken effect\n"; !strings.Contains(r.stdout, want) {
		t.Errorf("resume does not say %q:\n%s", want, r.stdout)
	}
	if !answerLine.MatchString(r.stdout) || !strings.Contains(r.stdout, "[task] worker reported: worker finished\n") {
		t.Errorf("resume does not print the chain's answer:\n%s", r.stdout)
	}
	if r.stderr != "nothing is left open\n" {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if got := effects(t, dir); len(got) != 1 || !regexp.MustCompile(`^gk-[0-9a-f]{32}$`).MatchString(got[0]) {
		t.Errorf("effects = %v: the interrupted command ran again", got)
	}
	h := cli(t, dir, "history", "--agent", "worker")
	if c := strings.Count(h.stdout, "do the effect"); c != 1 || !strings.Contains(h.stdout, "tool execute_command (error) [interrupted]: interrupted: the process stopped while tool \"execute_command\" ran (call w1)") ||
		strings.Contains(h.stdout, "[no result") {
		t.Errorf("worker history (%d requests):\n%s", c, h.stdout)
	}
	// Nothing is left: a second resume finds nothing to do.
	r = cli(t, dir, "resume")
	if r.code != exitOK || r.stdout != "" || r.stderr != "nothing is left open\n" {
		t.Errorf("second resume: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunFinishesRecoveredChain (D5): a run whose own turn does not
// delegate sees through the chain an earlier process left, and prints its
// answer, instead of cutting it short again when it exits.
func TestRunFinishesRecoveredChain(t *testing.T) {
	dir := killedChain(t)
	r := cli(t, dir, "run", "--agent", "other", "hello")
	if r.code != exitOK {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "other here\n") || !answerLine.MatchString(r.stdout) {
		t.Errorf("run does not print its answer and the earlier chain's:\n%s", r.stdout)
	}
	if got := effects(t, dir); len(got) != 1 {
		t.Errorf("effects = %v: the interrupted command ran again", got)
	}
	if r := cli(t, dir, "tasks"); r.stderr != "no open tasks\n" {
		t.Errorf("tasks after the run:\n%s%s", r.stdout, r.stderr)
	}
}

// TestResumeSaysWhatTimedOut: resume, finding that a required
// dependency's deadline passed while no process ran, fails the agent's
// task and says so: which item, agent and instance, and why. An optional
// question's timeout is said in its own words.
func TestResumeSaysWhatTimedOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, agent, stdout string
	}{
		{"required dependency", "keeper",
			"[pending] $ID of keeper/default timed out: nobody provided the dependency OPENAI_API_KEY; it was required, so the agent's task failed: required dependency OPENAI_API_KEY was not provided in time\n"},
		{"optional question", "asker",
			"[pending] $ID of asker/default timed out: nobody answered; the agent goes on with the default: Freemium\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := pendingProject(t)
			// Pause two hours ago: the item's hour has passed.
			cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
			must(t, err)
			rt, err := runtime.New(t.Context(), runtime.WithConfig(cfg), runtime.WithoutExpiryTimer(),
				runtime.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
			must(t, err)
			res, err := rt.Send(t.Context(), tt.agent, "default", runtime.UserMessage("go"))
			must(t, err)
			must(t, rt.Close())
			if res.FinishReason != pipeline.FinishPaused {
				t.Fatalf("the turn: %+v", res)
			}
			it := onlyItem(t, dir)
			r := runCLI(t, "", "resume", dir)
			check(t, "resume", r, exitOK, ptr(tt.stdout), ptr("nothing is left open\n"), it.ID)
		})
	}
}

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// holdScript: agent a asks a question; the turn that resumes after the
// answer calls hold, then answers.
const holdScript = `
agents:
  a:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: business
              question: Go on?
              options: ["yes", "no"]
              required: true
              [/USER_QUESTION]
      - steps:
          - tool_calls: [{name: hold, id: h1, args: {}}]
          - text: "resumed after hold"
`

const holdConfig = `
agents:
  - name: a
    tools: [hold]
    extensions: [{name: relay}, {name: protocol}]
`

// holdTool is a tool that says it started, then waits until the test
// releases it or its context ends, and records which.
type holdTool struct {
	started chan struct{}
	release chan struct{}

	mu   sync.Mutex
	ends []string // "released", or "cut: " and the context's error
}

func newHoldTool() *holdTool {
	return &holdTool{started: make(chan struct{}, 10), release: make(chan struct{})}
}

func (h *holdTool) tool() runtime.Option {
	return runtime.WithTool(pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "hold", Description: "Holds until released.", Category: pipeline.CategoryOther},
		Func: func(ctx context.Context, _ *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			h.started <- struct{}{}
			select {
			case <-h.release:
				h.end("released")
				return &pipeline.ToolResult{Content: "held, then released"}, nil
			case <-ctx.Done():
				h.end("cut: " + ctx.Err().Error())
				return nil, ctx.Err()
			}
		}})
}

func (h *holdTool) end(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ends = append(h.ends, s)
}

func (h *holdTool) ended() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ends)
}

// pauseOnP1 runs the turn of a/k that asks the question on p1 (which so
// owns the instance), and returns the question's ID as p2 lists it.
func pauseOnP1(t *testing.T, c *testCluster) string {
	t.Helper()
	res, err := c.send(0, "a", "k", "start")
	if !errors.Is(err, runtime.ErrPaused) && (err != nil || res.FinishReason != pipeline.FinishPaused) {
		t.Fatalf("the first turn: %+v, %v; want it paused", res, err)
	}
	items, err := c.rts[1].Pending(context.Background(), ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("p2's pending items: %+v, %v", items, err)
	}
	return items[0].ID
}

type answered struct {
	res *pipeline.TurnResult
	err error
}

// answerThroughP2 answers the question through p2 in the background, and
// waits until its resume turn's call of hold has started (on p1).
func answerThroughP2(t *testing.T, c *testCluster, h *holdTool, id string) <-chan answered {
	t.Helper()
	done := make(chan answered, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := c.rts[1].Answer(ctx, id, "yes")
		done <- answered{res, err}
	}()
	select {
	case <-h.started:
	case a := <-done:
		t.Fatalf("Answer through p2 ended before the resume called hold: %+v, %v", a.res, a.err)
	case <-time.After(time.Minute):
		t.Fatal("the resume turn never called hold")
	}
	return done
}

// TestClusterStopLetsARoutedResumeFinish: a question asked through p1 is
// answered through p2, so the resume turn runs on p1, the owner; p1 is
// stopped while the resume's tool call runs. The stop lets the call and
// the turn finish, as it would a resume answered through p1 itself, and
// the answerer on p2 gets the resume's answer.
func TestClusterStopLetsARoutedResumeFinish(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*runtime.Runtime) error
	}{
		{"Close", (*runtime.Runtime).Close},
		{"Shutdown", func(rt *runtime.Runtime) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return rt.Shutdown(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHoldTool()
			c := newClusterOn(t, natstest.Server(t).ClientURL(), 1, 2, holdConfig, holdScript, h.tool())
			id := pauseOnP1(t, c)
			done := answerThroughP2(t, c, h, id)
			stopped := make(chan error, 1)
			go func() { stopped <- tc.stop(c.rts[0]) }()
			// Let the stop begin while the call holds: the stop must wait
			// for it, not cut it.
			time.Sleep(500 * time.Millisecond)
			close(h.release)

			a := <-done
			if a.err != nil || a.res == nil || a.res.Response.Content != "resumed after hold" {
				t.Errorf("Answer through p2: %+v, %v; want the resume turn's answer", a.res, a.err)
			}
			if err := <-stopped; err != nil {
				t.Errorf("stop of p1: %v", err)
			}
			if got := h.ended(); !slices.Equal(got, []string{"released"}) {
				t.Errorf("hold's calls ended %q; want once, released", got)
			}
			it, err := c.rts[1].PendingItem(context.Background(), id)
			if err != nil || it.Open || it.Status != ledger.Answered || it.ResumedBy == "" {
				t.Errorf("the item after the stop: %+v, %v; want it answered and resumed", it, err)
			}
			hist := c.history(1, "a", "k")
			if len(hist) == 0 || !strings.HasSuffix(hist[len(hist)-1], "resumed after hold") || countLines(hist, "ran on p2") != 0 {
				t.Errorf("the history:\n%s\nwant the resume's answer last, every turn on p1", strings.Join(hist, "\n"))
			}
		})
	}
}

// awaitResumed waits until process i sees item id resumed and the history
// of a/k ending with the resume's answer, and returns the history.
func awaitResumed(t *testing.T, rt *runtime.Runtime, id string) (ledger.Item, []string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		it, err := rt.PendingItem(ctx, id)
		msgs, herr := rt.History(ctx, "a", "k")
		var lines []string
		for _, m := range msgs {
			lines = append(lines, string(m.Role)+": "+m.Content)
		}
		if err == nil && herr == nil && it.ResumedBy != "" && len(lines) > 0 && lines[len(lines)-1] == "assistant: resumed after hold" {
			return it, lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resume was never finished: item %+v, %v; history (%v):\n%s", it, err, herr, strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterStopTooShortForARoutedResume: p1, the owner, is stopped with
// too little time for the resume turn of an answer given through p2. The
// stop cuts the turn when its time is up; the answerer on p2 is told that
// the answer was taken and that the turn finishes on the instance's next
// owner, not that it cancelled anything; and p2, which takes the instance
// over, finishes the turn: the item ends answered and resumed.
func TestClusterStopTooShortForARoutedResume(t *testing.T) {
	h := newHoldTool() // never released: only the stop ends it
	c := newClusterOn(t, natstest.Server(t).ClientURL(), 1, 2, holdConfig, holdScript, h.tool())
	id := pauseOnP1(t, c)
	done := answerThroughP2(t, c, h, id)
	const window = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	start := time.Now()
	err := c.rts[0].Shutdown(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "turns still ran when its time was up, and were cut") {
		t.Errorf("Shutdown of p1: %v; want it to say that its time was up", err)
	}
	// The stop's time, then a release bounded by the cluster's own
	// timeouts: generous slack for a loaded machine.
	t.Logf("Shutdown with %v returned after %v", window, took)
	if took > window+20*time.Second {
		t.Errorf("Shutdown with %v returned after %v", window, took)
	}
	a := <-done
	want := `pending item ` + id + `: the answer was taken, but its resume turn turn-2 did not end: runtime: closed: the runtime stopped before the turn ended; the instance's next owner finishes it`
	if a.err == nil || a.err.Error() != want || !errors.Is(a.err, runtime.ErrClosed) || errors.Is(a.err, context.Canceled) {
		t.Errorf("Answer through p2: %+v, %v;\nwant the error %q, matching ErrClosed", a.res, a.err, want)
	}
	if got := h.ended(); !slices.Equal(got, []string{"cut: context canceled"}) {
		t.Errorf("hold's calls ended %q; want once, cut by the stop", got)
	}
	it, hist := awaitResumed(t, c.rts[1], id)
	if it.Status != ledger.Answered || it.Open || it.ResumedBy != "turn-2" {
		t.Errorf("the item: %+v; want it answered, resumed by turn-2", it)
	}
	cut := "tool: interrupted: the process stopped while tool \"hold\" ran (call h1); it may or may not have taken effect. Check its effect before you run it again.\ntool \"hold\" failed: context canceled"
	if countLines(hist, "system: ran on p2") != 1 || countLines(hist, "user: Answer to your question \"Go on?\": yes") != 1 || countLines(hist, cut) != 1 {
		t.Errorf("the history:\n%s\nwant the resume turn's input once, hold's call interrupted, the turn continued on p2", strings.Join(hist, "\n"))
	}
}

// TestClusterStoppingOwnerSendsTurnsOn: a turn routed to an owner that
// stops waits for the owner's leases to pass, and runs on the next owner,
// instead of failing because the owner closed.
func TestClusterStoppingOwnerSendsTurnsOn(t *testing.T) {
	h := newHoldTool()
	c := newClusterOn(t, natstest.Server(t).ClientURL(), 1, 2, holdConfig+`
  - name: b
    extensions: [{name: relay}]
`, holdScript+`
  b:
    fallback:
      steps: [{text: "b answers"}]
`, h.tool())
	id := pauseOnP1(t, c)
	c.mustSend(0, "b", "k2", "warm up") // p1 owns b/k2 too
	done := answerThroughP2(t, c, h, id)
	stopped := make(chan error, 1)
	go func() { stopped <- c.rts[0].Shutdown(context.Background()) }()
	time.Sleep(300 * time.Millisecond) // the stop refuses new turns now
	sent := make(chan answered, 1)
	go func() {
		res, err := c.send(1, "b", "k2", "hello")
		sent <- answered{res, err}
	}()
	time.Sleep(300 * time.Millisecond) // the turn was sent back, and waits
	close(h.release)
	if a := <-done; a.err != nil {
		t.Errorf("Answer through p2: %+v, %v", a.res, a.err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown of p1: %v", err)
	}
	s := <-sent
	if s.err != nil || s.res.Response.Content != "b answers" {
		t.Fatalf("the turn sent through p2 while p1 stopped: %+v, %v; want it run by the next owner", s.res, s.err)
	}
	if hist := c.history(1, "b", "k2"); countLines(hist, "system: ran on p2") != 1 {
		t.Errorf("b/k2's history:\n%s\nwant the second turn on p2", strings.Join(hist, "\n"))
	}
}

// clusterAskerEnv names the config of the cluster process that
// TestClusterOwnerKilledMidResume kills.
const clusterAskerEnv = "GANGLION_TEST_CLUSTER_ASKER"

// killResumeScript is holdScript with block (markTools) in place of hold.
var killResumeScript = strings.ReplaceAll(holdScript, "{name: hold, id: h1, args: {}}", "{name: block, id: b1, args: {}}")

// runAskingNode is the process TestClusterOwnerKilledMidResume kills: it
// joins the cluster, runs the turn of a/k that asks the question, writes
// the question's ID in marks/ready, and serves until it is killed.
func runAskingNode(cfg string) {
	marks := os.Getenv(clusterMarksEnv)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "cluster node:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	rt, err := runtime.New(ctx, append(markTools(marks, true), runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))...)
	if err != nil {
		fail(err)
	}
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("start")); !errors.Is(err, runtime.ErrPaused) && err != nil {
		fail(err)
	}
	items, err := rt.Pending(ctx, ledger.Filter{Agent: "a", Instance: "k", Open: true})
	if err != nil || len(items) != 1 {
		fail(fmt.Errorf("pending items %+v, %v; want one", items, err))
	}
	os.WriteFile(filepath.Join(marks, "ready"), []byte(items[0].ID), 0o644)
	select {}
}

// TestClusterOwnerKilledMidResume: the owner of an instance is killed
// while the resume turn of an answer given through another process runs
// a tool. The answerer is told that the answer was taken and that the
// instance's next owner finishes the turn; the other process takes the
// instance over and finishes it (the cut call gets its interrupted result
// and does not run again): the item ends answered and resumed.
func TestClusterOwnerKilledMidResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	cfg, marks, child, _ := startClusterChild(t, clusterAskerEnv, killResumeScript, `
  - name: a
    tools: [block]
    extensions: [{name: protocol}]`)
	awaitFile(t, filepath.Join(marks, "ready"), child)
	id, err := os.ReadFile(filepath.Join(marks, "ready"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), append(markTools(marks, false),
		runtime.WithConfigFile(cfg), runtime.WithSecretKey(clusterKey))...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	done := make(chan answered, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := rt.Answer(ctx, string(id), "yes")
		done <- answered{res, err}
	}()
	awaitFile(t, filepath.Join(marks, "blocked"), child)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	// The answerer learns that the owner left when its lease expires, and
	// this process may have finished the turn by when it looks.
	a := <-done
	taken := fmt.Sprintf(`pending item %q: the action was taken (the item is answered)`, id)
	if a.err == nil || !strings.HasPrefix(a.err.Error(), taken) || !errors.Is(a.err, runtime.ErrClosed) || errors.Is(a.err, context.Canceled) ||
		!strings.HasSuffix(a.err.Error(), ` stopped before its resume turn ended; the instance's next owner finishes it (runtime: closed)`) &&
			!strings.Contains(a.err.Error(), ` and resume turn turn-2 ran, but process `) {
		t.Errorf("Answer: %+v, %v; want it to say that the answer was taken, and that the next owner finishes the turn or has", a.res, a.err)
	}
	it, hist := awaitResumed(t, rt, string(id))
	if it.Status != ledger.Answered || it.Open || it.ResumedBy != "turn-2" {
		t.Errorf("the item: %+v; want it answered, resumed by turn-2", it)
	}
	if len(hist) < 2 || !strings.HasPrefix(hist[len(hist)-2], "tool: interrupted: the process stopped while tool \"block\" ran") {
		t.Errorf("the history:\n%s\nwant block's call interrupted, then the answer", strings.Join(hist, "\n"))
	}
	if _, err := os.Stat(filepath.Join(marks, "blocked-again")); err == nil {
		t.Error("the cut call ran again after the takeover")
	}
}

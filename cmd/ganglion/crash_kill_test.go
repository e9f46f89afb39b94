package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestCrashKill kills real ganglion processes with SIGKILL at random
// moments and checks what the next processes make of the data directory
// (issue 12's "Done means"):
//
//   - every tool call in every history has exactly one result once
//     ganglion resume has run (an "interrupted" one for a call the kill
//     cut short);
//   - no command runs twice: each command of the scripts appends its
//     idempotency key and a label unique in its script to effects.log, and
//     no key and no label may appear twice;
//   - every question a model asked has its pending item;
//   - every delegation chain that started finishes, and its answer shows
//     on the standard output of some command (run, resume or answer);
//   - the store opens, and history, tasks and pending work, after each
//     iteration.
//
// Each scenario of testdata/crash is a config and a script. An iteration
// copies it to a fresh directory and runs its plan, one ganglion run per
// message. Three runs in four are killed, at a moment drawn over the run's
// length; after a kill, ganglion resume runs at once, or the next run
// takes up the work. At the end, ganglion resume (killed one time in
// three) runs until it exits 0, and the open questions are answered with
// ganglion answer (killed one time in four) whenever it exits 3. Then the
// checks read the directory. Iteration 0 kills nothing: it measures how
// long each run takes, which bounds the kill delays, and checks the checks.
//
// Environment:
//
//	GANGLION_CRASH_SOAK=N   N kill iterations per scenario (default 5:
//	                        about 10 kills)
//	GANGLION_CRASH_SEED=S   the seed (default: from the clock; it is logged)
//	GANGLION_CRASH_ITER=I   run only iteration I (and iteration 0, which
//	                        measures the runs)
//	GANGLION_CRASH_KEEP=1   keep the directories of failed iterations
//
// Each iteration draws from a generator of its own, seeded with the seed,
// the scenario and the iteration: a seed gives the same draws (which run is
// killed, the delay as a fraction of the run's length, resume now or
// later), while the processes' timing, hence the moment a kill lands, varies
// from machine to machine. TestCrashKillAt kills at chosen moments instead,
// the same way every time.
func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes: skipped with -short")
	}
	iters := envInt(t, "GANGLION_CRASH_SOAK", 5)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GANGLION_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GANGLION_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	only := envInt(t, "GANGLION_CRASH_ITER", -1)
	iters = max(iters, only)
	t.Logf("seed %d (reproduce with GANGLION_CRASH_SEED=%d, one iteration with GANGLION_CRASH_ITER=I), %d iterations per scenario", seed, seed, iters)
	bin := cliBinary(t)
	for si, sc := range crashScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runCrashScenario(t, bin, sc, seed, uint64(si), iters, only)
		})
	}
}

// crashScenario is a directory of testdata/crash and what to do with it.
type crashScenario struct {
	name   string
	agents []string   // every agent of the config: their histories are checked
	plan   [][]string // the arguments of each ganglion run, after DIR
	// chains maps the agent that roots a delegation chain to the text of
	// its final answer.
	chains map[string]string
	// files are copied into the project beside the config, by name, from
	// these paths (relative to this package): a guest's module.
	files map[string]string
}

var crashScenarios = []crashScenario{
	{name: "tools", agents: []string{"worker"},
		plan: [][]string{{"--agent", "worker", "job one"}, {"--agent", "worker", "job two"}}},
	{name: "questions", agents: []string{"asker", "boss", "surveyor"},
		plan:   [][]string{{"--agent", "asker", "plan the launch"}, {"--agent", "boss", "delegate the survey"}},
		chains: map[string]string{"boss": "BOSS-DONE"}},
	// A guest's pauses are as safe as the native extension's: the same
	// questions through the Rust guest of examples/extensions.
	{name: "guest", agents: []string{"asker"},
		plan:  [][]string{{"--agent", "asker", "plan the launch"}},
		files: map[string]string{"rust-question.wasm": "../../examples/extensions/rust-question/rust-question.wasm"}},
	{name: "delegation", agents: []string{"lead", "coder", "tester", "planner", "architect", "engineer"},
		plan:   [][]string{{"--agent", "lead", "fan out"}, {"--agent", "planner", "design a cache"}},
		chains: map[string]string{"lead": "LEAD-DONE", "planner": "PLAN-DONE"}},
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

// crashTrigger is a kill at a chosen moment: of the next command named
// cmd, once it has run the script's command label.
type crashTrigger struct {
	cmd, label string
	wait       time.Duration // from the label to the kill (the command sleeps 3 s, or 6 s with a wait)
	later      bool          // after a killed run: no resume, the next run takes the work up
	fired      bool
}

// crashFinding is one check an iteration failed.
type crashFinding struct{ check, text string }

func runCrashScenario(t *testing.T, bin string, sc crashScenario, seed, index uint64, iters, only int) {
	counts := map[string]int{} // check → iterations that failed it
	kills := map[string]int{}  // command → kills that landed
	ran, failedIters, reported := 0, 0, 0
	var budget []time.Duration // each run's duration without kills
	began := time.Now()
	for i := 0; i <= iters; i++ {
		if only >= 0 && i != only && i != 0 {
			continue
		}
		it := &crashIteration{t: t, bin: bin, sc: sc, n: i, seed: seed,
			rng: rand.New(rand.NewPCG(seed, index<<32|uint64(i))), budget: budget}
		it.dir = crashProject(t, sc)
		it.run()
		if i == 0 {
			budget = it.runTimes
		} else {
			ran++
		}
		for k, n := range it.kills {
			kills[k] += n
		}
		if len(it.findings) == 0 {
			continue
		}
		failedIters++
		seen := map[string]bool{}
		for _, f := range it.findings {
			if !seen[f.check] {
				seen[f.check] = true
				counts[f.check]++
			}
		}
		if i == 0 {
			t.Errorf("%s: the plan without kills fails the checks:\n%s", sc.name, it.report())
			return
		}
		report := it.report()
		if reported < 3 {
			reported++
			t.Errorf("%s: %s", sc.name, report)
		} else {
			t.Errorf("%s iteration %d (seed %d): %s %s", sc.name, i, seed, strings.Join(it.checks(), ", "), it.kept)
		}
	}
	var summary []string
	for k, n := range counts {
		summary = append(summary, fmt.Sprintf("%s in %d", k, n))
	}
	slices.Sort(summary)
	t.Logf("%s: %d kill iterations in %v (runs of %v without kills; kills landed: run %d, resume %d, answer %d); %d failed%s",
		sc.name, ran, time.Since(began).Round(time.Millisecond), budget,
		kills["run"], kills["resume"], kills["answer"], failedIters, strings.TrimSuffix(": "+strings.Join(summary, "; "), ": "))
}

// crashProject copies testdata/crash/NAME, and the scenario's files, into
// a fresh directory with an empty workspace.
func crashProject(t *testing.T, sc crashScenario) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{"ganglion.yaml", "script.yaml"} {
		files[f] = filepath.Join("testdata", "crash", sc.name, f)
	}
	maps.Copy(files, sc.files)
	for f, from := range files {
		b, err := os.ReadFile(from)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	return dir
}

// crashIteration is one iteration of a scenario: the commands it ran and
// what the checks found.
type crashIteration struct {
	t      *testing.T
	bin    string
	sc     crashScenario
	n      int
	seed   uint64
	rng    *rand.Rand
	dir    string
	budget []time.Duration // each run's duration without kills; nil: no random kill
	// killOn are kills at chosen moments, in order: each kills the first
	// command named cmd that runs the script's command label, while that
	// command runs.
	killOn []crashTrigger

	runTimes []time.Duration
	cmds     []*crashCmd
	kills    map[string]int
	findings []crashFinding
	state    string // histories, effects and items, for the report
	kept     string // where report kept the project, if it did
}

// crashCmd is one ganglion process.
type crashCmd struct {
	args           []string
	killAfter      time.Duration // < 0: not killed on purpose
	trigger        string        // killed once effects.log showed this label
	killed         bool          // SIGKILL ended it
	code           int
	took           time.Duration
	stdout, stderr string
}

func (c *crashCmd) String() string {
	s := "ganglion " + strings.Join(c.args, " ")
	switch {
	case c.killed && c.trigger != "":
		s += fmt.Sprintf("  → killed after %v, once %s ran", c.took.Round(time.Millisecond), c.trigger)
	case c.killed:
		s += fmt.Sprintf("  → killed after %v (drawn %v)", c.took.Round(time.Millisecond), c.killAfter.Round(time.Millisecond))
	case c.killAfter >= 0:
		s += fmt.Sprintf("  → exit %d in %v (a kill drawn at %v came too late)", c.code, c.took.Round(time.Millisecond), c.killAfter.Round(time.Millisecond))
	default:
		s += fmt.Sprintf("  → exit %d in %v", c.code, c.took.Round(time.Millisecond))
	}
	return s
}

func (it *crashIteration) find(check, format string, args ...any) {
	it.findings = append(it.findings, crashFinding{check, fmt.Sprintf(format, args...)})
}

// exec runs ganglion with args in the project and waits for it to end. It
// SIGKILLs the process after killAfter unless that is negative, or when the
// next kill of it.killOn names this command and its label shows.
func (it *crashIteration) exec(killAfter time.Duration, args ...string) *crashCmd {
	c := &crashCmd{args: args, killAfter: killAfter}
	it.cmds = append(it.cmds, c)
	ctx, cancel := context.WithTimeout(it.t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, it.bin, args...)
	cmd.Dir = it.dir
	cmd.Env = childEnv()
	cmd.WaitDelay = 5 * time.Second // a tool's process must not hold the test up
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		it.t.Fatalf("start ganglion: %v", err)
	}
	if killAfter >= 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var poll <-chan time.Time
	next := slices.IndexFunc(it.killOn, func(k crashTrigger) bool { return !k.fired })
	if next >= 0 && it.killOn[next].cmd == args[0] {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		poll = tick.C
	}
	var (
		err  error
		seen time.Time // when the trigger's label showed
	)
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-poll:
			// The command logs its label, then sleeps: the kill lands while
			// the tool runs.
			k := &it.killOn[next]
			if seen.IsZero() {
				if log, _ := os.ReadFile(filepath.Join(it.dir, "workspace", "effects.log")); strings.Contains(string(log), " "+k.label+"\n") {
					seen = time.Now()
				}
			}
			if !seen.IsZero() && time.Since(seen) >= k.wait {
				cmd.Process.Signal(syscall.SIGKILL)
				k.fired, c.trigger, poll = true, k.label, nil
			}
		}
	}
	c.took = time.Since(start)
	c.stdout, c.stderr = out.String(), errb.String()
	if ctx.Err() != nil {
		c.code = -1
		it.find("hang", "%s ran for more than %v", c, c.took.Round(time.Second))
		return c
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && (killAfter >= 0 || c.trigger != "") {
		c.killed, c.code = true, -1
		if it.kills == nil {
			it.kills = map[string]int{}
		}
		it.kills[args[0]]++
		return c
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		it.find("exec", "%s: %v", c, err)
	}
	c.code = cmd.ProcessState.ExitCode()
	return c
}

// draw returns, with probability p, a kill delay below limit; else -1, no
// kill. Without a budget it kills nothing.
func (it *crashIteration) draw(p float64, limit time.Duration) time.Duration {
	if it.budget == nil || it.rng.Float64() >= p {
		return -1
	}
	return time.Duration(it.rng.Float64() * float64(limit))
}

// total is the duration of the plan without kills.
func (it *crashIteration) total() time.Duration {
	var d time.Duration
	for _, b := range it.budget {
		d += b
	}
	return d
}

// run runs the plan, settles what it leaves, and checks the result.
func (it *crashIteration) run() {
	for i, p := range it.sc.plan {
		// Most runs are killed, at a moment drawn over the run's length
		// without kills (a little beyond: some kills find it done).
		after := time.Duration(-1)
		if it.budget != nil {
			after = it.draw(3.0/4, it.budget[i]*11/10)
		}
		c := it.exec(after, append([]string{"run", it.dir}, p...)...)
		it.runTimes = append(it.runTimes, c.took)
		switch {
		case c.killed:
			// Resume now, or let the next run take up the work: at random,
			// or as the kill at a chosen moment says.
			later := it.rng == nil && slices.ContainsFunc(it.killOn, func(k crashTrigger) bool { return k.label == c.trigger && k.later })
			if it.rng != nil && it.rng.IntN(2) == 0 || it.rng == nil && !later {
				it.settle()
			}
		case c.code != exitOK && c.code != exitPaused:
			it.find("exit", "%s\nstderr:\n%s", c, c.stderr)
		}
	}
	it.settle()
	it.check()
}

// settle runs resume, and answers what waits for a human, until resume
// says nothing is left open.
func (it *crashIteration) settle() {
	resumeKills, answerKills := 0, 0
	for range 12 {
		after := time.Duration(-1)
		if resumeKills < 2 {
			after = it.draw(1.0/3, it.total())
		}
		c := it.exec(after, "resume", it.dir)
		switch {
		case c.killed:
			resumeKills++
			continue
		case c.code == exitOK:
			return
		case c.code != exitPaused:
			it.find("exit", "%s\nstderr:\n%s", c, c.stderr)
			return
		}
		items, ok := it.pending(false)
		if !ok {
			return
		}
		if len(items) == 0 {
			it.find("exit", "%s says an agent waits for a human, and ganglion pending lists nothing open\nstderr:\n%s", c, c.stderr)
			return
		}
		for _, item := range items {
			var q struct{ Options []string }
			json.Unmarshal(item.Request, &q)
			if item.Kind != "question" || len(q.Options) == 0 {
				it.find("exit", "an item the scripts do not ask: %+v", item)
				return
			}
			after := time.Duration(-1)
			if answerKills < 2 {
				after = it.draw(1.0/4, it.total()/2)
			}
			a := it.exec(after, "answer", it.dir, item.ID, q.Options[0])
			switch {
			case a.killed:
				answerKills++
			case a.code != exitOK && a.code != exitPaused:
				it.find("exit", "%s\nstderr:\n%s", a, a.stderr)
			}
		}
	}
	it.find("unsettled", "ganglion resume did not exit 0 after 12 rounds")
}

// crashItem is what ganglion pending --json prints of an item.
type crashItem struct {
	ID, Kind, Agent, Instance, Status, Checkpoint string
	TurnID                                        string `json:"turn_id"`
	Open                                          bool
	Request                                       json.RawMessage
}

// pending lists the pending items, open ones or all.
func (it *crashIteration) pending(all bool) ([]crashItem, bool) {
	args := []string{"pending", it.dir, "--json"}
	if all {
		args = append(args, "--all")
	}
	c := it.exec(-1, args...)
	if c.code != exitOK {
		it.find("store", "%s\nstderr:\n%s", c, c.stderr)
		return nil, false
	}
	var items []crashItem
	for line := range strings.Lines(c.stdout) {
		var item crashItem
		if err := json.Unmarshal([]byte(line), &item); err != nil {
			it.find("store", "%s: line %q: %v", c, line, err)
			return nil, false
		}
		items = append(items, item)
	}
	return items, true
}

// effectLine is what a script's command appends to effects.log.
var effectLine = regexp.MustCompile(`^(gk-[0-9a-f]{32}) ([a-z0-9-]+)$`)

// effectLabel finds a command's label in its arguments.
var effectLabel = regexp.MustCompile(`GANGLION_IDEMPOTENCY_KEY ([a-z0-9-]+)`)

// callLabel returns the label of a script's command, "" for another call.
func callLabel(c pipeline.ToolCall) string {
	if sm := effectLabel.FindStringSubmatch(string(c.Arguments)); sm != nil {
		return sm[1]
	}
	return ""
}

// interruptedResult is how an interrupted result starts.
var interruptedResult = regexp.MustCompile(`^interrupted: the process stopped while tool "([a-z_]+)" ran \(call ([^)]+)\); it may or may not have taken effect\.`)

// toolCall is a call of a history, and what answers it.
type toolCall struct {
	agent, msgID string
	call         pipeline.ToolCall
	results      []*pipeline.Message
}

// check reads what the iteration left and checks it.
func (it *crashIteration) check() {
	var state strings.Builder
	histories := map[string][]pipeline.Message{}
	for _, agent := range it.sc.agents {
		c := it.exec(-1, "history", it.dir, "--agent", agent, "--json")
		if c.code != exitOK {
			it.find("store", "%s\nstderr:\n%s", c, c.stderr)
			continue
		}
		var msgs []pipeline.Message
		for line := range strings.Lines(c.stdout) {
			var m pipeline.Message
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				it.find("store", "%s: line %q: %v", c, line, err)
				break
			}
			msgs = append(msgs, m)
		}
		histories[agent] = msgs
		fmt.Fprintf(&state, "history of %s:\n", agent)
		for _, m := range msgs {
			fmt.Fprintf(&state, "  %s\n", describeMessage(m))
		}
	}
	tasks := it.exec(-1, "tasks", it.dir, "--json")
	if tasks.code != exitOK {
		it.find("store", "%s\nstderr:\n%s", tasks, tasks.stderr)
	}
	items, _ := it.pending(true)
	for _, item := range items {
		fmt.Fprintf(&state, "pending item %s %s/%s %s %s checkpoint %s\n", item.ID, item.Agent, item.Instance, item.TurnID, item.Status, item.Checkpoint)
		if item.Open {
			it.find("open-item", "item %s of %s is still open after resume exited 0", item.ID, item.Agent)
		}
	}
	if tasks.stdout != "" {
		fmt.Fprintf(&state, "open tasks:\n%s", tasks.stdout)
	}
	log, err := os.ReadFile(filepath.Join(it.dir, "workspace", "effects.log"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		it.t.Fatal(err)
	}
	fmt.Fprintf(&state, "effects.log:\n%s", log)
	it.state = state.String()

	// Every call has exactly one result.
	calls := map[string]*toolCall{} // idempotency key → call
	for _, agent := range it.sc.agents {
		var open []*toolCall
		for i := range histories[agent] {
			m := &histories[agent][i]
			for _, c := range m.ToolCalls {
				tc := &toolCall{agent: agent, msgID: m.ID, call: c}
				open = append(open, tc)
				calls[pipeline.IdempotencyKey(agent, "default", m.ID, c.ID)] = tc
			}
			if m.Role != pipeline.RoleTool {
				continue
			}
			// The result answers the latest call with its ID that has none.
			j := slices.IndexFunc(open, func(tc *toolCall) bool { return tc.call.ID == m.ToolCallID && len(tc.results) == 0 })
			if j < 0 {
				it.find("extra-result", "%s %s: a result for call %s, which has a result already or was never made", agent, m.ID, m.ToolCallID)
				continue
			}
			open[j].results = append(open[j].results, m)
			if m.Metadata[runtime.MetaInterrupted] == true {
				if sm := interruptedResult.FindStringSubmatch(m.Content); sm == nil || sm[1] != m.Name || sm[2] != m.ToolCallID || !m.IsError {
					it.find("interrupted-result", "%s %s: an interrupted result that does not say so as it should: %+v", agent, m.ID, m)
				}
			}
		}
		for _, tc := range open {
			if len(tc.results) == 0 {
				it.find("no-result", "%s %s: call %s (%s) has no result", agent, tc.msgID, tc.call.ID, tc.call.Name)
			}
		}
	}

	// No command ran twice, and each ran as its result says.
	keys, labels := map[string]int{}, map[string]int{}
	for line := range strings.Lines(string(log)) {
		sm := effectLine.FindStringSubmatch(strings.TrimSpace(line))
		if sm == nil {
			it.find("effects", "effects.log holds %q", line)
			continue
		}
		keys[sm[1]]++
		labels[sm[2]]++
		tc := calls[sm[1]]
		switch {
		case tc == nil:
			it.find("unknown-effect", "%s (%s) ran with a key no call of the histories has", sm[2], sm[1])
		case callLabel(tc.call) != sm[2]:
			it.find("unknown-effect", "%s ran with the key of %s %s call %s, another command", sm[2], tc.agent, tc.msgID, tc.call.ID)
		}
	}
	for k, n := range keys {
		if n > 1 {
			it.find("rerun", "key %s is in effects.log %d times", k, n)
		}
	}
	for l, n := range labels {
		if n > 1 {
			it.find("rerun", "command %s ran %d times", l, n)
		}
	}
	for key, tc := range calls {
		if tc.call.Name != "execute_command" || len(tc.results) == 0 || tc.results[0].IsError {
			continue
		}
		if keys[key] == 0 {
			it.find("missing-effect", "%s %s call %s succeeded, and its key is not in effects.log", tc.agent, tc.msgID, tc.call.ID)
		}
	}

	// Every question has its pending item: the item's checkpoint is the
	// message that asks.
	for _, agent := range it.sc.agents {
		for _, m := range histories[agent] {
			if m.Role != pipeline.RoleAssistant || !strings.Contains(m.Content, "[USER_QUESTION]") {
				continue
			}
			if !slices.ContainsFunc(items, func(p crashItem) bool {
				return p.Agent == agent && p.Instance == "default" && p.Checkpoint == m.ID && p.Kind == "question"
			}) {
				it.find("question-lost", "%s %s asks a question, and no pending item is stored for it", agent, m.ID)
			}
		}
	}

	// No input is stored twice: the scripts never send one text twice to
	// an instance.
	for _, agent := range it.sc.agents {
		seen := map[string]string{}
		for _, m := range histories[agent] {
			if m.Role != pipeline.RoleUser {
				continue
			}
			if prev, ok := seen[m.Content]; ok {
				it.find("duplicate-input", "%s %s repeats input %s: %q", agent, m.ID, prev, oneLine(m.Content, 80))
			}
			seen[m.Content] = m.ID
		}
	}

	// Every chain that started finished, and its answer was shown.
	var stdout strings.Builder // of the commands that show answers
	for _, c := range it.cmds {
		if c.args[0] == "run" || c.args[0] == "resume" || c.args[0] == "answer" {
			stdout.WriteString(c.stdout)
		}
	}
	for root, answer := range it.sc.chains {
		started := slices.ContainsFunc(histories[root], func(m pipeline.Message) bool {
			return m.Role == pipeline.RoleTool && m.Name == "call_agent" && strings.HasPrefix(m.Content, "Delegated to ")
		})
		if !started {
			continue
		}
		msgs := histories[root]
		if !slices.ContainsFunc(msgs, func(m pipeline.Message) bool { return m.Role == pipeline.RoleAssistant && m.Content == answer }) {
			it.find("chain-unfinished", "%s delegated, and its history has no answer %q", root, answer)
		}
		if !strings.Contains(stdout.String(), answer) {
			it.find("answer-not-shown", "%s delegated, and no command printed its answer %q", root, answer)
		}
	}
	if tasks.code == exitOK && tasks.stdout != "" {
		it.find("chain-unfinished", "tasks are left open:\n%s", tasks.stdout)
	}
}

// describeMessage renders a stored message on one line.
func describeMessage(m pipeline.Message) string {
	s := m.ID + " " + string(m.Role)
	if m.IsError {
		s += "!"
	}
	if m.ToolCallID != "" {
		s += "(" + m.ToolCallID + ")"
	}
	if id, _ := m.Metadata["turn_id"].(string); id != "" {
		s += " [" + id + "]"
	}
	s += ": " + oneLine(m.Content, 90)
	for _, c := range m.ToolCalls {
		args := callLabel(c)
		if args == "" {
			args = string(c.Arguments)
		}
		s += fmt.Sprintf(" +call(%s %s %s)", c.ID, c.Name, oneLine(args, 60))
	}
	return s
}

func (it *crashIteration) checks() []string {
	var out []string
	for _, f := range it.findings {
		if !slices.Contains(out, f.check) {
			out = append(out, f.check)
		}
	}
	return out
}

// report says what the iteration ran and found, and keeps its directory
// when GANGLION_CRASH_KEEP is set.
func (it *crashIteration) report() string {
	var b strings.Builder
	if it.rng != nil {
		fmt.Fprintf(&b, "iteration %d (GANGLION_CRASH_SEED=%d GANGLION_CRASH_ITER=%d):\n", it.n, it.seed, it.n)
	} else {
		b.WriteString("killed at chosen moments:\n")
	}
	for _, f := range it.findings {
		fmt.Fprintf(&b, "  %s: %s\n", f.check, strings.ReplaceAll(f.text, "\n", "\n    "))
	}
	b.WriteString("commands:\n")
	for _, c := range it.cmds {
		fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(c.String(), it.dir, "$DIR"))
		if c.args[0] == "run" || c.args[0] == "resume" || c.args[0] == "answer" {
			if out := strings.TrimSpace(c.stdout); out != "" {
				fmt.Fprintf(&b, "    stdout: %s\n", strings.ReplaceAll(out, "\n", "\n            "))
			}
			if e := strings.TrimSpace(c.stderr); e != "" {
				fmt.Fprintf(&b, "    stderr: %s\n", strings.ReplaceAll(e, "\n", "\n            "))
			}
		}
	}
	b.WriteString(it.state)
	if os.Getenv("GANGLION_CRASH_KEEP") != "" {
		it.kept = it.keep(b.String())
		fmt.Fprintf(&b, "%s\n", it.kept)
	}
	return b.String()
}

// keep copies the project, with report, to a directory that outlives the
// test, and says where.
func (it *crashIteration) keep(report string) string {
	keep, err := os.MkdirTemp("", fmt.Sprintf("ganglion-crash-%s-%d-", it.sc.name, it.n))
	if err == nil {
		err = os.CopyFS(keep, os.DirFS(it.dir))
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(keep, "report.txt"), []byte(report), 0o644)
	}
	if err != nil {
		return fmt.Sprintf("keeping the project: %v", err)
	}
	return "project and report kept in " + keep
}

// TestCrashKillAt kills ganglion processes at chosen moments, while a
// given command of the scripts runs (its sleep made long, the kill comes
// once it has logged its label), then checks as TestCrashKill does.
func TestCrashKillAt(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes: skipped with -short")
	}
	bin := cliBinary(t)
	scenario := func(name string) crashScenario {
		i := slices.IndexFunc(crashScenarios, func(sc crashScenario) bool { return sc.name == name })
		return crashScenarios[i]
	}
	tests := []struct {
		name, scenario string
		plan           [][]string
		kills          []crashTrigger
	}{
		{"a turn's tool", "tools", [][]string{{"--agent", "worker", "job one"}},
			[]crashTrigger{{cmd: "run", label: "w1-s2a"}}},
		{"a tool in the step that asks", "questions", [][]string{{"--agent", "asker", "plan the launch"}},
			[]crashTrigger{{cmd: "run", label: "a-s2"}}},
		{"a delegated child's tool", "delegation", [][]string{{"--agent", "lead", "fan out"}},
			[]crashTrigger{{cmd: "run", label: "c-s1"}}},
		{"the resume that took the child up", "delegation", [][]string{{"--agent", "lead", "fan out"}},
			[]crashTrigger{{cmd: "run", label: "c-s1"}, {cmd: "resume", label: "c-s2"}}},
		{"the run that took the child up", "delegation", [][]string{{"--agent", "lead", "fan out"}, {"--agent", "planner", "design a cache"}},
			[]crashTrigger{{cmd: "run", label: "t-s1", later: true}, {cmd: "run", label: "e-s1"}}},
		{"a three-deep chain's middle", "delegation", [][]string{{"--agent", "planner", "design a cache"}},
			[]crashTrigger{{cmd: "run", label: "ar-r1"}}},
		// The lead's chain ends while resume waits for the planner's: its
		// answer arrives before the kill.
		{"resume waiting for a second chain", "delegation", [][]string{{"--agent", "lead", "fan out"}, {"--agent", "planner", "design a cache"}},
			[]crashTrigger{{cmd: "run", label: "c-s1", later: true}, {cmd: "run", label: "ar-s1"}, {cmd: "resume", label: "e-s2", wait: 2 * time.Second}}},
		// A guest's question is stored with the reply that asks, before the
		// step's tools run: a kill in the tool keeps both.
		{"a tool in the guest's step that asks", "guest", [][]string{{"--agent", "asker", "plan the launch"}},
			[]crashTrigger{{cmd: "run", label: "g-s2"}}},
		{"the guest's resume turn", "guest", [][]string{{"--agent", "asker", "plan the launch"}},
			[]crashTrigger{{cmd: "answer", label: "g-r2"}}},
		{"a delegated child's step that asks", "questions", [][]string{{"--agent", "boss", "delegate the survey"}},
			[]crashTrigger{{cmd: "run", label: "s-s1"}}},
		{"a delegated child's resume turn", "questions", [][]string{{"--agent", "boss", "delegate the survey"}},
			[]crashTrigger{{cmd: "answer", label: "s-r1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := scenario(tt.scenario)
			sc.plan = tt.plan
			it := &crashIteration{t: t, bin: bin, sc: sc, killOn: slices.Clone(tt.kills)}
			it.dir = crashProject(t, sc)
			path := filepath.Join(it.dir, "script.yaml")
			script, err := os.ReadFile(path)
			must(t, err)
			for _, k := range tt.kills {
				re := regexp.MustCompile(`( ` + k.label + `" >> effects\.log; sleep )[0-9.]+`)
				if !re.Match(script) {
					t.Fatalf("the script has no command %s", k.label)
				}
				sleep := "3"
				if k.wait > 0 {
					sleep = "6"
				}
				script = re.ReplaceAll(script, []byte("${1}"+sleep))
			}
			must(t, os.WriteFile(path, script, 0o644))
			it.run()
			for _, k := range it.killOn {
				if !k.fired {
					it.find("setup", "no %s ran %s: nothing was killed then", k.cmd, k.label)
				}
			}
			if len(it.findings) > 0 {
				t.Errorf("%s", it.report())
			}
		})
	}
}

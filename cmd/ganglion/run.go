package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

type runFlags struct {
	agent    string
	instance string
	data     string
	json     bool
	logLevel string
	// record is the cassette file run --record writes.
	record string
	// trace prints the run's spans when it ends (run --trace).
	trace bool
	// cluster joins the cluster at these NATS URLs (serve --cluster).
	cluster string
}

func newRunCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [DIR] [MESSAGE]",
		Short: "Send a message to an agent and stream its answer",
		Long: `Run loads DIR/ganglion.yaml (DIR defaults to the current directory), sends
MESSAGE to an agent and streams the answer as it comes, with the tool calls
it makes. Without MESSAGE it reads one message per line from standard input.

With one argument, it is DIR if it is a directory holding ganglion.yaml, and
MESSAGE otherwise.

The history lives in the config's data directory (data:, default
.ganglion/data next to ganglion.yaml), whatever the current directory, so
every command on the same config sees the same conversations.

Exit codes: 0 done, 1 error, 2 usage, 3 the turn paused for a human.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 2 {
				return usageError("too many arguments (%d): quote the message, as in: ganglion run DIR \"what is in notes.txt?\"", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, msg, interactive, err := splitRunArgs(args)
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), f, dir, msg, interactive, stdin, stdout, stderr)
		},
	}
	addRuntimeFlags(cmd, &f)
	cmd.Flags().StringVar(&f.record, "record", "", "record the session into this cassette file, on a fresh conversation in memory (see ganglion record)")
	cmd.Flags().BoolVar(&f.trace, "trace", false, "print the run's spans, as a tree with durations, on stderr when it ends (and export them if OTLP is configured)")
	return cmd
}

func newRecordCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "record FILE [DIR] [MESSAGE]",
		Short: "Run a session as run does, and record it into a cassette to replay offline",
		Long: `Record is run --record FILE: it runs a session with DIR's agents, as run does
(one MESSAGE, or one message a line from standard input, with the questions
of a paused agent asked and answered), and writes it into the cassette FILE:
every model call with its streamed answer, every tool result, the answers to
pauses, the clock and the IDs. The conversation is a fresh one, kept in
memory: the data directory is neither read nor written, so the cassette
holds all the session needs to replay.

Pending items live in that memory too: answer them at the prompt (give no
MESSAGE). With MESSAGE, a turn that pauses ends the recording, paused, and
no other command can answer its items.

Provided secrets are not recorded. Replay the cassette with ganglion ext
test (put it under DIR/cassettes/) or from Go with package cassettetest.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || len(args) > 3 {
				return usageError("record takes FILE, then DIR and MESSAGE as run does: ganglion record session.cassette DIR \"what is in notes.txt?\"")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.record = args[0]
			dir, msg, interactive, err := splitRunArgs(args[1:])
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), f, dir, msg, interactive, stdin, stdout, stderr)
		},
	}
	addRuntimeFlags(cmd, &f)
	return cmd
}

// openRuntime loads DIR/ganglion.yaml and starts a runtime on it, as the
// flags and extra say; it returns the agent the flags name (default: the
// first).
func openRuntime(ctx context.Context, f runFlags, dir string, stderr io.Writer, extra ...runtime.Option) (*runtime.Runtime, string, error) {
	logger, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return nil, "", err
	}
	cfgPath := filepath.Join(dir, "ganglion.yaml")
	if _, err := os.Stat(cfgPath); err != nil {
		return nil, "", usageError("no ganglion.yaml in %s", dir)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, "", failed(err)
	}
	if f.cluster != "" {
		if cfg.Cluster == nil {
			cfg.Cluster = &config.Cluster{}
		}
		cfg.Cluster.URL = f.cluster
	}
	// An agent that fails to load (a broken module, a missing API key) is
	// named when it is used; the others, and every history, stay usable.
	opts := []runtime.Option{runtime.WithConfig(cfg), runtime.WithLogger(logger), runtime.WithPartialLoad()}
	if f.data != "" {
		opts = append(opts, runtime.WithDataDir(f.data))
	}
	rt, err := runtime.New(ctx, append(opts, extra...)...)
	if err != nil {
		return nil, "", failed(err)
	}
	agent := f.agent
	if agent == "" {
		agent = rt.Agents()[0]
	}
	return rt, agent, nil
}

// projectDir returns the config directory a command names (its one
// argument, else the current directory).
func projectDir(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return "."
}

// readOnly opens a data directory to read it: the runtime runs no turn,
// neither the work an earlier process left (ganglion resume and run finish
// that) nor a pending item's expiry.
func readOnly() []runtime.Option {
	return []runtime.Option{runtime.WithoutRecovery(), runtime.WithoutExpiryTimer()}
}

// failed gives err exit code 1 unless it carries a code already. Without
// it, run would guess from err's text, which may quote a config line, an
// answer or a reason, whether it is one of cobra's usage errors.
func failed(err error) error {
	var ce *codeError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return &codeError{code: exitError, err: err}
}

// addRuntimeFlags adds the flags that say which runtime, agent and instance.
func addRuntimeFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.agent, "agent", "", "agent to talk to (default: the first in the config)")
	cmd.Flags().StringVar(&f.instance, "instance", "default", "instance key: one conversation of the agent")
	cmd.Flags().StringVar(&f.data, "data", "", "data directory (default: the config's data:, else .ganglion/data next to ganglion.yaml)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object per line instead of text")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
}

func splitRunArgs(args []string) (dir, msg string, interactive bool, err error) {
	switch len(args) {
	case 0:
		return ".", "", true, nil
	case 1:
		if isConfigDir(args[0]) {
			return args[0], "", true, nil
		}
		if args[0] == "" {
			return "", "", false, usageError("the message is empty")
		}
		return ".", args[0], false, nil
	default:
		if args[1] == "" {
			return "", "", false, usageError("the message is empty")
		}
		return args[0], args[1], false, nil
	}
}

func isConfigDir(p string) bool {
	st, err := os.Stat(filepath.Join(p, "ganglion.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// cliChannel is the channel "cli": the answers of the tasks this process
// started, and of those an earlier process started and this one finished.
const cliChannel = "cli"

// cliAnswers returns the channel "cli" as an option of New. The answers to
// this process's own requests (those whose metadata said replyTo: own)
// arrive on the returned channel; any other is the answer to an earlier
// process's request, which out prints at once, inside Deliver: the runtime
// deletes a task only once its answer is delivered, so a process killed
// before it printed an answer leaves it to be printed at the next start.
func cliAnswers(out *printer) (own string, answers <-chan runtime.Report, opt runtime.Option) {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	own = "cli-" + hex.EncodeToString(b[:])
	ch := make(chan runtime.Report, 64)
	deliver := runtime.ChannelFunc(func(_ context.Context, r runtime.Report) error {
		if r.ReplyTo != own {
			out.answer(r, true)
			return nil
		}
		select {
		case ch <- r:
			return nil
		default: // a channel must not hold the runtime up
			return fmt.Errorf("%d answers are waiting to be printed already", cap(ch))
		}
	})
	return own, ch, runtime.WithChannel(cliChannel, deliver)
}

func runAgent(ctx context.Context, f runFlags, dir, msg string, interactive bool, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	out := &printer{w: stdout, json: f.json, instance: f.instance, where: place(dir, f.data)}
	own, answers, channel := cliAnswers(out)
	opts := []runtime.Option{channel}
	if f.record != "" {
		out.record = "ganglion record " + shellQuote(f.record) + out.where
		if f.agent != "" {
			out.record += " --agent " + shellQuote(f.agent)
		}
		if f.instance != "default" {
			out.record += " --instance " + shellQuote(f.instance)
		}
		if f.data != "" {
			return usageError("--record runs a fresh conversation in memory: it takes no --data")
		}
		if cerr := os.MkdirAll(filepath.Dir(f.record), 0o755); cerr != nil {
			return failed(fmt.Errorf("recording: %w", cerr))
		}
		rec, cerr := cassette.Create(f.record)
		if cerr != nil {
			return failed(fmt.Errorf("recording: %w", cerr))
		}
		defer func() {
			if cerr := rec.Close(); cerr != nil {
				err = errors.Join(err, failed(fmt.Errorf("recording into %s: %w", f.record, cerr)))
			} else if !f.json {
				fmt.Fprintf(stderr, "ganglion: recorded the session into %s\n", f.record)
			}
		}()
		opts = append(opts, runtime.WithTape(rec), runtime.WithMemoryStore())
	}
	if f.trace {
		tr, topts, err := startTracing(ctx, dir)
		if err != nil {
			return err
		}
		defer tr.finish(stderr) // after the runtime closes: the turn's spans have all ended
		opts = append(opts, topts...)
	}
	rt, agent, err := openRuntime(ctx, f, dir, stderr, opts...)
	if err != nil {
		if f.record != "" || f.trace {
			return err
		}
		c, err := serverFor(f, dir, err, stderr)
		if err != nil {
			return err
		}
		return runRemote(ctx, c, f, msg, interactive, stdin, out, stderr)
	}
	defer rt.Close()
	out.watch(agent, f.instance)
	unsub := rt.Events().Subscribe("*", out.event)
	defer unsub()
	before, _ := rt.Usage(ctx, agent, f.instance)
	defer func() { printUsage(ctx, rt, agent, f.instance, before, f.json, stderr) }()
	// Chains an earlier process left, which this one took up, finish
	// before it exits, or they would be cut short again.
	defer func() {
		if ferr := finishRecovered(ctx, rt, answers, out); ferr != nil && (interactive || err == nil) {
			fmt.Fprintln(stderr, "ganglion:", ferr)
		}
	}()
	s := &session{api: rt, watch: localWatch{rt: rt, answers: answers, out: out}, out: out, agent: agent, instance: f.instance,
		meta: map[string]any{"channel": cliChannel, "requester": "user@cli", "replyTo": own}}
	return s.run(ctx, msg, interactive, stdin, stderr)
}

// waitAnswer waits for the answer of the task a turn delegated (its merged
// reports' turns stream as they run) and returns it as the turn's result.
// When the chain stops short of an answer, an agent in it waits for a
// human: the result is paused. Answers to other tasks, left by an earlier
// process, are printed as they come.
func waitAnswer(ctx context.Context, rt *runtime.Runtime, res *pipeline.TurnResult, answers <-chan runtime.Report, out *printer) (*pipeline.TurnResult, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stalled := make(chan error, 1)
	go func() { stalled <- rt.WaitTasks(wctx) }()
	got := func(rep runtime.Report) (*pipeline.TurnResult, error, bool) {
		if rep.TaskID != res.TaskID {
			out.answer(rep, true)
			return nil, nil, false
		}
		out.answer(rep, false)
		if rep.Error != "" {
			return res, fmt.Errorf("task %s: %s", rep.TaskID, rep.Error), true
		}
		return &pipeline.TurnResult{TurnID: res.TurnID, FinishReason: pipeline.FinishText, TaskID: rep.TaskID,
			Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: rep.Response}}, nil, true
	}
	for {
		select {
		case rep := <-answers:
			if r, err, done := got(rep); done {
				return r, err
			}
		case err := <-stalled:
			if err != nil {
				return res, fmt.Errorf("waiting for task %s: %w (it goes on at the next start)", res.TaskID, err)
			}
			// The answer is delivered before the last task turn ends.
			for {
				select {
				case rep := <-answers:
					if r, err, done := got(rep); done {
						return r, err
					}
					continue
				default:
				}
				break
			}
			return &pipeline.TurnResult{TurnID: res.TurnID, FinishReason: pipeline.FinishPaused, TaskID: res.TaskID}, nil
		}
	}
}

// printUsage tells, at the end of a run, the model usage of the instance
// during the run and over its life, when a provider reported any.
func printUsage(ctx context.Context, rt runAPI, agent, instance string, before pipeline.Usage, asJSON bool, w io.Writer) {
	total, err := rt.Usage(context.WithoutCancel(ctx), agent, instance)
	if err != nil || total == (pipeline.Usage{}) {
		return
	}
	run := pipeline.Usage{InputTokens: total.InputTokens - before.InputTokens, OutputTokens: total.OutputTokens - before.OutputTokens,
		CacheReadTokens: total.CacheReadTokens - before.CacheReadTokens, CacheWriteTokens: total.CacheWriteTokens - before.CacheWriteTokens}
	if asJSON {
		b, _ := plainjson.Marshal(events.Event{Topic: "cli.usage", Agent: agent, Instance: instance, Source: "cli",
			Data: usageData{Instance: total, Run: run}})
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	tokens := func(u pipeline.Usage) string {
		return fmt.Sprintf("%d in, %d out, %d cache read, %d cache write", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	}
	fmt.Fprintf(w, "[usage] this run: %s; %s/%s in all: %s (tokens; delegated agents count in their own instances)\n", tokens(run), agent, instance, tokens(total))
}

// turnExit maps a turn's outcome to the command's result.
func turnExit(res *pipeline.TurnResult, err error) error {
	if err != nil {
		return &codeError{code: exitError, err: err}
	}
	if res.FinishReason == pipeline.FinishPaused {
		return &codeError{code: exitPaused}
	}
	return nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printer renders the runtime's events: text as it streams and the tool
// calls, or one JSON object per event.
type printer struct {
	mu       sync.Mutex
	w        io.Writer
	json     bool
	agent    string
	instance string
	midLine  bool // the last text written did not end a line
	// where is how the commands it suggests name the config and data
	// directories from the working directory (place).
	where string
	// record is the command that records the session again, when run
	// records it: its pending items live in memory, out of reach of the
	// commands that answer items.
	record string
	// step is the text the watched instance's model streamed in the step
	// under way, and shown what it streamed in the turn's latest step that
	// streamed any: endTurn prints an answer that is not what was shown (a
	// middleware answered the turn, or replaced the model's answer).
	step, shown strings.Builder
}

// usageData is the payload of the cli.usage event --json prints last:
// the run's model usage and the instance's total.
type usageData struct {
	Instance pipeline.Usage `json:"instance"`
	Run      pipeline.Usage `json:"run"`
}

func (p *printer) event(ev events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, err := plainjson.Marshal(ev)
		if err != nil {
			b, _ = plainjson.Marshal(events.Event{Topic: "cli.error", Time: ev.Time, Source: "cli", Data: "cannot encode event " + ev.Topic + ": " + err.Error()})
		}
		p.w.Write(append(b, '\n'))
		return
	}
	switch d := ev.Data.(type) {
	case ledger.Item:
		// A deadline passed here: what became of the item, whichever
		// agent's, since nobody acted on it. (Another process of a
		// cluster says its own.)
		if ev.Topic == "pending."+string(ledger.Timeout) && ev.Process == "" {
			p.endLine()
			fmt.Fprintf(p.w, "[pending] %s\n", outcome(d))
		}
		return
	case events.TaskDelegatedData:
		p.endLine()
		fmt.Fprintf(p.w, "[task] %s → %s: %s\n", ev.Agent, d.To, d.Message)
		return
	case events.TurnInterruptedData:
		p.endLine()
		fmt.Fprintf(p.w, "[interrupted] %s/%s %s: the process stopped while %s ran; the model reads that it may have taken effect\n",
			ev.Agent, ev.Instance, ev.TurnID, strings.Join(d.Calls, ", "))
		return
	case events.TaskCompletedData:
		if d.ParentTaskID != "" {
			p.endLine()
			if d.Failed {
				fmt.Fprintf(p.w, "[task] %s: %s\n", ev.Agent, d.Response) // "Task failed: ..."
			} else {
				fmt.Fprintf(p.w, "[task] %s reported: %s\n", ev.Agent, d.Response)
			}
		}
		return
	}
	if ev.Agent != p.agent || ev.Instance != p.instance {
		return
	}
	switch d := ev.Data.(type) {
	case events.ModelDeltaData:
		if d.Kind == "text" {
			fmt.Fprint(p.w, d.Text)
			p.midLine = d.Text != "" && !strings.HasSuffix(d.Text, "\n")
			p.step.WriteString(d.Text)
		}
	case events.StepFinishedData:
		if p.step.Len() > 0 {
			p.shown.Reset()
			p.shown.WriteString(p.step.String())
			p.step.Reset()
		}
	case events.ToolStartedData:
		p.endLine()
		fmt.Fprintf(p.w, "[tool] %s %s\n", d.Tool, oneLine(d.Arguments, 120))
	case events.ToolFinishedData:
		if d.IsError {
			fmt.Fprintf(p.w, "[tool] %s failed: %s\n", d.Tool, oneLine(d.Content, 200))
		} else {
			fmt.Fprintf(p.w, "[tool] %s -> %s\n", d.Tool, summary(d.Content))
		}
	case events.ContextCondensedData:
		p.endLine()
		fmt.Fprintf(p.w, "[context] %d messages summarised: the model now sees %d of %d\n", d.Condensed, d.After, d.Before)
	case events.ContextTruncatedData:
		p.endLine()
		fmt.Fprintf(p.w, "[context] the oldest messages left out (%s): the model now sees %d of %d\n", d.Reason, d.After, d.Before)
	case events.ModelRetryData:
		p.endLine()
		fmt.Fprintf(p.w, "[retry] %s; trying again in %d ms (%d of %d)\n", d.Kind, d.DelayMS, d.Attempt, d.MaxRetries)
	}
}

// watch makes p print the streamed text and tool calls of agent's
// instance key.
func (p *printer) watch(agent, instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.agent, p.instance = agent, instance
}

func (p *printer) endLine() {
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}

// answer prints a task's answer: only its end, since its text streamed as
// the turn ran, unless it is the answer to an earlier process's request
// (earlier), whose text did not stream here.
func (p *printer) answer(r runtime.Report, earlier bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := plainjson.Marshal(events.Event{Topic: "cli.answer", Agent: r.Agent, Instance: r.Instance, Source: "cli", Data: r})
		p.w.Write(append(b, '\n'))
		return
	}
	p.endLine()
	switch {
	case r.Error != "":
		fmt.Fprintf(p.w, "[task] %s failed: %s\n", r.TaskID, r.Error)
	case earlier:
		fmt.Fprintf(p.w, "[task] answer to an earlier request (%q) from %s/%s:\n%s\n", oneLine(r.Request, 60), r.Agent, r.Instance, r.Response)
	}
}

// endTurn finishes the text output of a turn.
func (p *printer) endTurn(res *pipeline.TurnResult, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		return
	}
	p.endLine()
	shown := p.shown.String()
	p.step.Reset()
	p.shown.Reset()
	switch {
	case err != nil || res == nil:
	case res.FinishReason == pipeline.FinishMaxSteps:
		fmt.Fprintf(p.w, "[turn] stopped after %d steps (max_steps) without a final answer\n", res.Steps)
	case res.FinishReason == pipeline.FinishText && res.Response.Content != "" &&
		strings.TrimSpace(res.Response.Content) != strings.TrimSpace(shown):
		// Not what the model streamed: a middleware's answer.
		fmt.Fprintln(p.w, strings.TrimRight(res.Response.Content, "\n"))
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func summary(content string) string {
	lines := strings.Count(content, "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		lines++
	}
	if lines <= 1 {
		return oneLine(content, 120)
	}
	return fmt.Sprintf("%d lines", lines)
}

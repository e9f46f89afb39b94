package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

func newPendingCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		f   runFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "pending [DIR]",
		Short: "List what paused agents wait for",
		Long: `Pending lists the pending items of DIR/ganglion.yaml's agents (DIR defaults
to the current directory): the questions, dependencies and approvals paused
turns wait for. Without --all, only the items still open.

Answer them with ganglion answer, skip, provide or reject: a question with
its answer, a dependency with provide, an approval with approve or deny
(ganglion answer ID approve), or with edit and the call's new arguments,
which approves the call with them (ganglion answer ID edit '{"path":"b.txt"}'),
a run of failed or repeated tool calls with guidance for the model.
Listing runs no turn: the resumes and expiries wait for run or resume.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			api, _, done, err := openAgents(cmd.Context(), f, dir, stderr, readOnly()...)
			if err != nil {
				return err
			}
			defer done()
			filter := ledger.Filter{Agent: f.agent, Open: !all}
			if cmd.Flags().Changed("instance") {
				filter.Instance = f.instance
			}
			items, err := api.Pending(cmd.Context(), filter)
			if err != nil {
				return failed(err)
			}
			if f.json {
				return jsonLines(stdout, items, func(it ledger.Item) string { return "pending item " + it.ID })
			}
			if len(items) == 0 {
				fmt.Fprintln(stderr, "nothing is pending")
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tINSTANCE\tKIND\tSTATUS\tREQUEST")
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Agent, it.Instance, it.Kind, it.Status, oneLine(describe(it), 160))
			}
			return tw.Flush()
		},
	}
	addRuntimeFlags(cmd, &f)
	cmd.Flags().BoolVar(&all, "all", false, "list resolved items too")
	return cmd
}

// pendingArgs splits [DIR] ID [VALUE...]: want is the number of arguments
// after DIR.
func pendingArgs(args []string, want int, use string) (dir string, rest []string, err error) {
	switch len(args) {
	case want:
		if isConfigDir(args[0]) && !isConfigDir(".") { // DIR ID without its ANSWER, DIR without ID
			return "", nil, usageError("want %s: %s is DIR, and an argument is missing", use, args[0])
		}
		return ".", args, nil
	case want + 1:
		return args[0], args[1:], nil
	}
	return "", nil, usageError("want %s, got %d arguments", use, len(args))
}

// newResolveCmd returns answer, skip or reject.
func newResolveCmd(name string, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var (
		f      runFlags
		reason string
	)
	spec := map[string]struct {
		use, short, long string
		n                int
	}{
		"answer": {"answer [DIR] ID ANSWER", "Answer a question, an approval or a call for guidance of a paused agent",
			`Answer checks ANSWER against the item, stores it, and resumes the agent when
nothing else of its turn is pending, streaming the resumed turn like run.

  a question      one of its options, ignoring case; not empty when required
  an approval     approve or deny; or edit and the call's new arguments, one
                  JSON object, which approves the call with them:
                    ganglion answer ID edit '{"path":"b.txt"}'
                  The arguments must match the tool's schema: an edit that
                  does not is refused, says where, and changes nothing. The
                  model's call stays in the history; the call's result says
                  it ran with the edited arguments.
  mistakes,
  repetition      guidance for the model (reject stops the agent)`, 2},
		"skip": {"skip [DIR] ID", "Skip an optional question: it takes its default",
			"Skip resolves an optional question with its default and resumes the agent\nwhen nothing else of its turn is pending. A required question cannot be skipped.", 1},
		"reject": {"reject [DIR] ID --reason TEXT", "Refuse a dependency an agent asked for, or stop a stuck agent",
			`Reject refuses a dependency, denies an approval, or stops an agent that keeps
failing or repeating a tool call, with the reason. When that fails the
agent's task (a required dependency, a stopped agent), reject says so and
exits 0; an optional dependency resumes the agent without a value.`, 1},
	}[name]
	cmd := &cobra.Command{
		Use:   spec.use,
		Short: spec.short,
		Long: spec.long + "\n\nIt says on stderr what became of the item; the resumed turn streams on stdout." +
			"\n\nExit codes: 0 done, 1 error, 2 usage, 3 the agent paused again.",
		RunE: func(cmd *cobra.Command, args []string) error {
			// answer [DIR] ID edit ARGS: an approval's edit.
			var edit string
			editing := name == "answer" && len(args) >= 3 && args[len(args)-2] == "edit"
			if editing {
				edit, args = args[len(args)-1], args[:len(args)-1]
			}
			dir, rest, err := pendingArgs(args, spec.n, spec.use)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return withPendingItem(ctx, f, dir, rest[0], stdout, stderr, func(rt agentsAPI, it ledger.Item) (*pipeline.TurnResult, error) {
				switch name {
				case "answer":
					if editing {
						return rt.Edit(ctx, it.ID, json.RawMessage(edit))
					}
					return rt.Answer(ctx, it.ID, rest[1])
				case "skip":
					return rt.Skip(ctx, it.ID)
				}
				return rt.Reject(ctx, it.ID, reason)
			})
		},
	}
	addDataFlags(cmd, &f)
	if name == "reject" {
		cmd.Flags().StringVar(&reason, "reason", "", "why (the model reads it for an optional dependency)")
	}
	return cmd
}

func newProvideCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "provide [DIR] ID",
		Short: "Give a dependency's value (an API key, a URL, a file) to a paused agent",
		Long: `Provide reads the value of dependency ID from standard input, or, on a
terminal, from a prompt that does not echo it; never from the command line,
where it would show in the process list and the shell history. The value is
checked for the dependency's type, and a secret (an API key, an environment
variable, a service URL) is stored encrypted: commands receive it as an
environment variable, and the model, logs and events never see it.

Exit codes: 0 done, 1 error, 2 usage, 3 the agent paused again.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			const fromStdin = "the value is read from standard input, never from the command line (it would show in the process list and the shell history)"
			if len(args) > 2 {
				return usageError("want provide [DIR] ID; %s", fromStdin)
			}
			if len(args) == 2 && !isConfigDir(args[0]) { // most likely ID VALUE
				return usageError("want provide [DIR] ID, and %s holds no ganglion.yaml; %s", args[0], fromStdin)
			}
			dir, rest, err := pendingArgs(args, 1, "provide [DIR] ID")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return withPendingItem(ctx, f, dir, rest[0], stdout, stderr, func(rt agentsAPI, it ledger.Item) (*pipeline.TurnResult, error) {
				v, err := readValue(stdin, stderr, "value for "+describe(it)+": ")
				if err != nil {
					return nil, err
				}
				return rt.Provide(ctx, it.ID, v)
			})
		},
	}
	addDataFlags(cmd, &f)
	return cmd
}

// addDataFlags adds the flags of the commands that act on one item: the
// item names its agent and instance.
func addDataFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.data, "data", "", "data directory (default: the config's data:, else .ganglion/data next to ganglion.yaml)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object per line instead of text")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
}

// withPendingItem opens the runtime (or reaches the server that holds its
// data directory), finds item id, applies act, and streams the resume
// turn that follows.
func withPendingItem(ctx context.Context, f runFlags, dir, id string, stdout, stderr io.Writer,
	act func(agentsAPI, ledger.Item) (*pipeline.TurnResult, error)) error {
	out := &printer{w: stdout, json: f.json, where: place(dir, f.data)}
	_, answers, channel := cliAnswers(out)
	api, rt, done, err := openAgents(ctx, f, dir, stderr, channel)
	if err != nil {
		return err
	}
	defer done()
	it, err := api.PendingItem(ctx, id)
	if err != nil {
		return failed(err)
	}
	out.watch(it.Agent, it.Instance)
	var finished func(turn string) // waits for the server's stream to show the turn's end
	if rt != nil {
		unsub := rt.Events().Subscribe("*", out.event)
		defer unsub()
	} else {
		stop, wait := followRemote(ctx, api.(*remote), it, out)
		defer stop()
		finished = wait
	}
	res, err := act(api, it)
	if err != nil && !errors.Is(err, runtime.ErrTaskFailed) {
		return failed(err)
	}
	// Say what became of the item. A resolution that fails the task (a
	// required dependency rejected, a stuck agent stopped) is what the
	// human asked for: the command succeeds.
	after, gerr := api.PendingItem(ctx, id)
	if gerr == nil && !f.json {
		line := outcome(after)
		if res == nil && err == nil {
			line += "; the turn still waits for its other items (ganglion pending" + out.where + ")"
		}
		fmt.Fprintln(stderr, line)
	}
	if err != nil {
		if gerr == nil && after.Fails {
			return nil
		}
		return failed(err)
	}
	if res == nil {
		return nil
	}
	if finished != nil {
		finished(res.TurnID)
	}
	out.endTurn(res, nil)
	if res.FinishReason == pipeline.FinishPaused {
		printPaused(ctx, api, out, it.Agent, it.Instance, stderr)
		return turnExit(res, nil)
	}
	// The resumed turn may belong to a delegation chain: see it through
	// here, rather than leave it to the next start. A server sees its
	// chains through itself.
	if res.TaskID != "" && rt != nil {
		if err := rt.WaitTasks(ctx); err != nil {
			return failed(err)
		}
		for len(answers) > 0 {
			out.answer(<-answers, true)
		}
		if open, err := rt.Pending(ctx, ledger.Filter{Open: true}); err == nil && len(open) > 0 {
			printPaused(ctx, rt, out, "", "", stderr)
		}
	}
	return turnExit(res, nil)
}

// followRemote prints the server's events of it's instance while an action
// resumes its turn. wait(turn) waits, a little, for the stream to show
// that turn's end; stop ends the stream.
func followRemote(ctx context.Context, c *remote, it ledger.Item, out *printer) (stop func(), wait func(turn string)) {
	fctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	var mu sync.Mutex
	ended := map[string]bool{}
	endc := make(chan struct{}, 64)
	go c.follow(fctx, it.Agent, it.Instance, ready, func(ev events.Event) {
		out.event(ev)
		if ev.Topic == events.TurnFinished {
			mu.Lock()
			ended[ev.TurnID] = true
			mu.Unlock()
			select {
			case endc <- struct{}{}:
			default:
			}
		}
	})
	<-ready
	wait = func(turn string) {
		deadline := time.After(2 * time.Second)
		for {
			mu.Lock()
			done := ended[turn]
			mu.Unlock()
			if done {
				return
			}
			select {
			case <-endc:
			case <-deadline:
				return
			}
		}
	}
	return cancel, wait
}

// readValue reads a secret: from a terminal without echo, else the whole
// of r with one trailing newline dropped.
func readValue(r io.Reader, stderr io.Writer, prompt string) (string, error) {
	if f, ok := r.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read the value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return "", fmt.Errorf("read the value from standard input: %w", err)
	}
	if len(b) > 1<<20 {
		return "", errors.New("the value on standard input is longer than 1 MiB")
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return s, nil
}

// isInvalid reports whether err refuses the human's input (ask again)
// rather than reports a failure.
func isInvalid(err error) bool { return errors.Is(err, extensions.ErrInvalidAction) }

// describe renders an item's request for people.
func describe(it ledger.Item) string {
	switch it.Kind {
	case protocol.ItemQuestion:
		var q protocol.Question
		if json.Unmarshal(it.Request, &q) == nil {
			s := q.Question
			if len(q.Options) > 0 {
				s += " [" + strings.Join(q.Options, " | ") + "]"
			}
			if q.Default != "" {
				s += " (default: " + q.Default + ")"
			}
			if q.Required {
				s += " (required)"
			}
			return s
		}
	case protocol.ItemDependency:
		var d protocol.DependencyRequest
		if json.Unmarshal(it.Request, &d) == nil {
			s := fmt.Sprintf("%s %s: %s", d.Type, d.Name, d.Description)
			if d.Required {
				s += " (required)"
			}
			return s
		}
	case protocol.ItemIntervention:
		var v struct {
			Mistakes int      `json:"mistakes"`
			Errors   []string `json:"errors"`
		}
		if json.Unmarshal(it.Request, &v) == nil {
			return fmt.Sprintf("%d protocol mistakes in a row; answer with guidance for the model. Last: %s", v.Mistakes, strings.Join(v.Errors, " "))
		}
	case approval.ItemApproval:
		var a struct {
			Tool        string
			Args        json.RawMessage
			Explanation string
			Matched     []approval.Match
		}
		if json.Unmarshal(it.Request, &a) == nil {
			s := a.Tool + " " + readableJSON(a.Args)
			var rules []string
			for _, m := range a.Matched {
				r := fmt.Sprintf("%s (%s", m.Rule, m.Decision)
				if m.Reason != "" {
					r += ": " + m.Reason
				}
				rules = append(rules, r+")")
			}
			if len(rules) > 0 {
				s += "; rules: " + strings.Join(rules, ", ")
			}
			return s + "; why: " + a.Explanation
		}
	case approval.ItemMistakes:
		var m struct {
			Failures int
			Tool     string
			Error    string
		}
		if json.Unmarshal(it.Request, &m) == nil {
			return fmt.Sprintf("%s failed %d times in a row; answer with guidance for the model. Last: %s", m.Tool, m.Failures, oneLine(m.Error, 200))
		}
	case approval.ItemRepetition:
		var r struct {
			Tool  string
			Args  json.RawMessage
			Calls int
		}
		if json.Unmarshal(it.Request, &r) == nil {
			return fmt.Sprintf("%s %s called %d times in a row, the last not run; answer with guidance for the model", r.Tool, readableJSON(r.Args), r.Calls)
		}
	}
	return readableJSON(it.Request)
}

// readableJSON renders a JSON value on one line, as it was written but
// without the escapes of <, > and & that Go's encoder adds for HTML;
// what is not JSON is returned as it is.
func readableJSON(raw json.RawMessage) string {
	b, err := plainjson.Compact(raw)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// indentJSON is v as JSON for people: indented, without the escapes of
// <, > and &.
func indentJSON(v any) ([]byte, error) {
	b, err := plainjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = json.Indent(&out, b, "", "  ")
	return out.Bytes(), err
}

// printPaused tells how to answer what the instance waits for; every
// instance's items with agent "".
func printPaused(ctx context.Context, rt agentsAPI, out *printer, agent, instance string, w io.Writer) {
	if out.json {
		return
	}
	items, err := rt.Pending(ctx, ledger.Filter{Agent: agent, Instance: instance, Open: true})
	if err != nil {
		fmt.Fprintln(w, "ganglion:", err)
		return
	}
	for _, it := range items {
		if agent == "" {
			fmt.Fprintf(w, "[paused] %s/%s: %s %s: %s\n", it.Agent, it.Instance, it.ID, it.Kind, describe(it))
		} else {
			fmt.Fprintf(w, "[paused] %s %s: %s\n", it.ID, it.Kind, describe(it))
		}
		fmt.Fprintf(w, "  %s\n", out.answerHint(it))
	}
}

// waitingItems returns the open items that agent's instance key waits
// for: its own, and those of the paused turns in every delegation tree its
// turns rooted (the tasks it delegated, and theirs). Another instance's
// items that have nothing to do with it are left out. The interactive run
// and ganglion mcp both show these, and only these.
func waitingItems(ctx context.Context, api agentsAPI, agent, key string) ([]ledger.Item, error) {
	tasks, err := api.Tasks(ctx, "", "")
	if err != nil {
		return nil, err
	}
	roots := map[string]bool{}
	for _, t := range tasks {
		if t.Agent == agent && t.Instance == key && t.ParentID == "" {
			roots[t.ID] = true
		}
	}
	type turn struct{ agent, instance, id string }
	paused := map[turn]bool{}
	for _, t := range tasks {
		if (roots[t.ID] || roots[t.Root]) && t.State == runtime.TaskPaused {
			paused[turn{t.Agent, t.Instance, t.Turn}] = true
		}
	}
	open, err := api.Pending(ctx, ledger.Filter{Open: true})
	if err != nil {
		return nil, err
	}
	var out []ledger.Item
	for _, it := range open {
		if it.Agent == agent && it.Instance == key || paused[turn{it.Agent, it.Instance, it.TurnID}] {
			out = append(out, it)
		}
	}
	return out, nil
}

// answerHint is the line under a paused item: the commands that answer
// it, or, for a recording, why none can (the item lived only in its
// memory).
func (out *printer) answerHint(it ledger.Item) string {
	if out.record != "" {
		return "the recording ends here, paused: the item lived only in this run's memory, so no command can answer it; " +
			"to record the answer too, record without MESSAGE and answer at the prompt: " + out.record
	}
	return howToAnswer(it, out.where)
}

// builtIn reports whether it is an item of a built-in extension, whose
// kinds the CLI knows; other kinds are an extension's own (a guest's).
func builtIn(it ledger.Item) bool {
	return it.Extension == "" || it.Extension == protocol.Name || it.Extension == approval.Name
}

// editable reports whether the prompt takes "edit ARGS" for it: an
// approval, or a guest's item that holds a paused call (the runtime
// refuses the edit if the kind cannot resume the call).
func editable(it ledger.Item) bool {
	return it.Kind == approval.ItemApproval || it.CallID != "" && !builtIn(it)
}

// howToAnswer is the command lines that answer it, as they work from the
// working directory: where names the config and data (see place).
func howToAnswer(it ledger.Item, where string) string {
	cmd := func(verb string, rest ...string) string {
		return strings.Join(append([]string{"ganglion", verb + where, it.ID}, rest...), " ")
	}
	switch it.Kind {
	case protocol.ItemDependency:
		return fmt.Sprintf("provide it: %s (reads the value from stdin), or: %s", cmd("provide"), cmd("reject", "--reason", "TEXT"))
	case protocol.ItemQuestion:
		if !it.Required {
			return fmt.Sprintf("answer it: %s, or: %s", cmd("answer", "ANSWER"), cmd("skip"))
		}
	case approval.ItemApproval:
		return fmt.Sprintf("approve it: %s, or deny it: %s (or %s), or approve it with other arguments: %s",
			cmd("answer", "approve"), cmd("answer", "deny"), cmd("reject", "--reason", "TEXT"), cmd("answer", "edit", "'{...}'"))
	case approval.ItemMistakes, protocol.ItemIntervention:
		return fmt.Sprintf("guide the model: %s", cmd("answer", "GUIDANCE"))
	case approval.ItemRepetition:
		return fmt.Sprintf("guide the model: %s, or stop it: %s", cmd("answer", "GUIDANCE"), cmd("reject", "--reason", "TEXT"))
	}
	if builtIn(it) {
		return fmt.Sprintf("answer it: %s", cmd("answer", "ANSWER"))
	}
	// A kind of an extension's own (a WebAssembly guest's): the actions
	// every kind may take; the extension refuses those it does not accept.
	s := fmt.Sprintf("answer it: %s", cmd("answer", "ANSWER"))
	if !it.Required {
		s += fmt.Sprintf(", skip it: %s", cmd("skip"))
	}
	s += fmt.Sprintf(", or reject it: %s", cmd("reject", "--reason", "TEXT"))
	if it.CallID != "" {
		s += fmt.Sprintf("; run the call it holds with other arguments: %s", cmd("answer", "edit", "'{...}'"))
	}
	return s
}

// place returns how a suggested command names the config and data
// directories so that it works from the working directory: nothing when
// dir is the working directory, else dir as given; and --data when data
// was given. Each piece starts with a space and is quoted for a POSIX
// shell.
func place(dir, data string) string {
	var b strings.Builder
	if !sameDir(dir, ".") {
		b.WriteString(" " + shellQuote(dir))
	}
	if data != "" {
		b.WriteString(" --data " + shellQuote(data))
	}
	return b.String()
}

// sameDir reports whether path a is the directory b.
func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil { // a NUL byte, which no path holds
		return s
	}
	return q
}

// promptPending asks, on an interactive run, for each of items in turn
// (whose names the instance of an item that is not the run's), and
// resolves it. It returns the result of the first answer that resumed a
// turn, or failed, with the item it answered; no item when every item was
// answered without resuming one, or was answered elsewhere meanwhile. It
// reports false when input ended first.
func promptPending(ctx context.Context, api agentsAPI, items []ledger.Item, whose func(ledger.Item) string, sc *lineReader, stdin io.Reader, stderr io.Writer) (*pipeline.TurnResult, *ledger.Item, bool, error) {
	for i := range items {
		it := &items[i]
		for {
			fmt.Fprintf(stderr, "[paused] %s%s %s: %s\n", whose(*it), it.ID, it.Kind, describe(*it))
			var (
				res *pipeline.TurnResult
				err error
			)
			switch {
			case it.Kind == protocol.ItemDependency:
				var v string
				if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					if v, err = readValue(stdin, stderr, "value (not echoed; empty to reject): "); err != nil {
						return nil, nil, false, err
					}
				} else {
					fmt.Fprint(stderr, "value (empty to reject): ")
					if !sc.Scan() {
						return nil, nil, false, sc.Err()
					}
					v = sc.Text()
				}
				if strings.TrimSpace(v) == "" {
					res, err = api.Reject(ctx, it.ID, "declined at the prompt")
				} else {
					res, err = api.Provide(ctx, it.ID, v)
				}
			default:
				hint := "answer"
				switch {
				case it.Kind == protocol.ItemQuestion && !it.Required:
					hint += " (empty line skips)"
				case it.Kind == approval.ItemApproval:
					hint += " (approve, deny, or edit and the new arguments as JSON)"
				case editable(*it):
					hint += " (or edit and the call's new arguments as JSON)"
				}
				fmt.Fprintf(stderr, "%s: ", hint)
				if !sc.Scan() {
					return nil, nil, false, sc.Err()
				}
				line := sc.Text()
				if l := strings.TrimSpace(line); l == "/exit" || l == "/quit" {
					return nil, nil, false, nil // as when input ends: the item stays pending
				}
				args, edit := strings.CutPrefix(strings.TrimSpace(line), "edit ")
				switch {
				case edit && editable(*it):
					res, err = api.Edit(ctx, it.ID, json.RawMessage(strings.TrimSpace(args)))
				case strings.TrimSpace(line) == "" && it.Kind == protocol.ItemQuestion && !it.Required:
					res, err = api.Skip(ctx, it.ID)
				default:
					res, err = api.Answer(ctx, it.ID, line)
				}
			}
			if errors.Is(err, ledger.ErrResolved) {
				break
			}
			if err != nil && ctx.Err() == nil && isInvalid(err) {
				fmt.Fprintln(stderr, "ganglion:", err)
				continue // ask again
			}
			if err != nil || res != nil {
				return res, it, true, err
			}
			break
		}
	}
	return nil, nil, true, nil
}

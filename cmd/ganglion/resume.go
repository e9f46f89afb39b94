package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/runtime"
)

func newResumeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume [DIR]",
		Short: "Finish the work a stopped process left open, and print its answers",
		Long: `Resume finishes what a ganglion process that stopped (a crash, kill -9,
Ctrl-C) left open in DIR's data directory, waits for it, and prints the
answers:

  - a tool call that was running when the process stopped gets an
    "interrupted" result, which says it may or may not have taken effect;
    each is printed as an [interrupted] line;
  - a delegated agent whose turn was cut short goes on from where it
    stopped (its tool calls never run again on their own), and a chain's
    reports are handed over;
  - paused turns whose items were all answered resume, and pending items
    whose deadline passed are handled: each is printed as a [pending] line
    that says what became of it (a required dependency's timeout fails its
    agent's task, and the line says why);
  - the answer to each earlier request that a chain reaches is printed.

Exit codes: 0 nothing is left open, 1 an error (or an agent that fails to
load has work waiting), 3 an agent waits for a
human (see ganglion pending). ganglion run does the same for the work it
finds, after its own turn.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			return resumeWork(cmd.Context(), f, dir, stdout, stderr)
		},
	}
	addDataFlags(cmd, &f)
	return cmd
}

func resumeWork(ctx context.Context, f runFlags, dir string, stdout, stderr io.Writer) error {
	out := &printer{w: stdout, json: f.json, where: place(dir, f.data)}
	_, answers, channel := cliAnswers(out)
	// Nothing runs before the printer listens: it hears the bus before
	// the runtime starts, whose expiry timer may expire an item at once.
	logger, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return err
	}
	bus := events.NewBus(events.WithLogger(logger))
	unsub := bus.Subscribe("*", out.event)
	defer unsub()
	rt, _, err := openRuntime(ctx, f, dir, stderr, channel, runtime.WithoutRecovery(), runtime.WithEvents(bus))
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Recover(ctx); err != nil {
		fmt.Fprintln(stderr, "ganglion: resume:", err)
	}
	if err := finishRecovered(ctx, rt, answers, out); err != nil {
		return failed(err)
	}
	if err := waitingOnUnavailable(ctx, rt); err != nil {
		return failed(err)
	}
	open, err := rt.Pending(ctx, ledger.Filter{Open: true})
	if err != nil {
		return failed(err)
	}
	if len(open) > 0 {
		printPaused(ctx, rt, out, "", "", stderr)
		return &codeError{code: exitPaused}
	}
	if !f.json {
		fmt.Fprintln(stderr, "nothing is left open")
	}
	return nil
}

// waitingOnUnavailable returns an error naming each agent that failed to
// load while work of its waits: that work cannot finish until it loads.
func waitingOnUnavailable(ctx context.Context, rt *runtime.Runtime) error {
	un := rt.Unavailable()
	var errs []error
	for _, name := range rt.Agents() {
		loadErr, ok := un[name]
		if !ok {
			continue
		}
		tasks, err := rt.Tasks(ctx, name, "")
		if err != nil {
			return err
		}
		items, err := rt.Pending(ctx, ledger.Filter{Agent: name, Open: true})
		if err != nil {
			return err
		}
		if len(tasks)+len(items) > 0 {
			errs = append(errs, fmt.Errorf("agent %q failed to load, and its work waits (%d tasks, %d pending items); fix it and run ganglion resume again: %w",
				name, len(tasks), len(items), loadErr))
		}
	}
	return errors.Join(errs...)
}

// finishRecovered waits until no delegation task runs in the background
// (the chains an earlier process left, which New or Recover started), and
// prints the answers they reach for earlier requests as each arrives: a
// process killed while a second chain still runs has printed the first.
func finishRecovered(ctx context.Context, rt *runtime.Runtime, answers <-chan runtime.Report, out *printer) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := make(chan error, 1)
	go func() { idle <- rt.WaitTasks(wctx) }()
	for {
		select {
		case rep := <-answers:
			out.answer(rep, true)
		case err := <-idle:
			if err != nil {
				return fmt.Errorf("waiting for the delegation tasks: %w (they go on at the next start)", err)
			}
			// The answer is delivered before the last task turn ends.
			for {
				select {
				case rep := <-answers:
					out.answer(rep, true)
				default:
					return nil
				}
			}
		}
	}
}

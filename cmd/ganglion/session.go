package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// runAPI is what ganglion run needs of the agents, on top of agentsAPI:
// sending a message, and reading an instance's model usage. The runtime of
// this process is one; a client of the server that holds its data
// directory is the other.
type runAPI interface {
	agentsAPI
	// Send runs a turn of agent's instance key on in, a user message.
	Send(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error)
	Usage(ctx context.Context, agent, key string) (pipeline.Usage, error)
}

// turnWatch is how a run sees the turns it starts: what differs between
// this process's runtime, whose events reach the printer as they are
// published, and a server, whose events come over a stream.
type turnWatch interface {
	// shown returns once the printer has been handed the events of turn
	// of agent's instance key (a turn that ran), or once they cannot
	// come.
	shown(ctx context.Context, agent, key, turn string)
	// answer waits for the answer of the task turn res started
	// (res.TaskID), the events of its chain shown as they come, and
	// returns it as the turn's result. When the chain stops short of an
	// answer, an agent in it waits for a human: the result is then paused,
	// with res's TurnID and TaskID.
	answer(ctx context.Context, res *pipeline.TurnResult) (*pipeline.TurnResult, error)
}

// session is one ganglion run, on its own or through a server alike: the
// messages it sends to one instance, the turns they start, and, on an
// interactive run, the questions it asks inline for what those turns wait
// for.
type session struct {
	api   runAPI
	watch turnWatch
	out   *printer
	// agent and instance are the instance the run talks to.
	agent, instance string
	// meta is the metadata of the messages it sends.
	meta map[string]any
}

// run sends msg, or, when interactive, one message per line of stdin,
// asking for what a paused turn waits for before reading the next.
func (s *session) run(ctx context.Context, msg string, interactive bool, stdin io.Reader, stderr io.Writer) error {
	if !interactive {
		res, err := s.send(ctx, msg)
		if err == nil && res.FinishReason == pipeline.FinishPaused {
			s.printPaused(ctx, res, stderr)
		}
		return turnExit(res, err)
	}
	sc := newLineReader(stdin, stderr)
	prompt := func() {
		if !s.out.json && isTerminal(stdin) {
			fmt.Fprint(stderr, "> ")
		}
	}
	for prompt(); sc.Scan(); prompt() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line == "/exit" || line == "/quit" {
			return nil
		}
		res, err := s.send(ctx, line)
		paused := errors.Is(err, runtime.ErrPaused) || err == nil && res.FinishReason == pipeline.FinishPaused
		if err != nil && !paused {
			if ctx.Err() != nil {
				return turnExit(res, err)
			}
			fmt.Fprintln(stderr, "ganglion:", err)
			continue
		}
		if paused {
			if err != nil {
				fmt.Fprintln(stderr, "ganglion: the agent is paused; answer first, then send your message again")
				res = &pipeline.TurnResult{}
			}
			if more, err := s.resume(ctx, res, sc, stdin, stderr); !more || err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// send sends text to the instance, shows the turn, and, when it
// delegated, waits for its task's answer.
func (s *session) send(ctx context.Context, text string) (*pipeline.TurnResult, error) {
	in := runtime.UserMessage(text)
	in.Metadata = maps.Clone(s.meta)
	res, err := s.api.Send(ctx, s.agent, s.instance, in)
	s.shown(ctx, s.agent, s.instance, res)
	s.out.endTurn(res, err)
	if err == nil && res.FinishReason == pipeline.FinishDelegated {
		return s.watch.answer(ctx, res)
	}
	return res, err
}

// shown waits until the printer has been handed the events of the turn
// res of agent's instance key, if a turn ran.
func (s *session) shown(ctx context.Context, agent, key string, res *pipeline.TurnResult) {
	if res != nil && res.TurnID != "" {
		s.watch.shown(ctx, agent, key, res.TurnID)
	}
}

// resume asks for what turn res waits for, item by item, until the turn,
// and the delegation chain it belongs to, runs to an end or pauses on
// nothing left to ask; it reports false when input ended first.
func (s *session) resume(ctx context.Context, res *pipeline.TurnResult, sc *lineReader, stdin io.Reader, stderr io.Writer) (bool, error) {
	for {
		items, err := waitingItems(ctx, s.api, s.agent, s.instance)
		if err != nil {
			fmt.Fprintln(stderr, "ganglion:", err)
			return true, nil
		}
		r, it, more, err := promptPending(ctx, s.api, items, s.whose, sc, stdin, stderr)
		if !more {
			return false, &codeError{code: exitPaused}
		}
		if it == nil { // no answer ran a turn: nothing is left to ask
			return true, nil
		}
		own := it.Agent == s.agent && it.Instance == s.instance
		s.shown(ctx, it.Agent, it.Instance, r)
		if own {
			s.out.endTurn(r, err)
		}
		// The chain to see through: the one the resumed turn started, or
		// the one the paused turn belongs to.
		root := res
		if own && err == nil && r.FinishReason == pipeline.FinishDelegated {
			root = r
		}
		if err != nil && !own && root.TaskID != "" && errors.Is(err, runtime.ErrTaskFailed) {
			// A delegated agent's task failed, as the answer meant: its
			// parent hears of it and goes on.
			fmt.Fprintln(stderr, "ganglion:", err)
			err = nil
		}
		if err == nil && root.TaskID != "" {
			r, err = s.watch.answer(ctx, root)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, turnExit(r, err)
			}
			fmt.Fprintln(stderr, "ganglion:", err)
			return true, nil
		}
		if r.FinishReason != pipeline.FinishPaused {
			return true, nil
		}
		res = r
	}
}

// chain returns task id of tasks and the tasks under it.
func chain(tasks []runtime.Task, id string) []runtime.Task {
	in := map[string]bool{id: true}
	var out []runtime.Task
	for grew := true; grew; {
		grew = false
		for _, t := range tasks {
			if !in[t.ID] && in[t.ParentID] {
				in[t.ID], grew = true, true
			}
		}
	}
	for _, t := range tasks {
		if in[t.ID] {
			out = append(out, t)
		}
	}
	return out
}

// whose names the instance of an item that is not the session's, as
// "agent/instance: "; "" for the session's own.
func (s *session) whose(it ledger.Item) string {
	if it.Agent == s.agent && it.Instance == s.instance {
		return ""
	}
	return it.Agent + "/" + it.Instance + ": "
}

// printPaused tells how to answer what turn res waits for.
func (s *session) printPaused(ctx context.Context, res *pipeline.TurnResult, w io.Writer) {
	if s.out.json {
		return
	}
	items, err := waitingItems(ctx, s.api, s.agent, s.instance)
	if err != nil {
		fmt.Fprintln(w, "ganglion:", err)
		return
	}
	for _, it := range items {
		fmt.Fprintf(w, "[paused] %s%s %s: %s\n", s.whose(it), it.ID, it.Kind, describe(it))
		fmt.Fprintf(w, "  %s\n", s.out.answerHint(it))
	}
}

// localWatch is the turnWatch of this process's runtime: its events reach
// the printer as they are published, and the answers of the tasks the run
// started arrive on the channel "cli" (cliAnswers).
type localWatch struct {
	rt      *runtime.Runtime
	answers <-chan runtime.Report
	out     *printer
}

func (localWatch) shown(context.Context, string, string, string) {}

func (w localWatch) answer(ctx context.Context, res *pipeline.TurnResult) (*pipeline.TurnResult, error) {
	return waitAnswer(ctx, w.rt, res, w.answers, w.out)
}

var (
	_ runAPI    = (*runtime.Runtime)(nil)
	_ runAPI    = (*remote)(nil)
	_ turnWatch = localWatch{}
	_ turnWatch = (*serverWatch)(nil)
)

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// All agents are system-level, so each may call_agent any other; the
// script decides who actually delegates to whom.
const configYAML = `
agents:
  - name: lead
    description: splits a feature into research, code and review
    tools: [call_agent]
  - name: researcher
    description: finds prior art and constraints
  - name: coder
    description: writes the code
  - name: reviewer
    description: reviews a change
  - name: planner
    description: turns a goal into a plan
    tools: [call_agent]
  - name: architect
    description: designs the system
    tools: [call_agent]
  - name: engineer
    description: builds what the architect designed
`

// The turn that takes in the reports of an agent's delegations is of kind
// delegation_report; the kind entries answer those, the fallbacks delegate
// (or, for the leaves, answer).
const scriptYAML = `
agents:
  lead:
    turns:
      - kind: delegation_report
        steps: [{text: "Ship it: the CSV export follows RFC 4180, is implemented with streaming writes, and the review approved it."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, args: {agent_id: researcher, message: "Find the CSV dialect our users' spreadsheets expect."}}
            - {name: call_agent, args: {agent_id: coder, message: "Implement the CSV export of the orders table."}}
            - {name: call_agent, args: {agent_id: reviewer, message: "Review the CSV export change for edge cases."}}
        - text: "I delegated research, code and review; I will answer when their reports are in."
  researcher: {fallback: {steps: [{text: "RFC 4180: comma separators, CRLF line ends, quotes doubled."}]}}
  coder: {fallback: {steps: [{text: "Implemented: streaming writes, one row per order."}]}}
  reviewer: {fallback: {steps: [{text: "Approved: embedded quotes and newlines are escaped."}]}}

  planner:
    turns:
      - kind: delegation_report
        steps: [{text: "Plan done: the architect's design is built and its tests pass."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: architect, message: "Design a cache for the pricing service."}}]
        - text: "The architect is on it."
  architect:
    turns:
      - kind: delegation_report
        steps: [{text: "Design: a read-through LRU cache; the engineer built it and its tests pass."}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: engineer, message: "Build a read-through LRU cache in front of the pricing service."}}]
        - text: "The engineer is on it."
  engineer: {fallback: {steps: [{text: "Built the LRU cache; 12 tests pass."}]}}
`

// recorder keeps the task.* events. The bus calls handlers on the
// publisher's goroutine, and parallel children publish from goroutines of
// their own, so it locks.
type recorder struct {
	mu       sync.Mutex
	events   []events.Event
	answered chan struct{} // one value per task.answered
}

func (r *recorder) handle(ev events.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	if ev.Topic == events.TaskAnswered {
		select {
		case r.answered <- struct{}{}:
		default: // a handler must never block the publisher
		}
	}
}

// take returns the events recorded so far, and forgets them.
func (r *recorder) take() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "delegation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := config.Parse(dir+"/ganglion.yaml", []byte(configYAML))
	if err != nil {
		return err
	}
	script, err := scripted.Parse("script.yaml", []byte(scriptYAML))
	if err != nil {
		return err
	}
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(script))
	if err != nil {
		return err
	}
	defer rt.Close()
	rec := &recorder{answered: make(chan struct{}, 8)}
	unsubscribe := rt.Events().Subscribe("task.*", rec.handle)
	defer unsubscribe()

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Both scenarios share the runtime: a child works under its caller's
	// instance key, so the keys keep them apart.
	scenarios := []struct {
		title, agent, key, request string
		show                       []string // the conversations to print
	}{
		{"1. Parallel fan-out: lead delegates to three agents in one step", "lead", "fanout", "Ship the CSV export of the orders table.",
			[]string{"lead"}},
		{"2. A chain three deep: planner → architect → engineer", "planner", "chain", "Make the pricing page fast.",
			[]string{"architect", "planner"}},
	}
	for i, s := range scenarios {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "== %s\n\n> %s (Ask %s/%s)\n", s.title, s.request, s.agent, s.key)
		rep, err := rt.Ask(ctx, s.agent, s.key, s.request)
		if err != nil {
			return err
		}
		// Ask returns when the answer reaches the api channel; the
		// task.answered event is published right after that.
		select {
		case <-rec.answered:
		case <-ctx.Done():
			return fmt.Errorf("waiting for task.answered: %w", ctx.Err())
		}
		for _, name := range s.show {
			hist, err := rt.History(ctx, name, s.key)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "\n%s's conversation:\n", name)
			for _, m := range hist {
				fmt.Fprintf(out, "  %s\n", summary(m))
			}
			// A report is a user message that starts with the notice.
			for _, m := range hist {
				if m.Role == pipeline.RoleUser && strings.HasPrefix(m.Content, "[System notice") {
					fmt.Fprintf(out, "\nthe report %s received:\n%s\n", name, indent(m.Content))
				}
			}
		}
		fmt.Fprintf(out, "\nfinal answer of %s (task %s):\n  %s\n", s.agent, rep.TaskID, rep.Response)
		fmt.Fprintln(out, "\nevents:")
		for _, ev := range stable(rec.take()) {
			fmt.Fprintf(out, "  %s\n", describe(ev))
		}
	}
	return nil
}

// summary is a message on one line.
func summary(m pipeline.Message) string {
	if len(m.ToolCalls) > 0 {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, fmt.Sprintf("%s %s", c.Name, c.Arguments))
		}
		return fmt.Sprintf("%s: %s", m.Role, strings.Join(calls, "\n             "))
	}
	text, _, more := strings.Cut(m.Content, "\n")
	if m.Role == pipeline.RoleTool {
		// "Delegated to coder as task task_…. It starts when …": the
		// first sentence says it.
		var cut bool
		text, _, cut = strings.Cut(text, ". ")
		text += "."
		more = more || cut
	}
	if r := []rune(text); len(r) > 100 {
		text, more = string(r[:100]), true
	}
	if more {
		text += " …"
	}
	return fmt.Sprintf("%s: %s", m.Role, text)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// stable orders the events as they happened, except that the reports of
// parallel children, which finish in any order, are sorted by agent.
func stable(evs []events.Event) []events.Event {
	parent := func(ev events.Event) string {
		d, _ := ev.Data.(events.TaskCompletedData)
		return d.ParentTaskID
	}
	for i := 0; i < len(evs); {
		j := i + 1
		if p := parent(evs[i]); p != "" {
			for j < len(evs) && parent(evs[j]) == p {
				j++
			}
			slices.SortStableFunc(evs[i:j], func(a, b events.Event) int { return strings.Compare(a.Agent, b.Agent) })
		}
		i = j
	}
	return evs
}

// describe is an event on one line, without its random task IDs.
func describe(ev events.Event) string {
	who := ev.Agent + "/" + ev.Instance
	switch d := ev.Data.(type) {
	case events.TaskDelegatedData:
		return fmt.Sprintf("%-15s %s → %s: %q (pending %d)", ev.Topic, who, d.To, d.Message, d.Pending)
	case events.TaskCompletedData:
		to := "reports to its parent"
		if d.ParentTaskID == "" {
			to = "root task: answers its requester"
		}
		return fmt.Sprintf("%-15s %s, %s: %q", ev.Topic, who, to, d.Response)
	case events.TaskAnsweredData:
		return fmt.Sprintf("%-15s %s → %s on channel %s (delivered %v)", ev.Topic, who, d.Requester, d.Channel, d.Delivered)
	}
	return ev.Topic + " " + who
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delegation:", err)
		os.Exit(1)
	}
}

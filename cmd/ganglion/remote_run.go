package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// runRemote is ganglion run against the server that holds the data
// directory. It is the run of this process (session), with the server's
// agents and the server's event stream in place of the runtime's bus: the
// same output, the same inline questions on a pause.
func runRemote(ctx context.Context, c *remote, f runFlags, msg string, interactive bool, stdin io.Reader, out *printer, stderr io.Writer) error {
	agent := f.agent
	if agent == "" {
		var err error
		if agent, err = firstAgent(ctx, c, nil); err != nil {
			return failed(err)
		}
	}
	out.watch(agent, f.instance)
	w, err := c.watch(ctx, agent, f.instance, out)
	if err != nil {
		return failed(fmt.Errorf("following the server's events: %w", err))
	}
	defer w.stop()
	before, _ := c.Usage(ctx, agent, f.instance)
	defer func() { printUsage(ctx, c, agent, f.instance, before, f.json, stderr) }()
	s := &session{api: c, watch: w, out: out, agent: agent, instance: f.instance,
		meta: map[string]any{"requester": "user@cli"}}
	return s.run(ctx, msg, interactive, stdin, stderr)
}

// instancePath is the API path of agent's instance key.
func instancePath(agent, key string) string {
	return "/v1/agents/" + url.PathEscape(agent) + "/instances/" + url.PathEscape(key)
}

// Send sends in's text and metadata to agent's instance key as a user
// message and returns the turn's result; the turn's events come on the
// server's event stream (watch).
func (c *remote) Send(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	body := map[string]any{"text": in.Text}
	if len(in.Metadata) > 0 {
		body["metadata"] = in.Metadata
	}
	var out struct{ Result *pipeline.TurnResult }
	err := c.do(ctx, "POST", instancePath(agent, key)+"/messages", body, &out)
	if e := (*remoteError)(nil); errors.As(err, &e) {
		return e.Result, err
	}
	return out.Result, err
}

// Usage returns the model usage of agent's instance key.
func (c *remote) Usage(ctx context.Context, agent, key string) (pipeline.Usage, error) {
	var out struct{ Usage pipeline.Usage }
	err := c.do(ctx, "GET", instancePath(agent, key)+"/usage", nil, &out)
	return out.Usage, err
}

// serverWatch is the turnWatch of a server: it hands the events of the
// server's stream (GET /v1/events) to a run's printer, as the runtime's
// bus would in the run's own process, and keeps what the run waits for:
// which turns ended, which tasks were answered. The delegation events of
// chains other than the run's (another client's) are not shown.
type serverWatch struct {
	c     *remote
	out   *printer
	stopc context.CancelFunc
	done  chan struct{} // closed when the stream has ended
	// agent and instance are the run's instance: the chains it starts
	// are the run's.
	agent, instance string

	mu       sync.Mutex
	wake     chan struct{}           // closed, and replaced, at each event
	ended    map[string]bool         // "agent/instance/turn" of the turns that ended
	answered map[string]events.Event // task.answered, by task ID
	ours     map[string]bool         // the tasks of the run's chains
	finished map[string]bool         // the tasks that completed (task.completed)
	changes  int                     // turns and task events: what may stall a chain
	gap      bool                    // events were lost: what is waited for may never come
	err      error                   // why the stream ended, once it has
}

// watch opens the server's event stream, from now on, and hands its
// events to out as they come, until stop.
func (c *remote) watch(ctx context.Context, agent, key string, out *printer) (*serverWatch, error) {
	sctx, cancel := context.WithCancel(ctx)
	res, err := c.send(sctx, "GET", "/v1/events", nil, "text/event-stream")
	if err != nil {
		cancel()
		return nil, err
	}
	w := &serverWatch{c: c, out: out, stopc: cancel, done: make(chan struct{}), agent: agent, instance: key,
		wake: make(chan struct{}), ended: map[string]bool{}, answered: map[string]events.Event{}, ours: map[string]bool{}, finished: map[string]bool{}}
	go func() {
		defer close(w.done)
		defer res.Body.Close()
		err := readEvents(res.Body, func(_, name string, data []byte) bool {
			var ev events.Event
			switch {
			case name == "gap":
				w.update(func() { w.gap = true })
			case json.Unmarshal(data, &ev) == nil:
				w.event(ev)
			}
			return true
		})
		if err == nil {
			err = errors.New("the server closed its event stream")
		}
		w.update(func() { w.err = err })
	}()
	return w, nil
}

// stop ends the stream and waits for its reader to return.
func (w *serverWatch) stop() {
	w.stopc()
	<-w.done
}

// update changes the watch's state with fn and wakes its waiters.
func (w *serverWatch) update(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn()
	close(w.wake)
	w.wake = make(chan struct{})
}

// event shows ev, unless it belongs to another client's chain, and then
// records it for the waiters: they find it shown.
func (w *serverWatch) event(ev events.Event) {
	w.mu.Lock()
	show := true
	switch d := ev.Data.(type) {
	case events.TaskDelegatedData:
		show = ev.Agent == w.agent && ev.Instance == w.instance || w.ours[d.TaskID]
		if show {
			w.ours[d.TaskID], w.ours[d.ChildTaskID] = true, true
		}
	case events.TaskCompletedData:
		show = w.ours[d.TaskID]
	case events.TaskAnsweredData:
		show = w.ours[d.TaskID]
	}
	w.mu.Unlock()
	if show {
		w.out.event(ev)
	}
	w.update(func() {
		switch d := ev.Data.(type) {
		case events.TurnFinishedData:
			w.ended[ev.Agent+"/"+ev.Instance+"/"+ev.TurnID] = true
			w.changes++
		case events.TaskCompletedData:
			w.finished[d.TaskID] = true
			w.changes++
		case events.TaskAnsweredData:
			w.answered[d.TaskID] = ev
			w.changes++
		default:
			if strings.HasPrefix(ev.Topic, "task.") {
				w.changes++
			}
		}
	})
}

// shown waits for the end of turn of agent's instance key on the stream.
func (w *serverWatch) shown(ctx context.Context, agent, key, turn string) {
	for {
		w.mu.Lock()
		done, wake := w.ended[agent+"/"+key+"/"+turn] || w.gap || w.err != nil, w.wake
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// answer waits, on the stream, for the answer of task res.TaskID. The
// chain has stalled when none of its tasks runs or has a report to take
// in and one of them is paused: each turn's end and each task event
// (what can stall it) makes it look again.
func (w *serverWatch) answer(ctx context.Context, res *pipeline.TurnResult) (*pipeline.TurnResult, error) {
	looked := -1
	for {
		w.mu.Lock()
		ev, answered := w.answered[res.TaskID]
		changes, gap, streamErr, wake := w.changes, w.gap, w.err, w.wake
		w.mu.Unlock()
		switch {
		case answered:
			d := ev.Data.(events.TaskAnsweredData)
			w.out.answer(runtime.Report{TaskID: d.TaskID, Agent: ev.Agent, Instance: ev.Instance, Requester: d.Requester, Channel: d.Channel,
				Response: d.Response, Error: d.Error}, false)
			if d.Error != "" {
				return res, fmt.Errorf("task %s: %s", d.TaskID, d.Error)
			}
			return &pipeline.TurnResult{TurnID: res.TurnID, FinishReason: pipeline.FinishText, TaskID: d.TaskID,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: d.Response}}, nil
		case gap || streamErr != nil:
			why := "events were lost"
			if streamErr != nil {
				why = streamErr.Error()
			}
			return res, fmt.Errorf("waiting for task %s: %s (see ganglion tasks)", res.TaskID, why)
		case changes != looked:
			looked = changes
			stalled, err := w.stalled(ctx, res.TaskID)
			if err != nil {
				return res, fmt.Errorf("waiting for task %s: %w", res.TaskID, err)
			}
			if stalled {
				return &pipeline.TurnResult{TurnID: res.TurnID, FinishReason: pipeline.FinishPaused, TaskID: res.TaskID}, nil
			}
			continue // what changed while the server answered
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// stalled reports whether the chain of task id waits for a human: one of
// its tasks is paused, and none is queued (its turn to run, or running) or
// reporting. A task the stream said completed counts as gone: the event
// comes before the store drops it.
func (w *serverWatch) stalled(ctx context.Context, id string) (bool, error) {
	tasks, err := w.c.Tasks(ctx, "", "")
	if err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	paused := false
	for _, t := range chain(tasks, id) {
		if w.finished[t.ID] {
			continue
		}
		switch t.State {
		case runtime.TaskPaused:
			paused = true
		case runtime.TaskQueued, runtime.TaskReporting, runtime.TaskAnswered:
			return false, nil
		}
	}
	return paused, nil
}

// readEvents reads server-sent events from r and calls fn with each,
// until fn returns false or the stream ends.
func readEvents(r io.Reader, fn func(id, name string, data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var id, name string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data.WriteString(line[len("data: "):])
		case line == "":
			if name != "" || data.Len() > 0 {
				if !fn(id, name, data.Bytes()) {
					return nil
				}
			}
			id, name = "", ""
			data.Reset()
		}
	}
	return sc.Err()
}

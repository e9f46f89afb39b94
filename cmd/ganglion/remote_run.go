package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// runRemote is ganglion run against the server that holds the data
// directory: each message is sent with the turn's events streamed, and a
// turn that delegated waits for its task's answer on the server's event
// stream, picked up from the last event the turn's stream showed.
func runRemote(ctx context.Context, c *remote, f runFlags, msg string, interactive bool, stdin io.Reader, out *printer, stderr io.Writer) error {
	agent := f.agent
	if agent == "" {
		var err error
		if agent, err = firstAgent(ctx, c, nil); err != nil {
			return failed(err)
		}
	}
	out.watch(agent, f.instance)
	send := func(text string) (*pipeline.TurnResult, error) {
		res, last, err := c.sendStreamed(ctx, agent, f.instance, text, out.event)
		out.endTurn(res, err)
		if err == nil && res.FinishReason == pipeline.FinishDelegated {
			res, err = c.waitAnswer(ctx, res, last, out)
		}
		if err == nil && res.FinishReason == pipeline.FinishPaused {
			printPaused(ctx, c, out, "", "", stderr)
		}
		return res, err
	}
	if !interactive {
		return turnExit(send(msg))
	}
	sc := newLineReader(stdin, stderr)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return nil
		}
		if _, err := send(line); err != nil {
			if ctx.Err() != nil {
				return failed(err)
			}
			fmt.Fprintln(stderr, "ganglion:", err)
		}
	}
	return sc.Err()
}

// sendStreamed sends text to agent's instance key, hands the turn's
// events to fn as they stream, and returns the turn's result and the ID
// of the last event it saw.
func (c *remote) sendStreamed(ctx context.Context, agent, key, text string, fn func(events.Event)) (*pipeline.TurnResult, string, error) {
	in := map[string]any{"text": text, "metadata": map[string]any{"requester": "user@cli"}}
	res, err := c.send(ctx, "POST", "/v1/agents/"+url.PathEscape(agent)+"/instances/"+url.PathEscape(key)+"/messages", in, "text/event-stream")
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	var (
		last    string
		result  *pipeline.TurnResult
		turnErr error
	)
	err = readEvents(res.Body, func(id, name string, data []byte) bool {
		switch name {
		case "result":
			var r struct{ Result *pipeline.TurnResult }
			turnErr = json.Unmarshal(data, &r)
			result = r.Result
			return false
		case "error":
			e := &remoteError{}
			if json.Unmarshal(data, e) != nil || e.Message == "" {
				e.Message = "the turn failed: " + string(data)
			}
			turnErr = e
			return false
		}
		last = id
		var ev events.Event
		if json.Unmarshal(data, &ev) == nil {
			fn(ev)
		}
		return true
	})
	switch {
	case turnErr != nil:
		return result, last, turnErr
	case err == nil && result == nil:
		err = errors.New("the server's stream ended before the turn's result")
	}
	return result, last, err
}

// waitAnswer waits, on the server's event stream from the event after
// last, for the answer of the task the turn res delegated, showing the
// delegations and reports as they come.
func (c *remote) waitAnswer(ctx context.Context, res *pipeline.TurnResult, last string, out *printer) (*pipeline.TurnResult, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/events", nil)
	if err != nil {
		return res, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	hres, err := c.hc.Do(req)
	if err != nil {
		return res, err
	}
	defer hres.Body.Close()
	var (
		answer    *pipeline.TurnResult
		answerErr error
	)
	err = readEvents(hres.Body, func(_, name string, data []byte) bool {
		var ev events.Event
		if json.Unmarshal(data, &ev) != nil {
			return true
		}
		if d, ok := ev.Data.(events.TaskAnsweredData); ok && d.TaskID == res.TaskID {
			rep := runtime.Report{TaskID: d.TaskID, Agent: ev.Agent, Instance: ev.Instance, Requester: d.Requester, Channel: d.Channel,
				Response: d.Response, Error: d.Error}
			out.answer(rep, false)
			if d.Error != "" {
				answerErr = fmt.Errorf("task %s: %s", d.TaskID, d.Error)
			}
			answer = &pipeline.TurnResult{TurnID: res.TurnID, FinishReason: pipeline.FinishText, TaskID: d.TaskID,
				Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: d.Response}}
			return false
		}
		out.event(ev)
		return true
	})
	if answer == nil {
		if err == nil {
			err = errors.New("the server's event stream ended before the task's answer (see ganglion tasks)")
		}
		return res, err
	}
	return answer, answerErr
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

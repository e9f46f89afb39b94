package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// A data directory that ganglion serve (or ganglion mcp) holds cannot be
// opened by another process; the commands that read it or answer what
// agents wait for then talk to that server instead. The server writes
// where it listens next to the data directory (DATA.server, see
// serving.go), and the token is in DATA.token.

// agentsAPI is what the pending, tasks and history commands need: the
// runtime of this process, or a running server's.
type agentsAPI interface {
	Pending(ctx context.Context, f ledger.Filter) ([]ledger.Item, error)
	PendingItem(ctx context.Context, id string) (ledger.Item, error)
	Answer(ctx context.Context, id, answer string) (*pipeline.TurnResult, error)
	Skip(ctx context.Context, id string) (*pipeline.TurnResult, error)
	Provide(ctx context.Context, id, value string) (*pipeline.TurnResult, error)
	Reject(ctx context.Context, id, reason string) (*pipeline.TurnResult, error)
	Edit(ctx context.Context, id string, args json.RawMessage) (*pipeline.TurnResult, error)
	Tasks(ctx context.Context, agent, key string) ([]runtime.Task, error)
	History(ctx context.Context, agent, key string) ([]pipeline.Message, error)
	EffectiveHistory(ctx context.Context, agent, key string) ([]pipeline.Message, error)
}

// serverFile is what serve and mcp write beside the data directory
// (DATA.server).
type serverFile struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// openAgents opens the runtime of dir, or, when a running server holds
// its data directory, a client of that server (rt is then nil). close
// releases either.
func openAgents(ctx context.Context, f runFlags, dir string, stderr io.Writer, extra ...runtime.Option) (api agentsAPI, rt *runtime.Runtime, close func(), err error) {
	rt, _, err = openRuntime(ctx, f, dir, stderr, extra...)
	if err == nil {
		return rt, rt, func() { rt.Close() }, nil
	}
	c, err := serverFor(f, dir, err, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, nil, func() {}, nil
}

// serverFor returns a client of the server that holds the data directory
// of dir, when openErr (opening the runtime failed) says a process holds
// it and that process is a server; else openErr. The client says on
// stderr when it tries a call again.
func serverFor(f runFlags, dir string, openErr error, stderr io.Writer) (*remote, error) {
	if !errors.Is(openErr, badger.ErrInUse) {
		return nil, openErr
	}
	data, err := dataDir(f, dir)
	if err != nil {
		return nil, openErr
	}
	c, ok, err := dialServer(data)
	switch {
	case err != nil:
		return nil, failed(fmt.Errorf("%w; a server holds it, but: %w", openErr, err))
	case !ok:
		return nil, openErr
	}
	c.stderr = stderr
	return c, nil
}

// dialServer returns a client of the server that holds data, if it says
// it does (DATA.server) and answers.
func dialServer(data string) (*remote, bool, error) {
	b, err := os.ReadFile(data + ".server")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var sf serverFile
	if err := json.Unmarshal(b, &sf); err != nil || sf.URL == "" {
		return nil, false, fmt.Errorf("%s does not say where the server listens: %v", data+".server", err)
	}
	tok, err := os.ReadFile(data + ".token")
	if err != nil {
		return nil, false, fmt.Errorf("the server's token: %w", err)
	}
	c := &remote{base: strings.TrimSuffix(sf.URL, "/"), token: strings.TrimSpace(string(tok)), hc: &http.Client{}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.do(ctx, "GET", "/v1/health", nil, nil); err != nil {
		return nil, false, fmt.Errorf("the server at %s does not answer (%v): if it stopped without cleaning up, delete %s", sf.URL, err, data+".server")
	}
	return c, true, nil
}

// remote is a client of a running ganglion serve or ganglion mcp.
type remote struct {
	base, token string
	hc          *http.Client
	// stderr is where a call tried again says so; nil: nowhere.
	stderr io.Writer
	// sleep waits d, or until ctx ends; nil: a timer. Tests count the
	// waits instead.
	sleep func(ctx context.Context, d time.Duration) error
}

// How a call the server answered 503 with a Retry-After is tried again:
// the store was unavailable for a moment (a NATS server is down, or its
// cluster elects a leader, for about 5 s) or the process was stopping.
// The server's wait is honoured up to maxRetryWait; after maxRetries
// retries, or once the waits would pass retryFor in all, the call fails.
const (
	maxRetryWait = 10 * time.Second
	maxRetries   = 10
	retryFor     = 30 * time.Second
)

// remoteError is an error the server answered; Is matches the runtime's
// sentinel of its code, so that the commands treat it as they treat the
// runtime's own.
type remoteError struct {
	Code    string `json:"code"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Result is the turn's result when a turn ran and failed.
	Result *pipeline.TurnResult `json:"result"`
}

func (e *remoteError) Error() string { return e.Message }

func (e *remoteError) Is(target error) bool {
	switch e.Code {
	case "invalid_action":
		return target == extensions.ErrInvalidAction
	case "paused":
		return target == runtime.ErrPaused
	case "not_found":
		return target == ledger.ErrNotFound
	case "already_resolved":
		return target == ledger.ErrResolved
	case "unknown_agent":
		return target == runtime.ErrUnknownAgent
	case "task_failed":
		return target == runtime.ErrTaskFailed
	}
	return false
}

// send makes a request with the token and returns the server's answer
// when it succeeded; an answer of 300 or more becomes the server's error
// (a *remoteError where the body carries one) and its body is closed.
//
// An answer 503 with a Retry-After (a transient failure) is tried again
// after that wait, saying so on stderr, when the call is safe to repeat
// (repeatable): then the call fails only once the retries are spent
// (maxRetries, retryFor), naming how long it was tried.
func (c *remote) send(ctx context.Context, method, path string, in any, accept string) (*http.Response, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = b
	}
	var waited time.Duration
	for retries := 0; ; retries++ {
		res, after, err := c.try(ctx, method, path, body, accept)
		var e *remoteError
		errors.As(err, &e)
		switch {
		case err == nil:
			return res, nil
		case retries > 0 && e != nil && e.Code == "already_resolved":
			return nil, fmt.Errorf("%w (an earlier try of this call, answered %d, may have been the one that resolved it)", err, http.StatusServiceUnavailable)
		case after <= 0 || !repeatable(method, err):
			return nil, err
		}
		wait := min(after, maxRetryWait)
		if retries == maxRetries || waited+wait > retryFor {
			return nil, fmt.Errorf("the server answered %d %s to %d tries in %s: %w", http.StatusServiceUnavailable, e.Code, retries+1, waited, err)
		}
		if c.stderr != nil {
			fmt.Fprintf(c.stderr, "the server answered %d %s (%s); trying again in %s\n", http.StatusServiceUnavailable, e.Code, oneLine(e.Message, 160), wait)
		}
		sleep := c.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if serr := sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w (then, waiting to try again: %w)", err, serr)
		}
		waited += wait
	}
}

// repeatable reports whether a call that failed with err, a transient
// failure the server answered, is safe to make again as it is: a GET, or
// a POST whose turn did not start (its result, if any, has no turn ID:
// the failure came before anything was stored, finding the instance's
// owner or taking its lease; an action on a pending item that was applied
// is refused the second time, as already resolved). The server honours
// no idempotency key, so a POST whose turn started is not made again.
func repeatable(method string, err error) bool {
	var e *remoteError
	if !errors.As(err, &e) {
		return false
	}
	return method == http.MethodGet || method == http.MethodPost && (e.Result == nil || e.Result.TurnID == "")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// try is one request of send; after is the answer's Retry-After when it
// answered 503 with one.
func (c *remote) try(ctx context.Context, method, path string, in []byte, accept string) (res *http.Response, after time.Duration, err error) {
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err = c.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if res.StatusCode < 300 {
		return res, 0, nil
	}
	defer res.Body.Close()
	if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && res.StatusCode == http.StatusServiceUnavailable && n >= 0 {
		after = max(time.Duration(n)*time.Second, 100*time.Millisecond)
	}
	var e struct {
		Error remoteError `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		return nil, after, fmt.Errorf("the server answered %s", res.Status)
	}
	return nil, after, &e.Error
}

// do makes a call; out, if not nil, receives the answer's JSON.
func (c *remote) do(ctx context.Context, method, path string, in, out any) error {
	res, err := c.send(ctx, method, path, in, "")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *remote) Pending(ctx context.Context, f ledger.Filter) ([]ledger.Item, error) {
	q := url.Values{}
	if !f.Open {
		q.Set("all", "true")
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.Instance != "" {
		q.Set("instance", f.Instance)
	}
	var out struct{ Items []ledger.Item }
	err := c.do(ctx, "GET", "/v1/pending?"+q.Encode(), nil, &out)
	return out.Items, err
}

func (c *remote) PendingItem(ctx context.Context, id string) (ledger.Item, error) {
	var out struct{ Item ledger.Item }
	err := c.do(ctx, "GET", "/v1/pending/"+url.PathEscape(id), nil, &out)
	return out.Item, err
}

// act applies an action to item id.
func (c *remote) act(ctx context.Context, id, action string, body any) (*pipeline.TurnResult, error) {
	var out struct {
		Result *pipeline.TurnResult
	}
	err := c.do(ctx, "POST", "/v1/pending/"+url.PathEscape(id)+"/"+action, body, &out)
	if e := (*remoteError)(nil); errors.As(err, &e) {
		return e.Result, err // the turn the action resumed, which failed
	}
	return out.Result, err
}

func (c *remote) Answer(ctx context.Context, id, answer string) (*pipeline.TurnResult, error) {
	return c.act(ctx, id, "answer", map[string]string{"answer": answer})
}

func (c *remote) Skip(ctx context.Context, id string) (*pipeline.TurnResult, error) {
	return c.act(ctx, id, "skip", nil)
}

func (c *remote) Provide(ctx context.Context, id, value string) (*pipeline.TurnResult, error) {
	return c.act(ctx, id, "provide", map[string]string{"value": value})
}

func (c *remote) Reject(ctx context.Context, id, reason string) (*pipeline.TurnResult, error) {
	return c.act(ctx, id, "reject", map[string]string{"reason": reason})
}

func (c *remote) Edit(ctx context.Context, id string, args json.RawMessage) (*pipeline.TurnResult, error) {
	if !json.Valid(args) {
		// Sent as it is, the server could not even read the request.
		return nil, fmt.Errorf("%w: the edited arguments are not JSON: %s", extensions.ErrInvalidAction, oneLine(string(args), 80))
	}
	return c.act(ctx, id, "edit", map[string]json.RawMessage{"arguments": args})
}

func (c *remote) Tasks(ctx context.Context, agent, key string) ([]runtime.Task, error) {
	q := url.Values{}
	if agent != "" {
		q.Set("agent", agent)
	}
	if key != "" {
		q.Set("instance", key)
	}
	var out struct{ Tasks []runtime.Task }
	err := c.do(ctx, "GET", "/v1/tasks?"+q.Encode(), nil, &out)
	return out.Tasks, err
}

func (c *remote) history(ctx context.Context, agent, key, query string) ([]pipeline.Message, error) {
	var out struct{ Messages []pipeline.Message }
	err := c.do(ctx, "GET", "/v1/agents/"+url.PathEscape(agent)+"/instances/"+url.PathEscape(key)+"/history"+query, nil, &out)
	return out.Messages, err
}

func (c *remote) History(ctx context.Context, agent, key string) ([]pipeline.Message, error) {
	return c.history(ctx, agent, key, "")
}

func (c *remote) EffectiveHistory(ctx context.Context, agent, key string) ([]pipeline.Message, error) {
	return c.history(ctx, agent, key, "?effective=true")
}

// follow calls fn with the events of agent's instance key from now on,
// until ctx ends; ready is closed once the stream is open.
func (c *remote) follow(ctx context.Context, agent, key string, ready chan<- struct{}, fn func(events.Event)) error {
	res, err := c.send(ctx, "GET", "/v1/agents/"+url.PathEscape(agent)+"/instances/"+url.PathEscape(key)+"/events", nil, "text/event-stream")
	close(ready)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return readEvents(res.Body, func(_, _ string, data []byte) bool {
		var ev events.Event
		if json.Unmarshal(data, &ev) == nil {
			fn(ev)
		}
		return true
	})
}

// firstAgent returns the config's first agent, the default of the
// commands that name one.
func firstAgent(ctx context.Context, api agentsAPI, rt *runtime.Runtime) (string, error) {
	if rt != nil {
		return rt.Agents()[0], nil
	}
	var out struct{ Agents []struct{ Name string } }
	if err := api.(*remote).do(ctx, "GET", "/v1/agents", nil, &out); err != nil {
		return "", err
	}
	if len(out.Agents) == 0 {
		return "", errors.New("the server has no agents")
	}
	return out.Agents[0].Name, nil
}

var _ agentsAPI = (*runtime.Runtime)(nil)
var _ agentsAPI = (*remote)(nil)

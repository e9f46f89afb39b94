package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
)

// Server is the HTTP API of one [runtime.Runtime]: an [http.Handler] to
// serve as it is, or to mount in an app's own mux (it answers paths that
// start with /v1/).
//
// A Server is safe for concurrent use. Close it before the runtime.
type Server struct {
	rt        *runtime.Runtime
	token     string
	tokenHint string
	logger    *slog.Logger
	maxBody   int64
	log       *eventLog
	unsub     func()
	mux       *http.ServeMux
	hooks     *outbox       // webhooks' notifications; nil without WithWebhooks
	gui       *GUI          // browser clients' answers; nil without WithGUI
	closed    chan struct{} // closed by Close: the answer streams end
	closeOnce sync.Once
	// heartbeat is how often an idle event stream sends a comment, so
	// that proxies and clients see the connection alive.
	heartbeat time.Duration
}

// Option configures a [Server].
type Option func(*Server)

// WithToken makes every request need "Authorization: Bearer token". The
// default, no token, is for tests and for an app that authenticates in
// its own middleware: `ganglion serve` always sets one.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithTokenHint adds hint, where a client finds the token, to the answer
// to a request without it, in parentheses: "it is kept in
// .ganglion/data.token, beside ganglion.yaml".
func WithTokenHint(hint string) Option { return func(s *Server) { s.tokenHint = hint } }

// WithLogger sets the logger of failed requests. Default: discard.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.logger = l } }

// WithBacklog sets how many of the latest events the server keeps for
// clients that reconnect (Last-Event-ID). Default 10,000.
func WithBacklog(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.log = newEventLog(n, s.log.epoch)
		}
	}
}

// maxBody bounds a request's body.
const maxBody = 1 << 20

// New returns the server of rt. It subscribes to rt's events at once: an
// event stream can replay what happened since. The error is the webhook
// outbox's, which New opens ([WithWebhooks]).
func New(rt *runtime.Runtime, opts ...Option) (*Server, error) {
	s := &Server{rt: rt, logger: slog.New(slog.DiscardHandler), maxBody: maxBody, heartbeat: 15 * time.Second, closed: make(chan struct{}),
		log: newEventLog(10_000, strconv.FormatInt(time.Now().UnixNano(), 36))}
	for _, o := range opts {
		o(s)
	}
	if s.hooks != nil {
		if err := s.hooks.start(s.logger); err != nil {
			return nil, err
		}
		unlog := rt.Events().Subscribe("*", s.log.add)
		unhook := rt.Events().Subscribe("*", s.hooks.event)
		s.unsub = func() { unlog(); unhook() }
	} else {
		s.unsub = rt.Events().Subscribe("*", s.log.add)
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/ready", s.ready)
	m.HandleFunc("GET /v1/agents", s.agents)
	m.HandleFunc("POST /v1/agents/{agent}/instances/{key}/messages", s.message)
	m.HandleFunc("GET /v1/agents/{agent}/instances", s.instances)
	m.HandleFunc("GET /v1/agents/{agent}/instances/{key}/history", s.history)
	m.HandleFunc("GET /v1/agents/{agent}/instances/{key}/usage", s.usage)
	m.HandleFunc("GET /v1/agents/{agent}/instances/{key}/events", s.instanceEvents)
	m.HandleFunc("GET /v1/events", s.allEvents)
	m.HandleFunc("GET /v1/pending", s.pending)
	m.HandleFunc("GET /v1/pending/{id}", s.pendingItem)
	m.HandleFunc("POST /v1/pending/{id}/{action}", s.act)
	m.HandleFunc("GET /v1/tasks", s.tasks)
	if s.gui != nil {
		m.HandleFunc("GET /v1/gui/{client}/answers", s.guiAnswers)
	}
	m.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such API call: %s %s (the API's calls are listed in the package documentation)", r.Method, r.URL.Path))
	})
	s.mux = m
	return s, nil
}

// Close ends the event streams, stops listening to the runtime, and stops
// sending webhook notifications (what is unsent stays in the outbox).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.unsub()
	s.log.close()
	if s.hooks != nil {
		s.hooks.close()
	}
}

// ServeHTTP answers one API call, or serves the web console (any path
// outside /v1/).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		s.console(w, r)
		return
	}
	if r.URL.Path != "/v1/health" && r.URL.Path != "/v1/ready" && !s.authorized(w, r) {
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	}
	s.mux.ServeHTTP(w, r)
}

// Guard returns h behind the server's token ([WithToken]): a request
// without it gets the answer an API call without it gets. An app mounts
// its own handlers beside the API with it.
func (s *Server) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(w, r) {
			h.ServeHTTP(w, r)
		}
	})
}

// authorized reports whether r carries the token, and answers it 401
// when it does not.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.token == "" {
		return true
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(auth), []byte(s.token)) == 1 {
		return true
	}
	msg := "this call needs the server's token: Authorization: Bearer TOKEN"
	if s.tokenHint != "" {
		msg += " (" + s.tokenHint + ")"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ganglion"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", msg)
	return false
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers whether the runtime serves: open, with its store
// answering.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.rt.Pending(ctx, ledger.Filter{Open: true}); err != nil {
		if _, _, after := classify(err); after > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(after))
		}
		writeError(w, http.StatusServiceUnavailable, "not_ready", "the runtime does not serve: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	agents, teams := s.rt.Describe()
	if teams == nil {
		teams = []config.Team{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents, "teams": teams})
}

// messageRequest is the body of POST .../messages.
type messageRequest struct {
	Text string `json:"text"`
	// Metadata is the input's metadata: channel, replyTo, requester, and
	// keys of the client's own, never one the runtime reserves
	// (pipeline.CheckMetadata).
	Metadata map[string]any `json:"metadata,omitempty"`
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var req messageRequest
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", `the message's "text" is empty: say what the agent is to do`)
		return
	}
	agent, key := r.PathValue("agent"), r.PathValue("key")
	in := runtime.UserMessage(req.Text)
	in.Metadata = req.Metadata
	if !wantsStream(r) {
		res, err := s.rt.Send(r.Context(), agent, key, in)
		if err != nil {
			s.fail(w, r, err, res)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": res})
		return
	}
	// Streamed: the instance's events while the turn runs, then its
	// result. Turns of an instance run one at a time, so the instance's
	// events in between are this turn's (and those of the turns a pause
	// or a delegation starts there).
	from := s.log.last()
	type outcome struct {
		res *pipeline.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.rt.Send(r.Context(), agent, key, in)
		done <- outcome{res, err}
	}()
	sse := startSSE(w)
	f := filter{agent: agent, instance: key}
	seq := from
	// What comes after the turn's end is held back until its result is
	// written: a fast delegation chain can run its merged report, and
	// answer, before this handler sees the turn return.
	var h hold
	for {
		seq = s.drain(sse, f, seq, &h)
		more, wake, _, _ := s.log.after(seq, 1)
		if len(more) > 0 {
			continue
		}
		select {
		case o := <-done:
			seq = s.drain(sse, f, seq, &h) // what the turn published last
			if o.err != nil {
				sse.event("", "error", mustJSON(errorOf(o.err, o.res)))
				sse.flush()
				return
			}
			sse.event("", "result", mustJSON(map[string]any{"result": o.res}))
			sse.flush()
			if o.res.FinishReason != pipeline.FinishDelegated || o.res.TaskID == "" {
				return
			}
			for _, e := range h.after {
				if d, ok := e.ev.Data.(events.TaskAnsweredData); ok && d.TaskID == o.res.TaskID {
					sse.event(s.log.id(e.seq), "answer", e.data())
					sse.flush()
					return
				}
				sse.event(s.log.id(e.seq), e.ev.Topic, e.data())
			}
			sse.flush()
			s.followTask(r.Context(), sse, f, seq, o.res.TaskID)
			return
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

// followTask goes on with a streamed message whose turn delegated: the
// delegation events, and the instance's turns (the merged reports), after
// seq, until task id's answer, sent as an "answer" event (its data is the
// task.answered event).
func (s *Server) followTask(ctx context.Context, sse *sseWriter, f filter, seq uint64, id string) {
	s.tail(ctx, sse, seq, nil, func(e *logged) bool {
		if d, ok := e.ev.Data.(events.TaskAnsweredData); ok && d.TaskID == id {
			sse.event(s.log.id(e.seq), "answer", e.data())
			return false
		}
		if f.match(&e.ev) || strings.HasPrefix(e.ev.Topic, "task.") {
			sse.event(s.log.id(e.seq), e.ev.Topic, e.data())
		}
		return true
	})
}

// tail hands the logged events after seq, in order, to each, which writes
// what it wants to sse, until each returns false, ctx ends or the log
// closes. gap, if not nil, is called when the ring has moved past events
// the stream was still to read. While nothing happens it sends a
// keep-alive comment every heartbeat.
func (s *Server) tail(ctx context.Context, sse *sseWriter, seq uint64, gap func(), each func(e *logged) bool) {
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		batch, wake, lost, done := s.log.after(seq, 256)
		if lost && gap != nil {
			gap()
		}
		for _, e := range batch {
			seq = e.seq
			if !each(e) {
				sse.flush()
				return
			}
		}
		sse.flush()
		if len(batch) > 0 {
			continue
		}
		if done {
			return
		}
		select {
		case <-wake:
		case <-beat.C:
			sse.comment("keep-alive")
		case <-ctx.Done():
			return
		}
	}
}

// hold is what a streamed message holds back: the events after its
// turn's end, until its result is written.
type hold struct {
	ended bool      // the turn's turn.finished went out
	after []*logged // what came after it
}

// drain writes the logged events after seq that f selects (those after
// the turn's end into h instead), and returns the last sequence number
// read.
func (s *Server) drain(sse *sseWriter, f filter, seq uint64, h *hold) uint64 {
	for {
		batch, _, _, _ := s.log.after(seq, 256)
		if len(batch) == 0 {
			return seq
		}
		for _, e := range batch {
			seq = e.seq
			switch {
			case h.ended:
				if f.match(&e.ev) || strings.HasPrefix(e.ev.Topic, "task.") {
					h.after = append(h.after, e)
				}
			case f.match(&e.ev):
				sse.event(s.log.id(e.seq), e.ev.Topic, e.data())
				h.ended = e.ev.Topic == events.TurnFinished
			}
		}
		sse.flush()
	}
}

func (s *Server) instanceEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, filter{agent: r.PathValue("agent"), instance: r.PathValue("key"), topics: topics(r)})
}

func (s *Server) allEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.stream(w, r, filter{agent: q.Get("agent"), instance: q.Get("instance"), topics: topics(r)})
}

func topics(r *http.Request) []string {
	var out []string
	for _, t := range r.URL.Query()["topic"] {
		for p := range strings.SplitSeq(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// stream serves an event stream: from the event after Last-Event-ID when
// the client sends one (a reconnect), else from now, until the client
// goes or the server closes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, f filter) {
	seq := s.log.last()
	if id := lastEventID(r); id != "" {
		n, ok := s.log.parseID(id)
		if !ok {
			writeError(w, http.StatusBadRequest, "unknown_event_id",
				fmt.Sprintf("Last-Event-ID %q was not given by this server process (it restarted since?): reconnect without it, and read what you missed from the history and the pending items", id))
			return
		}
		seq = n
	}
	sse := startSSE(w)
	// A client the ring moved past is told so, rather than left to think
	// it missed nothing. (One that starts now cannot be.)
	gap := func() {
		sse.event("", "gap", mustJSON(map[string]string{"message": "events were lost: the client fell behind the server's backlog; read the history and the pending items again"}))
	}
	s.tail(r.Context(), sse, seq, gap, func(e *logged) bool {
		if f.match(&e.ev) {
			sse.event(s.log.id(e.seq), e.ev.Topic, e.data())
		}
		return true
	})
}

func lastEventID(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return r.URL.Query().Get("last_event_id")
}

func (s *Server) instances(w http.ResponseWriter, r *http.Request) {
	keys, err := s.rt.Instances(r.Context(), r.PathValue("agent"))
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	if keys == nil {
		keys = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": keys})
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	agent, key := r.PathValue("agent"), r.PathValue("key")
	read := s.rt.History
	if v := r.URL.Query().Get("effective"); v == "true" || v == "1" {
		read = s.rt.EffectiveHistory
	}
	msgs, err := read(r.Context(), agent, key)
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	if msgs == nil {
		msgs = []pipeline.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs})
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	u, err := s.rt.Usage(r.Context(), r.PathValue("agent"), r.PathValue("key"))
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"usage": u})
}

func (s *Server) pending(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ledger.Filter{Agent: q.Get("agent"), Instance: q.Get("instance"), Open: q.Get("all") != "true"}
	items, err := s.rt.Pending(r.Context(), f)
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	if items == nil {
		items = []ledger.Item{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) pendingItem(w http.ResponseWriter, r *http.Request) {
	it, err := s.rt.PendingItem(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"item": it})
}

// actRequest is the body of POST /v1/pending/{id}/{action}: answer takes
// answer, provide value (a secret: never echoed), reject reason, edit
// arguments; skip takes nothing.
type actRequest struct {
	Answer    string          `json:"answer"`
	Value     string          `json:"value"`
	Reason    string          `json:"reason"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	id, action := r.PathValue("id"), r.PathValue("action")
	var req actRequest
	if action != "skip" || r.ContentLength > 0 {
		if !readJSON(w, r, &req) {
			return
		}
	}
	var (
		res *pipeline.TurnResult
		err error
		ctx = r.Context()
	)
	switch action {
	case "answer":
		res, err = s.rt.Answer(ctx, id, req.Answer)
	case "skip":
		res, err = s.rt.Skip(ctx, id)
	case "provide":
		res, err = s.rt.Provide(ctx, id, req.Value)
	case "reject":
		res, err = s.rt.Reject(ctx, id, req.Reason)
	case "edit":
		if len(req.Arguments) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", `an edit needs "arguments": the call's arguments as a JSON object`)
			return
		}
		res, err = s.rt.Edit(ctx, id, req.Arguments)
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no action %q: an item takes answer, skip, provide, reject or edit", action))
		return
	}
	if err != nil {
		s.fail(w, r, err, res)
		return
	}
	// The item as it is now, and the turn its answer resumed, if any (an
	// item whose turn waits for more answers resumes nothing yet). The
	// action was applied: a read of the item that fails (a stopping
	// runtime refuses it) leaves the item out, not the answer's success,
	// which a client would otherwise try again and find already resolved.
	body := map[string]any{"result": res}
	if it, err := s.rt.PendingItem(ctx, id); err == nil {
		body["item"] = it
	} else {
		s.logger.Warn("the item could not be read after its action; answering without it", "item", id, "err", err)
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) tasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ts, err := s.rt.Tasks(r.Context(), q.Get("agent"), q.Get("instance"))
	if err != nil {
		s.fail(w, r, err, nil)
		return
	}
	if ts == nil {
		ts = []runtime.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": ts})
}

// apiError is the body of every failed call.
type apiError struct {
	Code    string `json:"code"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Result is the turn's result when a turn ran and failed, or paused.
	Result *pipeline.TurnResult `json:"result,omitempty"`
	// RetryAfter, in seconds, says that the failure is transient and when
	// to try again, as the answer's Retry-After header does (an event
	// stream's error event has no header of its own).
	RetryAfter int `json:"retry_after,omitempty"`
}

// errorOf is the body of a call that failed with err.
func errorOf(err error, res *pipeline.TurnResult) apiError {
	code, status, after := classify(err)
	msg := err.Error()
	switch code {
	case "unavailable":
		msg = "the store is unavailable for a moment (a NATS server is down or electing a leader); try again: " + msg
	case "outcome_unknown":
		msg = "the turn or action may have been done, or not (the store did not confirm a write, or the process running it stopped or lost the instance before it answered); " +
			"read the history or the pending item before you try it again: " + msg
	}
	return apiError{Code: code, Status: status, Message: msg, Result: res, RetryAfter: after}
}

// fail answers a call the runtime refused or failed: a transient failure
// with a Retry-After header.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, res *pipeline.TurnResult) {
	e := errorOf(err, res)
	if e.Status >= 500 {
		s.logger.Error("API call failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSONStatus(w, e.Status, map[string]any{"error": e})
}

// retryAfter is how many seconds a client waits before it tries again a
// call that failed because the store was unavailable for a moment, or
// the process was closing. A NATS cluster that lost a server elects new
// leaders for its streams within about 5 s: a client that tries every
// 2 s is served within 2 s of their end, and asks two or three times
// meanwhile.
const retryAfter = 2

// classify maps an error of the runtime to an API error code, an HTTP
// status, and, for a transient failure, the seconds to wait before trying
// again (0: do not try again as it is). The order matters: an error of
// the store that was not answered in time may also match the deadline of
// its own bound, which is no timeout of the call.
func classify(err error) (code string, status, after int) {
	switch {
	case errors.Is(err, store.ErrOutcomeUnknown), errors.Is(err, store.ErrFenced):
		// Transient too, but trying again is safe only if nothing was
		// saved: no Retry-After, which invites the same call again, and
		// the message says to look first. A fenced commit is a turn whose
		// process lost the instance to another while it ran (it stalled
		// past its lease): its earlier steps may be saved.
		return "outcome_unknown", http.StatusServiceUnavailable, 0
	case errors.Is(err, store.ErrUnavailable):
		return "unavailable", http.StatusServiceUnavailable, retryAfter
	case errors.Is(err, runtime.ErrClosed):
		// This process is stopping; in a cluster, another takes its
		// instances over once it has.
		return "closed", http.StatusServiceUnavailable, retryAfter
	case errors.Is(err, runtime.ErrUnknownAgent):
		return "unknown_agent", http.StatusNotFound, 0
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, runtime.ErrNoTask):
		return "not_found", http.StatusNotFound, 0
	case errors.Is(err, runtime.ErrAgentUnavailable):
		return "agent_unavailable", http.StatusServiceUnavailable, 0
	case errors.Is(err, runtime.ErrPaused):
		return "paused", http.StatusConflict, 0
	case errors.Is(err, runtime.ErrTaskFailed):
		// The action was taken (a required dependency rejected, say),
		// and the task it was for failed, as it should.
		return "task_failed", http.StatusConflict, 0
	case errors.Is(err, ledger.ErrResolved):
		return "already_resolved", http.StatusConflict, 0
	case errors.Is(err, extensions.ErrInvalidAction), errors.Is(err, ledger.ErrWrongInstance):
		return "invalid_action", http.StatusBadRequest, 0
	case errors.Is(err, store.ErrInvalidName):
		return "invalid_name", http.StatusBadRequest, 0
	case errors.Is(err, pipeline.ErrReservedMetadata):
		return "invalid_request", http.StatusBadRequest, 0
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", http.StatusGatewayTimeout, 0
	case errors.Is(err, context.Canceled):
		return "canceled", 499, 0 // the client went away
	}
	return "internal", http.StatusInternalServerError, 0
}

// readJSON decodes the request's body into v, which must be the body's
// one JSON value: unknown fields and anything but white space after the
// value are refused, with a 400 that says so (413 for a body over the
// bound). It answers the request and returns false when it refuses.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var after int64 = -1
	if err == nil {
		after, err = trailing(dec, r.Body)
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request's body is over %d bytes", tooBig.Limit))
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", "the request's body is not the JSON this call takes: "+err.Error())
	case after >= 0:
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("the request's body has more after its JSON value, at offset %d: send one JSON object", after))
	default:
		return true
	}
	return false
}

// trailing returns the offset of the first byte after dec's value that is
// not JSON white space, reading the rest of body, or -1 if there is none.
func trailing(dec *json.Decoder, body io.Reader) (int64, error) {
	rest := bufio.NewReader(io.MultiReader(dec.Buffered(), body))
	for off := dec.InputOffset(); ; off++ {
		switch b, err := rest.ReadByte(); {
		case err == io.EOF:
			return -1, nil
		case err != nil:
			return 0, err
		case b != ' ' && b != '\t' && b != '\n' && b != '\r':
			return off, nil
		}
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSONStatus(w, status, map[string]any{"error": apiError{Code: code, Status: status, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) { writeJSONStatus(w, status, v) }

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Appendf(nil, `{"message":%q}`, err.Error())
	}
	return b
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream") || r.URL.Query().Get("stream") == "true"
}

package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// providerName names the provider in errors.
const providerName = "openai"

// DefaultBaseURL is OpenAI's endpoint, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultAPIKeyEnv is the variable that conventionally holds an OpenAI
// key. [New] does not assume it (an empty APIKeyEnv sends no key, for local
// servers); the runtime uses it for OpenAI's own API when the config names
// none.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// The values of Config.MaxTokensField.
const (
	MaxCompletionTokens = "max_completion_tokens"
	MaxTokens           = "max_tokens"
)

// maxErrorBody bounds the bytes of an error response read for its message.
const maxErrorBody = 1 << 20

// maxMessage bounds the length of a server's message in an error.
const maxMessage = 2048

// Config configures a [Provider].
type Config struct {
	// Model is the model's name, used when Request.Model is empty.
	Model string
	// BaseURL is the API's root, the URL that chat/completions is relative
	// to ("http://localhost:11434/v1" for Ollama); empty: OpenAI's.
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key; when
	// it is empty in the environment, Request.Secret of that name is asked.
	// Empty: the server needs no key, and none is sent.
	APIKeyEnv string
	// MaxOutputTokens bounds an answer when Request.MaxOutputTokens is 0;
	// 0: the server's default.
	MaxOutputTokens int
	// MaxTokensField is the request field that carries the bound:
	// [MaxCompletionTokens] or [MaxTokens]. Empty: max_completion_tokens
	// for OpenAI (api.openai.com, the default), max_tokens for any other
	// server (see the package documentation).
	MaxTokensField string
	// HTTPClient sends the requests; nil: a client of its own, with
	// http.DefaultTransport's settings and a 10-minute bound on the wait for
	// the response's headers (none on the streaming of its body).
	HTTPClient *http.Client
	// RequestTimeout, if not 0, bounds a whole call, the streaming of the
	// answer included. A call that runs out of it fails as a transient
	// error.
	RequestTimeout time.Duration
	// Headers are added to every request (OpenRouter's HTTP-Referer and
	// X-Title, a proxy's headers). Authorization is not allowed here.
	Headers map[string]string
}

// Provider streams chat completions; create one with [New].
type Provider struct {
	cfg        Config
	svc        oa.ChatCompletionService
	completion bool // send the bound as max_completion_tokens
}

var _ model.Provider = (*Provider)(nil)

// New returns a provider for cfg. It fails when BaseURL is not an absolute
// http or https URL or MaxTokensField is unknown.
func New(cfg Config) (*Provider, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an absolute http or https URL", base)
	}
	if u.User != nil {
		return nil, fmt.Errorf("openai: base URL must not hold credentials: give the key through api_key_env")
	}
	p := &Provider{cfg: cfg}
	switch cfg.MaxTokensField {
	case "":
		p.completion = strings.EqualFold(u.Hostname(), "api.openai.com")
	case MaxCompletionTokens:
		p.completion = true
	case MaxTokens:
	default:
		return nil, fmt.Errorf("openai: unknown max tokens field %q (want %q or %q)", cfg.MaxTokensField, MaxCompletionTokens, MaxTokens)
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("openai: max output tokens %d is negative", cfg.MaxOutputTokens)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = model.HTTPClient()
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0),
	}
	if cfg.RequestTimeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.RequestTimeout))
	}
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, fmt.Errorf("openai: the Authorization header comes from api_key_env, not from headers")
		}
		opts = append(opts, option.WithHeader(k, v))
	}
	p.svc = oa.NewChatCompletionService(opts...)
	return p, nil
}

// Stream sends req and returns the stream of its answer. A failure before
// the answer starts is returned as a [*model.Error], or as ctx's error when
// ctx is done.
func (p *Provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key, err := p.apiKey(req)
	if err != nil {
		return nil, err
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	var resp *http.Response
	opts := []option.RequestOption{option.WithResponseBodyInto(&resp)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	// With the response taken raw, the SDK's stream has no decoder: the
	// provider reads the body itself (see the package documentation).
	if err := p.svc.NewStreaming(ctx, params, opts...).Err(); err != nil {
		return nil, openError(ctx, err, resp, key)
	}
	if resp == nil || resp.Body == nil {
		return nil, &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "the server sent no response"}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// The server did not stream: an error in a 200, or a server that
		// ignores "stream".
		return nil, notStreamed(resp, key)
	}
	s := &stream{
		ctx:  ctx,
		body: resp.Body,
		dec:  ssestream.NewDecoder(resp),
		key:  key,
	}
	if req.TurnID != "" {
		s.idPrefix = req.TurnID + "-call-" + strconv.Itoa(req.Step) + "-"
	}
	return s, nil
}

// apiKey resolves the request's key: "" when none is configured.
func (p *Provider) apiKey(req *model.Request) (string, error) {
	env := p.cfg.APIKeyEnv
	if env == "" {
		return "", nil
	}
	if k := os.Getenv(env); k != "" {
		return k, nil
	}
	if req.Secret != nil {
		if k, ok := req.Secret(env); ok && k != "" {
			return k, nil
		}
	}
	return "", &model.Error{Kind: model.ErrorAuth, Provider: providerName, Message: "no API key: set " + env + " or provide it"}
}

// emptySchema is the parameters of a tool without a schema.
var emptySchema = shared.FunctionParameters{"type": "object", "properties": json.RawMessage("{}")}

// params maps req to the SDK's request.
func (p *Provider) params(req *model.Request) (oa.ChatCompletionNewParams, error) {
	var params oa.ChatCompletionNewParams
	params.Model = req.Model
	if params.Model == "" {
		params.Model = p.cfg.Model
	}
	if params.Model == "" {
		return params, invalid("no model: the request and the provider's config name none")
	}
	n := 0
	if req.Messages != nil {
		n = req.Messages.Len()
	}
	msgs := make([]oa.ChatCompletionMessageParamUnion, 0, n+1)
	if req.System != "" {
		msgs = append(msgs, oa.SystemMessage(req.System))
	}
	for i := range n {
		m := req.Messages.At(i)
		switch m.Role {
		case pipeline.RoleUser:
			msgs = append(msgs, oa.UserMessage(m.Content))
		case pipeline.RoleSystem:
			msgs = append(msgs, oa.SystemMessage(m.Content))
		case pipeline.RoleTool:
			msgs = append(msgs, oa.ToolMessage(m.Content, m.ToolCallID))
		case pipeline.RoleAssistant:
			a := &oa.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			if len(m.ToolCalls) > 0 {
				a.ToolCalls = make([]oa.ChatCompletionMessageToolCallUnionParam, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					args := string(c.Arguments)
					if args == "" {
						args = "{}"
					}
					a.ToolCalls[j].OfFunction = &oa.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					}
				}
			}
			msgs = append(msgs, oa.ChatCompletionMessageParamUnion{OfAssistant: a})
		default:
			return params, invalid(fmt.Sprintf("message %d: unknown role %q", i, m.Role))
		}
	}
	params.Messages = msgs
	if len(req.Tools) > 0 {
		params.Tools = make([]oa.ChatCompletionToolUnionParam, len(req.Tools))
		for i, t := range req.Tools {
			schema, err := toolSchema(t.Parameters)
			if err != nil {
				return params, invalid(fmt.Sprintf("tool %q: %v", t.Name, err))
			}
			fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
			if t.Description != "" {
				fn.Description = param.NewOpt(t.Description)
			}
			params.Tools[i] = oa.ChatCompletionFunctionTool(fn)
		}
	}
	limit := req.MaxOutputTokens
	if limit <= 0 {
		limit = p.cfg.MaxOutputTokens
	}
	if limit > 0 {
		if p.completion {
			params.MaxCompletionTokens = param.NewOpt(int64(limit))
		} else {
			params.MaxTokens = param.NewOpt(int64(limit))
		}
	}
	params.StreamOptions.IncludeUsage = param.NewOpt(true)
	return params, nil
}

// toolSchema returns a tool's parameters as the SDK wants them (a map)
// without re-encoding what is below the top level: each value stays the
// schema's own bytes.
func toolSchema(raw json.RawMessage) (shared.FunctionParameters, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return emptySchema, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, errors.New("parameters schema is not a JSON object")
	}
	out := make(shared.FunctionParameters, len(top))
	for k, v := range top {
		out[k] = v
	}
	return out, nil
}

func invalid(msg string) *model.Error {
	return &model.Error{Kind: model.ErrorInvalidRequest, Provider: providerName, Message: msg}
}

// openError classifies a failure to open the stream.
func openError(ctx context.Context, err error, resp *http.Response, key string) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if resp != nil && resp.StatusCode >= 400 {
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
		}
		w := errorFromBody(body)
		var ae *oa.Error
		if errors.As(err, &ae) {
			// The SDK read OpenAI's shape already; prefer its fields.
			if ae.Message != "" {
				w.message = ae.Message
			}
			if ae.Code != "" {
				w.code = ae.Code
			}
		}
		return httpError(resp.StatusCode, resp.Header, w, key)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	var ae *oa.Error
	if errors.As(err, &ae) {
		return httpError(ae.StatusCode, nil, wireError{message: ae.Message, code: ae.Code, typ: ae.Type}, key)
	}
	if isNetworkError(err) {
		return networkError("connecting to the server", err, key)
	}
	return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: redact(err.Error(), key), Err: cause(err, key)}
}

// cause is err, to wrap in a [*model.Error], unless its text holds the key.
func cause(err error, key string) error {
	if key != "" && strings.Contains(err.Error(), key) {
		return nil
	}
	return err
}

// httpError is the error of an HTTP error status.
func httpError(status int, h http.Header, w wireError, key string) *model.Error {
	kind := model.StatusKind(status)
	switch {
	case kind == model.ErrorInvalidRequest && model.IsContextWindowMessage(w.code+" "+w.message):
		kind = model.ErrorContextWindow
	case status == http.StatusTooManyRequests && (w.code == "insufficient_quota" || w.code == "billing_hard_limit_reached"):
		// A 429 that waiting does not cure: the account is out of credit.
		kind = model.ErrorAuth
	}
	msg := w.message
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &model.Error{
		Kind:       kind,
		Provider:   providerName,
		Status:     status,
		RetryAfter: model.RetryAfter(h, time.Now()),
		Message:    clean(msg, key),
	}
}

// notStreamed is the error of a 2xx answer in JSON instead of events.
func notStreamed(resp *http.Response, key string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	w := errorFromBody(body)
	if w.present {
		return &model.Error{Kind: w.kind(), Provider: providerName, Status: int(w.status), Message: clean(w.text(), key)}
	}
	return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "the server answered in JSON, not with an event stream: does it support streaming?"}
}

// errorFromBody reads the error of an error response in the shapes
// servers use; a body that is not JSON gives nothing.
func errorFromBody(body []byte) wireError {
	var w wireError
	var p parser
	p.b = body
	p.errorBody(&w)
	if p.err != nil {
		return wireError{}
	}
	return w
}

// isNetworkError reports whether err is a failure of the connection.
func isNetworkError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded)
}

// networkError is the transient error of a failed connection. Its message
// is the underlying error's, without the URL that net/http puts in front.
func networkError(what string, err error, key string) *model.Error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := inner.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "request timed out"
	}
	return &model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: what + ": " + redact(msg, key), Err: cause(inner, key)}
}

// clean bounds a server's message and removes the key from it.
func clean(msg, key string) string {
	msg = strings.TrimSpace(redact(msg, key))
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// redact replaces the key in s, should a server have echoed it.
func redact(s, key string) string {
	if len(key) < 4 || !strings.Contains(s, key) {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// errClosed is what Recv returns after Close.
var errClosed = errors.New("openai: stream closed")

// stream decodes the server-sent events of one answer into chunks.
type stream struct {
	ctx      context.Context
	body     io.Closer
	dec      ssestream.Decoder
	key      string
	idPrefix string // of generated call IDs; "" for random ones

	closed    atomic.Bool
	closeOnce sync.Once

	queue []model.Chunk // decoded, not yet received
	head  int           // next chunk of queue
	done  bool          // no more events: queue is the rest

	p        parser
	ev       wireEvent
	calls    []toolCall // in the order they were seen
	finished bool       // the choice has a finish_reason
	usage    pipeline.Usage
	hasUsage bool
}

// toolCall is the state of one call being streamed.
type toolCall struct {
	index   int64
	wireID  string // the ID the server gave, if any
	id      string // the ID chunks carry
	name    string
	pending string // arguments received before the name
	started bool
	ended   bool
}

// Recv returns the next chunk, io.EOF after the last one, ctx's error once
// the call's context is done, and an error after Close.
func (s *stream) Recv() (model.Chunk, error) {
	if s.closed.Load() {
		return model.Chunk{}, errClosed
	}
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	for s.head >= len(s.queue) {
		if s.done {
			return model.Chunk{}, io.EOF
		}
		s.queue, s.head = s.queue[:0], 0
		if err := s.advance(); err != nil {
			return model.Chunk{}, err
		}
	}
	c := s.queue[s.head]
	s.queue[s.head] = model.Chunk{}
	s.head++
	return c, nil
}

// Close releases the response; it is idempotent.
func (s *stream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

func (s *stream) release() {
	s.closeOnce.Do(func() { s.body.Close() })
}

// advance reads one event and queues its chunks, or ends the stream. It
// returns an error only when the context is done.
func (s *stream) advance() error {
	if !s.dec.Next() {
		err := s.dec.Err()
		if cerr := s.ctx.Err(); cerr != nil {
			s.done = true
			s.release()
			return cerr
		}
		switch {
		case s.finished:
			// The answer is whole; a connection cut after it loses at
			// most the usage.
			s.end()
		case err != nil:
			s.fail(networkError("stream interrupted", err, s.key))
		default:
			s.fail(&model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: "the stream ended before the answer was complete"})
		}
		return nil
	}
	e := s.dec.Event()
	data := bytes.TrimSpace(e.Data)
	if len(data) == 0 {
		return nil
	}
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		s.end()
		return nil
	}
	ev := &s.ev
	ev.reset()
	s.p.reset(data)
	if e.Type == "error" {
		// An SSE error event: its data is {"error":{...}}, the error
		// object itself, or text.
		s.p.errorBody(&ev.err)
		if s.p.err != nil || !ev.err.present {
			ev.err = wireError{present: true, message: string(data)}
		}
		s.fail(&model.Error{Kind: ev.err.kind(), Provider: providerName, Status: int(ev.err.status), Message: clean(ev.err.text(), s.key)})
		return nil
	}
	s.p.event(ev)
	if s.p.err != nil {
		s.fail(&model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "malformed stream event: " + s.p.err.Error()})
		return nil
	}
	if ev.err.present {
		s.fail(&model.Error{Kind: ev.err.kind(), Provider: providerName, Status: int(ev.err.status), Message: clean(ev.err.text(), s.key)})
		return nil
	}
	if ev.hasUsage {
		s.usage = ev.usage.usage()
		s.hasUsage = true
	}
	if ev.reasoning != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindReasoning, Text: ev.reasoning})
	} else if ev.reasoningAlt != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindReasoning, Text: ev.reasoningAlt})
	}
	if ev.content != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindText, Text: ev.content})
	}
	if ev.refusal != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindText, Text: ev.refusal})
	}
	for i := range ev.calls {
		s.callDelta(&ev.calls[i])
	}
	if ev.finish != "" {
		s.finished = true
		s.endCalls()
		if ev.finish == "error" {
			s.fail(&model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: "the server ended the answer with an error"})
		}
	}
	return nil
}

// callDelta queues the chunks of one tool call delta.
func (s *stream) callDelta(d *callDelta) {
	c := s.callFor(d)
	if c.ended {
		return
	}
	if c.wireID == "" && d.id != "" {
		c.wireID = d.id
	}
	if c.name == "" && d.name != "" {
		c.name = d.name
	}
	if c.started {
		if d.args != "" {
			s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: d.args})
		}
		return
	}
	if c.name == "" {
		c.pending += d.args
		return
	}
	s.start(c)
	if d.args != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: d.args})
	}
}

// callFor finds the call a delta continues, or opens a new one.
func (s *stream) callFor(d *callDelta) *toolCall {
	if d.hasIndex {
		for i := range s.calls {
			if s.calls[i].index == d.index {
				return &s.calls[i]
			}
		}
		return s.newCall(d.index)
	}
	// A server that sends no index (Gemini's compatibility layer sends
	// whole calls): a new ID is a new call, no ID continues the last one.
	if d.id != "" {
		for i := range s.calls {
			if s.calls[i].wireID == d.id {
				return &s.calls[i]
			}
		}
	} else if len(s.calls) > 0 {
		return &s.calls[len(s.calls)-1]
	}
	next := int64(0)
	for _, c := range s.calls {
		next = max(next, c.index+1)
	}
	return s.newCall(next)
}

func (s *stream) newCall(index int64) *toolCall {
	s.calls = append(s.calls, toolCall{index: index})
	return &s.calls[len(s.calls)-1]
}

// start opens c, giving it an ID if the server gave none.
func (s *stream) start(c *toolCall) {
	c.started = true
	c.id = c.wireID
	if c.id == "" {
		n := 1
		for i := range s.calls {
			if &s.calls[i] == c {
				n = i + 1
			}
		}
		c.id = s.generateID(n)
	}
	s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallStart, ToolCallID: c.id, ToolName: c.name})
	if c.pending != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: c.pending})
		c.pending = ""
	}
}

func (s *stream) generateID(n int) string {
	if s.idPrefix != "" {
		return s.idPrefix + strconv.Itoa(n)
	}
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// endCalls closes the open calls, opening first any that never got a name.
func (s *stream) endCalls() {
	for i := range s.calls {
		c := &s.calls[i]
		if c.ended {
			continue
		}
		if !c.started {
			s.start(c)
		}
		c.ended = true
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: c.id})
	}
}

// end ends the stream normally.
func (s *stream) end() {
	s.endCalls()
	if s.hasUsage {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindUsage, Usage: s.usage})
	}
	s.done = true
	s.release()
}

// fail ends the stream with an error chunk, after the usage if any.
func (s *stream) fail(err *model.Error) {
	if s.hasUsage {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindUsage, Usage: s.usage})
	}
	s.queue = append(s.queue, model.Chunk{Kind: model.KindError, Err: err})
	s.done = true
	s.release()
}

// wireEvent is what the provider reads of one chunk event.
type wireEvent struct {
	content      string
	reasoning    string // reasoning_content
	reasoningAlt string // reasoning
	refusal      string
	finish       string
	calls        []callDelta
	hasUsage     bool
	usage        wireUsage
	err          wireError
}

func (ev *wireEvent) reset() {
	calls := ev.calls[:0]
	*ev = wireEvent{calls: calls}
}

// callDelta is one element of delta.tool_calls.
type callDelta struct {
	index    int64
	hasIndex bool
	id       string
	name     string
	args     string
}

type wireUsage struct {
	prompt, completion int64
	cached, cacheHit   int64
}

func (u wireUsage) usage() pipeline.Usage {
	cached := u.cached
	if cached == 0 {
		cached = u.cacheHit
	}
	prompt := max(u.prompt, 0)
	cached = min(max(cached, 0), prompt)
	return pipeline.Usage{InputTokens: prompt - cached, OutputTokens: max(u.completion, 0), CacheReadTokens: cached}
}

// wireError is a server's error object.
type wireError struct {
	present bool
	message string
	code    string // a string, or a number's text
	typ     string
	status  int64 // an HTTP status found in code or status
}

func (w wireError) text() string {
	switch {
	case w.message != "":
		return w.message
	case w.code != "":
		return w.code
	case w.typ != "":
		return w.typ
	}
	return "the server reported an error"
}

// kind classifies an error object by its content.
func (w wireError) kind() model.ErrorKind {
	if model.IsContextWindowMessage(w.code + " " + w.message) {
		return model.ErrorContextWindow
	}
	if w.status >= 400 && w.status < 600 {
		return model.StatusKind(int(w.status))
	}
	words := strings.ToLower(w.code + " " + w.typ)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(words, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("rate_limit", "rate limit", "ratelimit", "too_many_requests"):
		return model.ErrorRateLimit
	case has("server_error", "internal", "overloaded", "unavailable", "timeout"):
		return model.ErrorTransient
	case has("auth", "invalid_api_key", "permission"):
		return model.ErrorAuth
	case has("invalid_request", "badrequest", "bad_request", "not_found", "notfound"):
		return model.ErrorInvalidRequest
	}
	return model.ErrorOther
}

// parser is a small JSON scanner that reads the fields the provider needs
// from an event and skips the rest without decoding it. It never panics on
// malformed input: it sets err, and every further read fails fast.
type parser struct {
	b   []byte
	i   int
	err error
	buf []byte // scratch for unescaped strings
}

func (p *parser) reset(b []byte) {
	p.b, p.i, p.err = b, 0, nil
}

func (p *parser) fail(msg string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s at offset %d", msg, p.i)
	}
	p.i = len(p.b)
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// null consumes a null.
func (p *parser) null() bool {
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// enter consumes the open of an object ('{') or array ('['). It reports
// false for a null, and for any other value, which it skips.
func (p *parser) enter(open byte) bool {
	switch p.peek() {
	case open:
		p.i++
		return true
	case 'n':
		if p.null() {
			return false
		}
	}
	p.skip()
	return false
}

// more advances to the next element of an object or array that closes
// with close; n counts the elements seen.
func (p *parser) more(close byte, n *int) bool {
	c := p.peek()
	if c == close {
		p.i++
		return false
	}
	if c == 0 {
		p.fail("unexpected end")
		return false
	}
	if *n > 0 {
		if c != ',' {
			p.fail("expected ',' or '" + string(close) + "'")
			return false
		}
		p.i++
		p.ws()
	}
	if p.i >= len(p.b) {
		p.fail("unexpected end")
		return false
	}
	*n++
	return true
}

// key reads an object's key and its colon. The result is valid until the
// next string is read.
func (p *parser) key() []byte {
	raw, esc := p.rawString()
	if esc {
		raw = p.unescape(raw)
	}
	if p.peek() != ':' {
		p.fail("expected ':'")
		return nil
	}
	p.i++
	return raw
}

// rawString reads a string and returns its bytes between the quotes, and
// whether they hold escapes.
func (p *parser) rawString() ([]byte, bool) {
	if p.peek() != '"' {
		p.fail("expected a string")
		return nil, false
	}
	start := p.i + 1
	rest := p.b[start:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		p.fail("unterminated string")
		return nil, false
	}
	bs := bytes.IndexByte(rest[:q], '\\')
	if bs < 0 {
		p.i = start + q + 1
		return rest[:q], false
	}
	for j := bs; j < len(rest); {
		switch rest[j] {
		case '\\':
			j += 2
		case '"':
			p.i = start + j + 1
			return rest[:j], true
		default:
			j++
		}
	}
	p.fail("unterminated string")
	return nil, false
}

// str reads a string, or a null as "". Any other value is skipped as "".
func (p *parser) str() string {
	switch p.peek() {
	case '"':
		raw, esc := p.rawString()
		if esc {
			raw = p.unescape(raw)
		}
		return string(raw)
	case 'n':
		if p.null() {
			return ""
		}
	}
	p.skip()
	return ""
}

// text reads a string, or the JSON text of a number or an object (some
// servers send arguments as an object, codes as numbers); null is "".
func (p *parser) text() string {
	switch p.peek() {
	case '"':
		return p.str()
	case 'n':
		if p.null() {
			return ""
		}
	}
	start := p.i
	p.skip()
	if p.err != nil {
		return ""
	}
	return string(p.b[start:p.i])
}

// unescape decodes the escapes of a string's bytes into the scratch buffer.
// Bytes that are not escapes are copied as they are, valid UTF-8 or not.
func (p *parser) unescape(raw []byte) []byte {
	buf := p.buf[:0]
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			buf = append(buf, raw[i:]...)
			break
		}
		buf = append(buf, raw[i:i+j]...)
		i += j
		if i+1 >= len(raw) {
			p.fail("bad escape")
			break
		}
		c := raw[i+1]
		i += 2
		switch c {
		case '"', '\\', '/':
			buf = append(buf, c)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(raw[i:])
			if !ok {
				p.fail("bad \\u escape")
				p.buf = buf
				return buf
			}
			i += 4
			if utf16IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, ok2 = hex4(raw[i+2:])
				}
				if ok2 && r2 >= 0xDC00 && r2 < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					i += 6
				} else {
					r = utf8.RuneError // a lone half: JSON cannot say more
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.fail("bad escape")
			p.buf = buf
			return buf
		}
	}
	p.buf = buf
	return buf
}

func utf16IsSurrogate(r rune) bool { return r >= 0xD800 && r < 0xE000 }

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// int reads a number as an integer (null is 0).
func (p *parser) int() int64 {
	c := p.peek()
	if c == 'n' && p.null() {
		return 0
	}
	start := p.i
	var n int64
	simple := true
	i := p.i
	if i < len(p.b) && p.b[i] == '-' {
		i++
		simple = false
	}
	for ; i < len(p.b); i++ {
		c := p.b[i]
		if c >= '0' && c <= '9' {
			n = n*10 + int64(c-'0')
			continue
		}
		if c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			simple = false
			continue
		}
		break
	}
	p.i = i
	if i == start {
		p.skip()
		return 0
	}
	if simple && i-start < 19 {
		return n
	}
	f, err := strconv.ParseFloat(string(p.b[start:i]), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		p.fail("bad number")
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// skip skips one value.
func (p *parser) skip() {
	switch c := p.peek(); c {
	case '"':
		p.rawString()
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				p.rawString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return
				}
			}
			p.i++
		}
		p.fail("unterminated value")
	case 't', 'f', 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
				p.i += len(lit)
				return
			}
		}
		p.fail("bad literal")
	case 0:
		p.fail("unexpected end")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			for p.i < len(p.b) && isNumberByte(p.b[p.i]) {
				p.i++
			}
			return
		}
		p.fail("unexpected character")
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// end checks that only spaces are left.
func (p *parser) end() {
	if p.peek() != 0 && p.err == nil {
		p.fail("data after the event")
	}
}

// event reads one chunk event.
func (p *parser) event(ev *wireEvent) {
	if p.peek() != '{' {
		p.fail("event is not a JSON object")
		return
	}
	p.i++
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "choices":
			p.choices(ev)
		case "usage":
			p.usage(ev)
		case "error":
			p.errorValue(&ev.err)
		default:
			p.skip()
		}
	}
	p.end()
}

// choice is what the provider reads of one choice.
type choice struct {
	index                                     int64
	content, reasoning, reasoningAlt, refusal string
	finish                                    string
}

func (p *parser) choices(ev *wireEvent) {
	if !p.enter('[') {
		return
	}
	for n := 0; p.more(']', &n); {
		var c choice
		mark := len(ev.calls)
		if p.enter('{') {
			for m := 0; p.more('}', &m); {
				switch string(p.key()) {
				case "index":
					c.index = p.int()
				case "delta":
					p.delta(&c, ev)
				case "finish_reason":
					c.finish = p.str()
				default:
					p.skip()
				}
			}
		}
		if c.index != 0 {
			ev.calls = ev.calls[:mark]
			continue
		}
		ev.content, ev.reasoning, ev.reasoningAlt, ev.refusal = c.content, c.reasoning, c.reasoningAlt, c.refusal
		if c.finish != "" {
			ev.finish = c.finish
		}
	}
}

func (p *parser) delta(c *choice, ev *wireEvent) {
	if !p.enter('{') {
		return
	}
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "content":
			c.content = p.str()
		case "reasoning_content":
			c.reasoning = p.str()
		case "reasoning":
			c.reasoningAlt = p.str()
		case "refusal":
			c.refusal = p.str()
		case "tool_calls":
			p.toolCalls(ev)
		default:
			p.skip()
		}
	}
}

func (p *parser) toolCalls(ev *wireEvent) {
	if !p.enter('[') {
		return
	}
	for n := 0; p.more(']', &n); {
		var d callDelta
		if p.enter('{') {
			for m := 0; p.more('}', &m); {
				switch string(p.key()) {
				case "index":
					if p.peek() != 'n' {
						d.index, d.hasIndex = p.int(), true
					} else {
						p.skip()
					}
				case "id":
					d.id = p.str()
				case "function":
					if p.enter('{') {
						for k := 0; p.more('}', &k); {
							switch string(p.key()) {
							case "name":
								d.name = p.str()
							case "arguments":
								d.args = p.text()
							default:
								p.skip()
							}
						}
					}
				default:
					p.skip()
				}
			}
		}
		ev.calls = append(ev.calls, d)
	}
}

func (p *parser) usage(ev *wireEvent) {
	if !p.enter('{') {
		return
	}
	ev.hasUsage = true
	u := &ev.usage
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "prompt_tokens":
			u.prompt = p.int()
		case "completion_tokens":
			u.completion = p.int()
		case "prompt_cache_hit_tokens":
			u.cacheHit = p.int()
		case "prompt_tokens_details":
			if p.enter('{') {
				for m := 0; p.more('}', &m); {
					if string(p.key()) == "cached_tokens" {
						u.cached = p.int()
					} else {
						p.skip()
					}
				}
			}
		default:
			p.skip()
		}
	}
}

// errorValue reads the value of an "error" key: an object, a string, or
// null (no error).
func (p *parser) errorValue(w *wireError) {
	switch p.peek() {
	case 'n':
		if p.null() {
			return
		}
	case '"':
		w.present = true
		w.message = p.str()
		return
	case '{':
		w.present = true
		p.errorFields(w)
		return
	}
	w.present = true
	p.skip()
}

// errorFields reads the fields of an error object.
func (p *parser) errorFields(w *wireError) {
	if !p.enter('{') {
		return
	}
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "message":
			w.message = p.text()
		case "code":
			w.code = p.text()
			if s, err := strconv.Atoi(w.code); err == nil && s >= 100 && s < 600 {
				w.status = int64(s)
			}
		case "type":
			w.typ = p.str()
		case "status":
			if p.peek() == '"' {
				s, _ := strconv.Atoi(p.str())
				w.status = int64(s)
			} else {
				w.status = p.int()
			}
		default:
			p.skip()
		}
	}
}

// errorBody reads an error response's body: OpenAI's {"error":{...}},
// {"error":"..."}, vLLM's top-level {"object":"error","message":...},
// FastAPI's {"detail":...}.
func (p *parser) errorBody(w *wireError) {
	if p.peek() != '{' {
		p.fail("not a JSON object")
		return
	}
	var top wireError
	p.i++
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "error":
			p.errorValue(w)
		case "message", "detail":
			top.message = p.text()
		case "code":
			top.code = p.text()
			if s, err := strconv.Atoi(top.code); err == nil && s >= 100 && s < 600 {
				top.status = int64(s)
			}
		case "type":
			top.typ = p.str()
		default:
			p.skip()
		}
	}
	p.end()
	if !w.present && (top.message != "" || top.code != "" || top.typ != "") {
		top.present = true
		*w = top
	}
}

package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/internal/httpclient"
)

// Defaults of [Config].
const (
	// defaultBaseURL is Anthropic's API.
	defaultBaseURL = "https://api.anthropic.com"
	// defaultAPIKeyEnv names the variable that holds the key.
	defaultAPIKeyEnv = "ANTHROPIC_API_KEY"
	// defaultMaxOutputTokens is max_tokens when neither the request nor the
	// config sets it.
	defaultMaxOutputTokens = 4096
	// minThinkingBudget is the smallest budget Anthropic accepts for
	// extended thinking.
	minThinkingBudget = 1024
)

// providerName names the provider in errors.
const providerName = "anthropic"

// thinkingCacheSize bounds the responses whose thinking blocks are kept.
const thinkingCacheSize = 1024

// Config configures a [provider].
type Config struct {
	// Model is the model's name ("claude-sonnet-4-5"), used when
	// Request.Model is empty.
	Model string
	// BaseURL is the API's address; empty means Anthropic's,
	// https://api.anthropic.com. Tests point it at an httptest server.
	BaseURL string
	// APIKeyEnv names the environment variable (and the secret) that holds
	// the API key; empty means ANTHROPIC_API_KEY.
	APIKeyEnv string
	// MaxOutputTokens bounds an answer when Request.MaxOutputTokens is 0;
	// 0 means 4096.
	MaxOutputTokens int
	// Thinking is the token budget of extended thinking: 0 turns it off,
	// otherwise at least 1024, the smallest budget Anthropic accepts.
	Thinking int
	// PromptCache marks the system prompt and the end of the history as
	// prompt-cache breakpoints (cache_control), so that each step of a turn
	// reads the conversation so far from Anthropic's cache.
	PromptCache bool
	// HTTPClient sends the requests; nil means a client with Go's default
	// transport and a 10-minute limit on waiting for response headers (the
	// body of a stream has no time limit but the context's).
	HTTPClient *http.Client
}

// provider streams responses of Anthropic's Messages API. It is safe for
// concurrent use.
type provider struct {
	cfg      Config
	client   sdk.Client
	thinking thinkingCache
	redactor atomic.Pointer[keyRedactor] // of the last key; see redactorFor
}

var _ model.Provider = (*provider)(nil)

// New returns a provider for cfg. It checks the config; the API key is
// looked up for each request, so New needs none.
func New(cfg Config) (model.Provider, error) {
	p, err := build(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// build is New, returning the provider itself for the package's tests.
func build(cfg Config) (*provider, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = defaultAPIKeyEnv
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("anthropic: max output tokens %d is negative", cfg.MaxOutputTokens)
	}
	if cfg.Thinking < 0 || cfg.Thinking > 0 && cfg.Thinking < minThinkingBudget {
		return nil, fmt.Errorf("anthropic: thinking budget %d: want 0 (off) or at least %d", cfg.Thinking, minThinkingBudget)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = httpclient.New()
	}
	p := &provider{cfg: cfg}
	p.client = sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return p, nil
}

// Stream sends req and returns the stream of its response. A failure to
// open the stream is returned as a [*model.Error] (or, when ctx ended, an
// error matching ctx's error with errors.Is).
func (p *provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	if req == nil {
		return nil, &model.Error{Kind: model.ErrorInvalidRequest, Provider: providerName, Message: "nil request"}
	}
	if err := ctx.Err(); err != nil {
		return nil, canceled(err)
	}
	key, err := p.apiKey(req)
	if err != nil {
		return nil, err
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	red := p.redactorFor(key)
	s := p.client.Messages.NewStreaming(ctx, params, option.WithAPIKey(key))
	if err := s.Err(); err != nil {
		s.Close()
		return nil, classify(ctx, err, red, true)
	}
	return &stream{p: p, ctx: ctx, sse: s, red: red, blocks: make(map[int64]*block)}, nil
}

// keyRedactor is the [secret.Redactor] of one key.
type keyRedactor struct {
	key string
	red *secret.Redactor
}

// redactorFor returns the redactor that masks key, labelled with
// Config.APIKeyEnv, in error text. It keeps the one of the last key: the key
// is looked up for each request but seldom changes.
func (p *provider) redactorFor(key string) *secret.Redactor {
	if kr := p.redactor.Load(); kr != nil && kr.key == key {
		return kr.red
	}
	red := secret.NewRedactor(map[string]string{p.cfg.APIKeyEnv: key})
	p.redactor.Store(&keyRedactor{key: key, red: red})
	return red
}

// apiKey resolves the key: the environment first, then the instance's
// secrets.
func (p *provider) apiKey(req *model.Request) (string, error) {
	name := p.cfg.APIKeyEnv
	if k := os.Getenv(name); k != "" {
		return k, nil
	}
	if req.Secret != nil {
		if k, ok := req.Secret(name); ok && k != "" {
			return k, nil
		}
	}
	return "", &model.Error{Kind: model.ErrorAuth, Provider: providerName, Message: "no API key: set " + name + " or provide it"}
}

// params maps req to the SDK's request.
func (p *provider) params(req *model.Request) (sdk.MessageNewParams, error) {
	var params sdk.MessageNewParams
	name := req.Model
	if name == "" {
		name = p.cfg.Model
	}
	if name == "" {
		return params, invalid("no model: set the agent's model or the provider's")
	}
	maxTokens := req.MaxOutputTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxOutputTokens
	}
	if maxTokens <= 0 {
		maxTokens = defaultMaxOutputTokens
	}
	params.Model = sdk.Model(name)
	params.MaxTokens = int64(maxTokens)
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
		if p.cfg.PromptCache {
			params.System[0].CacheControl = sdk.NewCacheControlEphemeralParam()
		}
	}
	thinking := p.cfg.Thinking > 0
	msgs, err := p.messages(req.Messages, thinking)
	if err != nil {
		return params, err
	}
	if thinking && !thinkingAllowed(msgs) {
		thinking = false
		stripThinking(msgs)
	}
	if thinking {
		params.MaxTokens += int64(p.cfg.Thinking)
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(p.cfg.Thinking))
	}
	params.Messages = msgs
	if p.cfg.PromptCache && len(msgs) > 0 {
		last := msgs[len(msgs)-1].Content
		markCache(&last[len(last)-1])
	}
	if len(req.Tools) > 0 {
		params.Tools = make([]sdk.ToolUnionParam, len(req.Tools))
		for i := range req.Tools {
			t := &req.Tools[i]
			tp := &sdk.ToolParam{Name: t.Name}
			if t.Description != "" {
				tp.Description = sdk.String(t.Description)
			}
			schema, err := inputSchema(t.Parameters)
			if err != nil {
				return params, invalid(fmt.Sprintf("tool %q: %v", t.Name, err))
			}
			param.SetJSON(schema, &tp.InputSchema)
			params.Tools[i] = sdk.ToolUnionParam{OfTool: tp}
		}
	}
	return params, nil
}

// thinkingAllowed reports whether a request with msgs may enable thinking:
// Anthropic requires the last assistant message, when it called tools, to
// start with its signed thinking blocks, and the provider may not have
// them.
func thinkingAllowed(msgs []sdk.MessageParam) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != sdk.MessageParamRoleAssistant {
			continue
		}
		tools := false
		for _, c := range m.Content {
			tools = tools || c.OfToolUse != nil
		}
		return !tools || m.Content[0].OfThinking != nil || m.Content[0].OfRedactedThinking != nil
	}
	return true
}

// stripThinking removes the thinking blocks from msgs, for a request
// without thinking.
func stripThinking(msgs []sdk.MessageParam) {
	for i := range msgs {
		msgs[i].Content = slices.DeleteFunc(msgs[i].Content, func(c sdk.ContentBlockParamUnion) bool {
			return c.OfThinking != nil || c.OfRedactedThinking != nil
		})
	}
}

// messages maps the history, merging consecutive messages of one role.
func (p *provider) messages(list pipeline.MessageList, thinking bool) ([]sdk.MessageParam, error) {
	if list == nil {
		return nil, nil
	}
	var b historyBuilder
	n := list.Len()
	b.msgs = make([]sdk.MessageParam, 0, n)
	for i := range n {
		m := list.At(i)
		switch m.Role {
		case pipeline.RoleUser:
			if hasText(m.Content) {
				b.add(sdk.MessageParamRoleUser, sdk.NewTextBlock(m.Content))
			}
		case pipeline.RoleSystem:
			if hasText(m.Content) {
				b.add(sdk.MessageParamRoleUser, sdk.NewTextBlock("[system] "+m.Content))
			}
		case pipeline.RoleTool:
			r := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if hasText(m.Content) {
				r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			if m.IsError {
				r.IsError = sdk.Bool(true)
			}
			b.result(sdk.ContentBlockParamUnion{OfToolResult: r})
		case pipeline.RoleAssistant:
			if thinking && len(m.ToolCalls) > 0 {
				if blocks, ok := p.thinking.get(m.ToolCalls[0].ID); ok {
					for _, tb := range blocks {
						b.add(sdk.MessageParamRoleAssistant, tb.param())
					}
				}
			}
			if hasText(m.Content) {
				b.add(sdk.MessageParamRoleAssistant, sdk.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				b.add(sdk.MessageParamRoleAssistant, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
					ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments),
				}})
			}
		default:
			return nil, invalid(fmt.Sprintf("message %d (%s) has unknown role %q", i, m.ID, m.Role))
		}
	}
	b.flush()
	return b.msgs, nil
}

// historyBuilder assembles alternating messages. In a user message the
// tool results come first, as Anthropic requires.
type historyBuilder struct {
	msgs    []sdk.MessageParam
	role    sdk.MessageParamRole
	results []sdk.ContentBlockParamUnion
	blocks  []sdk.ContentBlockParamUnion
}

func (b *historyBuilder) add(role sdk.MessageParamRole, block sdk.ContentBlockParamUnion) {
	if role != b.role {
		b.flush()
		b.role = role
	}
	b.blocks = append(b.blocks, block)
}

func (b *historyBuilder) result(block sdk.ContentBlockParamUnion) {
	if b.role != sdk.MessageParamRoleUser {
		b.flush()
		b.role = sdk.MessageParamRoleUser
	}
	b.results = append(b.results, block)
}

func (b *historyBuilder) flush() {
	if len(b.results)+len(b.blocks) > 0 {
		content := make([]sdk.ContentBlockParamUnion, 0, len(b.results)+len(b.blocks))
		content = append(append(content, b.results...), b.blocks...)
		b.msgs = append(b.msgs, sdk.MessageParam{Role: b.role, Content: content})
	}
	b.role, b.results, b.blocks = "", nil, nil
}

// hasText reports whether s has other characters than white space:
// Anthropic refuses empty and blank text blocks.
func hasText(s string) bool { return strings.TrimSpace(s) != "" }

// markCache makes block a prompt-cache breakpoint.
func markCache(block *sdk.ContentBlockParamUnion) {
	cc := sdk.NewCacheControlEphemeralParam()
	switch {
	case block.OfText != nil:
		block.OfText.CacheControl = cc
	case block.OfToolResult != nil:
		block.OfToolResult.CacheControl = cc
	case block.OfToolUse != nil:
		block.OfToolUse.CacheControl = cc
	}
}

// toolInput is the input of a tool_use block for a call's arguments: the
// arguments when they are a JSON object, else {} (see the package doc).
func toolInput(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) > 0 && a[0] == '{' && json.Valid(a) {
		return a
	}
	return json.RawMessage(`{}`)
}

// inputSchema is a tool's input_schema for its parameters' schema.
func inputSchema(schema json.RawMessage) ([]byte, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 || string(s) == "null" {
		return []byte(`{"type":"object","properties":{}}`), nil
	}
	var fields map[string]json.RawMessage
	if s[0] != '{' || json.Unmarshal(s, &fields) != nil {
		return nil, errors.New("parameters schema is not a JSON object")
	}
	if _, ok := fields["type"]; ok {
		return s, nil
	}
	// Anthropic requires "type": "object"; add it in front, keeping the
	// rest byte for byte.
	out := make([]byte, 0, len(s)+16)
	out = append(out, `{"type":"object"`...)
	if len(fields) > 0 {
		out = append(out, ',')
	}
	return append(out, s[1:]...), nil
}

// invalid is an invalid-request error found before sending.
func invalid(msg string) *model.Error {
	return &model.Error{Kind: model.ErrorInvalidRequest, Provider: providerName, Message: msg}
}

// canceled is the error of a call whose context ended: not retryable, and
// matching the context's error with errors.Is.
func canceled(err error) *model.Error {
	return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: err.Error(), Err: err}
}

// classify turns a failure of the SDK into a [*model.Error]. atOpen says
// the stream was not open yet (an error status or a failed connection),
// else it failed while reading.
func classify(ctx context.Context, err error, red *secret.Redactor, atOpen bool) *model.Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return canceled(ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr, red)
	}
	msg := red.Redact(err.Error())
	if s, ok := strings.CutPrefix(msg, "received error while streaming: "); ok {
		// An error event whose data the SDK could not read as an error.
		return streamError(s, red)
	}
	var urlErr *url.Error
	if atOpen && !errors.As(err, &urlErr) {
		// Not a network failure: the request could not be built.
		return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: msg}
	}
	// A network failure, or a stream cut short.
	return &model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: msg}
}

// errorBody is Anthropic's error: {"type":"error","error":{"type":...,"message":...}}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// fromAPIError classifies an error status, or an error event (whose
// status is the stream's, 200).
func fromAPIError(e *sdk.Error, red *secret.Redactor) *model.Error {
	raw := e.RawJSON()
	if e.StatusCode < 400 {
		return streamError(raw, red)
	}
	var body errorBody
	msg := ""
	if json.Unmarshal([]byte(raw), &body) == nil {
		msg = body.Error.Message
	}
	if msg == "" {
		msg = snippet(red.Redact(raw)) // before the cut, which may halve the key
	}
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	kind := model.StatusKind(e.StatusCode)
	if kind == model.ErrorInvalidRequest && model.IsContextWindowMessage(msg) {
		kind = model.ErrorContextWindow
	}
	me := &model.Error{Kind: kind, Provider: providerName, Status: e.StatusCode, Message: red.Redact(msg)}
	if e.Response != nil {
		me.RetryAfter = model.RetryAfter(e.Response.Header, time.Now())
	}
	return me
}

// streamError classifies the data of an error event.
func streamError(data string, red *secret.Redactor) *model.Error {
	var body errorBody
	if json.Unmarshal([]byte(data), &body) != nil || body.Error.Type == "" && body.Error.Message == "" {
		return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "error event: " + snippet(red.Redact(data))}
	}
	msg := body.Error.Message
	if msg == "" {
		msg = body.Error.Type
	}
	kind := model.ErrorOther
	switch body.Error.Type {
	case "overloaded_error", "api_error", "timeout_error":
		kind = model.ErrorTransient
	case "rate_limit_error":
		kind = model.ErrorRateLimit
	case "invalid_request_error", "not_found_error", "request_too_large", "billing_error":
		kind = model.ErrorInvalidRequest
		if model.IsContextWindowMessage(msg) {
			kind = model.ErrorContextWindow
		}
	case "authentication_error", "permission_error":
		kind = model.ErrorAuth
	}
	return &model.Error{Kind: kind, Provider: providerName, Message: red.Redact(msg)}
}

// snippet is the start of a body that is not Anthropic's error JSON (a
// proxy's page), on one line.
func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

var errStreamClosed = errors.New("anthropic: stream closed")

// block is the state of one content block of the response.
type block struct {
	kind      string // "text", "thinking", "redacted_thinking", "tool_use", ...
	id        string // tool_use
	input     string // tool_use: the input of content_block_start
	sawDelta  bool   // tool_use: a non-empty input_json_delta came
	ended     bool   // tool_use: the end chunk went out
	thinking  strings.Builder
	signature strings.Builder
	data      string // redacted_thinking
}

// stream reads the events of one response.
type stream struct {
	p   *provider
	ctx context.Context
	sse *ssestream.Stream[sdk.MessageStreamEventUnion]
	red *secret.Redactor // masks the key in errors

	queue []model.Chunk
	next  int

	blocks    map[int64]*block
	order     []*block // in the order they started
	firstTool string   // ID of the first tool call
	usage     pipeline.Usage
	started   bool // message_start came
	stopped   bool // message_stop came, the body may still need reading
	delivered bool // a content chunk went out
	done      bool // nothing more to read
	closed    bool
}

// Recv returns the next chunk, io.EOF after the last one.
func (s *stream) Recv() (model.Chunk, error) {
	if s.closed {
		return model.Chunk{}, errStreamClosed
	}
	for {
		if s.next < len(s.queue) {
			c := s.queue[s.next]
			s.queue[s.next] = model.Chunk{}
			s.next++
			return c, nil
		}
		s.queue, s.next = s.queue[:0], 0
		if s.done {
			if s.stopped {
				s.finish()
			}
			return model.Chunk{}, io.EOF
		}
		s.read()
	}
}

// Close releases the response body. It is idempotent.
func (s *stream) Close() error {
	if s.closed {
		return nil
	}
	s.closed, s.done = true, true
	s.queue, s.blocks, s.order = nil, nil, nil
	s.sse.Close()
	return nil
}

func (s *stream) emit(c model.Chunk) {
	if c.Kind != model.KindUsage {
		s.delivered = true
	}
	s.queue = append(s.queue, c)
}

// fail ends the stream with an error chunk. The usage goes out before it
// when content did, so that the tokens spent are counted; before any
// content the error must be the first chunk, for [model.WithRetry].
func (s *stream) fail(err *model.Error) {
	if s.delivered && s.started {
		s.emit(model.Chunk{Kind: model.KindUsage, Usage: s.usage})
	}
	s.emit(model.Chunk{Kind: model.KindError, Err: err})
	s.done = true
}

// read handles the next event.
func (s *stream) read() {
	if err := s.ctx.Err(); err != nil {
		s.fail(canceled(err))
		return
	}
	if !s.sse.Next() {
		if err := s.sse.Err(); err != nil {
			s.fail(classify(s.ctx, err, s.red, false))
		} else {
			s.fail(&model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: "stream ended before message_stop"})
		}
		return
	}
	ev := s.sse.Current()
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		s.started = true
		s.usage = pipeline.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		s.start(ev.Index, &ev.ContentBlock)
	case "content_block_delta":
		s.delta(ev.Index, &ev.Delta)
	case "content_block_stop":
		if b := s.blocks[ev.Index]; b != nil {
			s.stop(b)
		}
	case "message_delta":
		u := &ev.Usage
		if u.JSON.OutputTokens.Valid() {
			s.usage.OutputTokens = u.OutputTokens
		}
		// The counts are cumulative: they can only confirm or raise
		// message_start's.
		if u.JSON.InputTokens.Valid() {
			s.usage.InputTokens = max(s.usage.InputTokens, u.InputTokens)
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			s.usage.CacheReadTokens = max(s.usage.CacheReadTokens, u.CacheReadInputTokens)
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			s.usage.CacheWriteTokens = max(s.usage.CacheWriteTokens, u.CacheCreationInputTokens)
		}
	case "message_stop":
		for _, b := range s.order {
			s.stop(b)
		}
		s.emit(model.Chunk{Kind: model.KindUsage, Usage: s.usage})
		s.keepThinking()
		s.done, s.stopped = true, true
	}
}

// finish reads the body to its end after message_stop (Anthropic ends it
// there), so that the connection goes back to the pool: a body closed
// before its end closes the connection.
func (s *stream) finish() {
	s.stopped = false
	for i := 0; i < 8 && s.sse.Next(); i++ {
	}
}

func (s *stream) start(index int64, cb *sdk.ContentBlockStartEventContentBlockUnion) {
	b := &block{kind: cb.Type}
	if old := s.blocks[index]; old != nil {
		s.stop(old)
	}
	s.blocks[index] = b
	s.order = append(s.order, b)
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			s.emit(model.Chunk{Kind: model.KindText, Text: cb.Text})
		}
	case "thinking":
		if cb.Thinking != "" {
			b.thinking.WriteString(cb.Thinking)
			s.emit(model.Chunk{Kind: model.KindReasoning, Text: cb.Thinking})
		}
		b.signature.WriteString(cb.Signature)
	case "redacted_thinking":
		b.data = cb.Data
	case "tool_use":
		b.id, b.input = cb.ID, cb.JSON.Input.Raw()
		if s.firstTool == "" {
			s.firstTool = cb.ID
		}
		s.emit(model.Chunk{Kind: model.KindToolCallStart, ToolCallID: cb.ID, ToolName: cb.Name})
	}
}

func (s *stream) delta(index int64, d *sdk.MessageStreamEventUnionDelta) {
	b := s.blocks[index]
	switch d.Type {
	case "text_delta":
		if d.Text != "" {
			s.emit(model.Chunk{Kind: model.KindText, Text: d.Text})
		}
	case "thinking_delta":
		if b != nil {
			b.thinking.WriteString(d.Thinking)
		}
		if d.Thinking != "" {
			s.emit(model.Chunk{Kind: model.KindReasoning, Text: d.Thinking})
		}
	case "signature_delta":
		if b != nil {
			b.signature.WriteString(d.Signature)
		}
	case "input_json_delta":
		if b == nil || b.kind != "tool_use" || b.ended {
			s.fail(&model.Error{Kind: model.ErrorOther, Provider: providerName, Message: fmt.Sprintf("input_json_delta for content block %d, which is not an open tool_use block", index)})
			return
		}
		if d.PartialJSON != "" {
			b.sawDelta = true
			s.emit(model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: b.id, ArgumentsDelta: d.PartialJSON})
		}
	}
}

// stop ends a tool_use block: its input, if no delta carried it, then its
// end.
func (s *stream) stop(b *block) {
	if b.kind != "tool_use" || b.ended {
		return
	}
	b.ended = true
	if !b.sawDelta {
		in := strings.TrimSpace(b.input)
		if in == "" || in == "null" {
			in = "{}"
		}
		s.emit(model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: b.id, ArgumentsDelta: in})
	}
	s.emit(model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: b.id})
}

// keepThinking remembers the signed thinking blocks of a response that
// called tools, for the next request of the loop.
func (s *stream) keepThinking() {
	if s.firstTool == "" {
		return
	}
	var blocks []thinkingBlock
	for _, b := range s.order {
		switch b.kind {
		case "thinking":
			if b.signature.Len() == 0 {
				return // unsigned: Anthropic would refuse it
			}
			blocks = append(blocks, thinkingBlock{thinking: b.thinking.String(), signature: b.signature.String()})
		case "redacted_thinking":
			blocks = append(blocks, thinkingBlock{redacted: true, data: b.data})
		}
	}
	if len(blocks) > 0 {
		s.p.thinking.put(s.firstTool, blocks)
	}
}

// thinkingBlock is a thinking or redacted_thinking block of a response.
type thinkingBlock struct {
	redacted  bool
	thinking  string
	signature string
	data      string
}

func (t thinkingBlock) param() sdk.ContentBlockParamUnion {
	if t.redacted {
		return sdk.NewRedactedThinkingBlock(t.data)
	}
	return sdk.NewThinkingBlock(t.signature, t.thinking)
}

// thinkingCache holds the thinking blocks of the last responses that
// called tools, by the ID of their first tool call.
type thinkingCache struct {
	mu   sync.Mutex
	m    map[string][]thinkingBlock
	ring [thinkingCacheSize]string
	next int
}

func (c *thinkingCache) put(id string, blocks []thinkingBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]thinkingBlock)
	}
	if _, ok := c.m[id]; !ok {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = id
		c.next = (c.next + 1) % len(c.ring)
	}
	c.m[id] = blocks
}

func (c *thinkingCache) get(id string) ([]thinkingBlock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[id]
	return b, ok
}

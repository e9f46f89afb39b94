package openai

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/internal/httpclient"
)

// providerName names the provider in errors.
const providerName = "openai"

// defaultBaseURL is OpenAI's endpoint, used when Config.BaseURL is empty.
const defaultBaseURL = "https://api.openai.com/v1"

// DefaultAPIKeyEnv is the variable that conventionally holds an OpenAI
// key. [New] does not assume it (an empty APIKeyEnv sends no key, for local
// servers); the registered provider uses it for OpenAI's own API when the
// config names none.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// The values of Config.MaxTokensField.
const (
	maxCompletionTokens = "max_completion_tokens"
	maxTokens           = "max_tokens"
)

// Config configures a [provider].
type Config struct {
	// Model is the model's name, used when Request.Model is empty.
	Model string
	// BaseURL is the API's root, the URL that chat/completions is relative
	// to ("http://localhost:11434/v1" for Ollama); empty: OpenAI's,
	// https://api.openai.com/v1.
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key; when
	// it is empty in the environment, Request.Secret of that name is asked.
	// Empty: the server needs no key, and none is sent.
	APIKeyEnv string
	// MaxOutputTokens bounds an answer when Request.MaxOutputTokens is 0;
	// 0: the server's default.
	MaxOutputTokens int
	// MaxTokensField is the request field that carries the bound:
	// "max_completion_tokens" or "max_tokens". Empty: max_completion_tokens
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

// provider streams chat completions; create one with [New].
type provider struct {
	cfg        Config
	svc        oa.ChatCompletionService
	completion bool                        // send the bound as max_completion_tokens
	redactor   atomic.Pointer[keyRedactor] // of the last key; see redactorFor
}

var _ model.Provider = (*provider)(nil)

// New returns a provider for cfg. It fails when BaseURL is not an absolute
// http or https URL or MaxTokensField is unknown.
func New(cfg Config) (model.Provider, error) {
	p, err := build(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// build is New, returning the provider itself for the package's tests.
func build(cfg Config) (*provider, error) {
	base := cfg.BaseURL
	if base == "" {
		base = defaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an absolute http or https URL", base)
	}
	if u.User != nil {
		return nil, fmt.Errorf("openai: base URL must not hold credentials: give the key through api_key_env")
	}
	p := &provider{cfg: cfg}
	switch cfg.MaxTokensField {
	case "":
		p.completion = strings.EqualFold(u.Hostname(), "api.openai.com")
	case maxCompletionTokens:
		p.completion = true
	case maxTokens:
	default:
		return nil, fmt.Errorf("openai: unknown max tokens field %q (want %q or %q)", cfg.MaxTokensField, maxCompletionTokens, maxTokens)
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("openai: max output tokens %d is negative", cfg.MaxOutputTokens)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = httpclient.New()
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
func (p *provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
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
	red := p.redactorFor(key)
	if err := p.svc.NewStreaming(ctx, params, opts...).Err(); err != nil {
		return nil, openError(ctx, err, resp, red)
	}
	if resp == nil || resp.Body == nil {
		return nil, &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "the server sent no response"}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// The server did not stream: an error in a 200, or a server that
		// ignores "stream".
		return nil, notStreamed(resp, red)
	}
	s := &stream{
		ctx:  ctx,
		body: resp.Body,
		dec:  ssestream.NewDecoder(resp),
		red:  red,
	}
	if req.TurnID != "" {
		s.idPrefix = req.TurnID + "-call-" + strconv.Itoa(req.Step) + "-"
	}
	return s, nil
}

// keyRedactor is the [secret.Redactor] of one key.
type keyRedactor struct {
	key string
	red *secret.Redactor
}

// redactorFor returns the redactor that masks key, labelled with
// Config.APIKeyEnv, in error text; nil, which masks nothing, when there is
// no key. It keeps the one of the last key: the key is looked up for each
// request but seldom changes.
func (p *provider) redactorFor(key string) *secret.Redactor {
	if key == "" {
		return nil
	}
	if kr := p.redactor.Load(); kr != nil && kr.key == key {
		return kr.red
	}
	red := secret.NewRedactor(map[string]string{p.cfg.APIKeyEnv: key})
	p.redactor.Store(&keyRedactor{key: key, red: red})
	return red
}

// apiKey resolves the request's key: "" when none is configured.
func (p *provider) apiKey(req *model.Request) (string, error) {
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

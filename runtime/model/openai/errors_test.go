package openai

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of error classification: HTTP statuses, error bodies, network
// failures, retries and the API key kept out of every error.

const (
	contextWindowBody = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	rateLimitBody     = `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	serverErrorBody   = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	authBody          = `{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
)

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer http.HandlerFunc
		want   model.Error
		is     error
	}{
		{"429 with Retry-After", status(429, map[string]string{"Retry-After": "7"}, rateLimitBody),
			model.Error{Kind: model.ErrorRateLimit, Status: 429, RetryAfter: 7 * time.Second, Message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1."}, model.ErrRateLimited},
		{"429 out of quota: waiting does not help", status(429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			model.Error{Kind: model.ErrorAuth, Status: 429, Message: "You exceeded your current quota, please check your plan and billing details."}, model.ErrAuth},
		{"429 with retry-after-ms", status(429, map[string]string{"retry-after-ms": "250"}, rateLimitBody),
			model.Error{Kind: model.ErrorRateLimit, Status: 429, RetryAfter: 250 * time.Millisecond, Message: "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1."}, model.ErrRateLimited},
		{"500", status(500, nil, serverErrorBody),
			model.Error{Kind: model.ErrorTransient, Status: 500, Message: "The server had an error while processing your request. Sorry about that!"}, model.ErrTransient},
		{"502 with an HTML page", status(502, nil, "<html><body>Bad gateway</body></html>"),
			model.Error{Kind: model.ErrorTransient, Status: 502, Message: "Bad Gateway"}, model.ErrTransient},
		{"401", status(401, nil, authBody),
			model.Error{Kind: model.ErrorAuth, Status: 401, Message: "Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys."}, model.ErrAuth},
		{"403", status(403, nil, `{"error":{"message":"Project does not have access to model gpt-5","type":"invalid_request_error","code":"model_not_found"}}`),
			model.Error{Kind: model.ErrorAuth, Status: 403, Message: "Project does not have access to model gpt-5"}, model.ErrAuth},
		{"404", status(404, nil, `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 404, Message: "The model 'gpt-9' does not exist or you do not have access to it."}, model.ErrInvalidRequest},
		{"400 context window (OpenAI)", status(400, nil, contextWindowBody),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens. Please reduce the length of the messages."}, model.ErrContextWindow},
		{"400 context window (vLLM, top-level)", status(400, nil, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."}, model.ErrContextWindow},
		{"400 context window by code only", status(400, nil, `{"error":{"message":"Too long.","type":"invalid_request_error","code":"context_length_exceeded"}}`),
			model.Error{Kind: model.ErrorContextWindow, Status: 400, Message: "Too long."}, model.ErrContextWindow},
		{"400 error as a string", status(400, nil, `{"error":"invalid tool name \"x y\""}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 400, Message: `invalid tool name "x y"`}, model.ErrInvalidRequest},
		{"422 FastAPI detail", status(422, nil, `{"detail":"messages: field required"}`),
			model.Error{Kind: model.ErrorInvalidRequest, Status: 422, Message: "messages: field required"}, model.ErrInvalidRequest},
		{"200 with a JSON error", status(200, nil, `{"error":{"message":"upstream failed","code":502}}`),
			model.Error{Kind: model.ErrorTransient, Status: 502, Message: "upstream failed"}, model.ErrTransient},
		{"200 with a whole completion", status(200, nil, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`),
			model.Error{Kind: model.ErrorOther, Message: "the server answered in JSON, not with an event stream: does it support streaming?"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, _ := serve(t, Config{}, c.answer)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err == nil {
				s.Close()
				t.Fatal("Stream succeeded")
			}
			c.want.Provider = "openai"
			if got := modelError(t, err); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("error\n got %+v\nwant %+v", got, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("errors.Is(%v, %v) is false", err, c.is)
			}
		})
	}
}

// noSleep is a retry policy that records its waits instead of waiting.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (n *noSleep) policy() model.RetryPolicy {
	return model.RetryPolicy{
		Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.delays = append(n.delays, d)
			return ctx.Err()
		},
	}
}

func TestWithRetry(t *testing.T) {
	t.Parallel()
	textChunks := []model.Chunk{
		text("Hello"), text("!"), text(" Café"), text(" ☕"), text(` "quoted"`), text("\nnew line"), text(` \ back`), text(" emoji 😀"),
		usage(19, 10, 0),
	}
	cases := []struct {
		name    string
		answers []http.HandlerFunc
		hits    int
		delays  []time.Duration
		wantErr model.ErrorKind // when the call fails
		fails   bool
	}{
		{"429 then success", []http.HandlerFunc{status(429, map[string]string{"Retry-After": "3"}, rateLimitBody), recording(t, "text.sse")},
			2, []time.Duration{3 * time.Second}, 0, false},
		{"500 then success", []http.HandlerFunc{status(500, nil, serverErrorBody), recording(t, "text.sse")},
			2, []time.Duration{500 * time.Millisecond}, 0, false},
		{"error event first then success", []http.HandlerFunc{recording(t, "first_event_error.sse"), recording(t, "text.sse")},
			2, []time.Duration{500 * time.Millisecond}, 0, false},
		{"401 is not retried", []http.HandlerFunc{status(401, nil, authBody), recording(t, "text.sse")},
			1, nil, model.ErrorAuth, true},
		{"context window is not retried", []http.HandlerFunc{status(400, nil, contextWindowBody), recording(t, "text.sse")},
			1, nil, model.ErrorContextWindow, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, r := serve(t, Config{}, c.answers...)
			var ns noSleep
			rp := model.WithRetry(p, ns.policy())
			s, err := rp.Stream(context.Background(), userRequest("hi"))
			if c.fails {
				if err == nil {
					s.Close()
					t.Fatal("Stream succeeded")
				}
				if k := model.KindOf(err); k != c.wantErr {
					t.Fatalf("kind %v, want %v (%v)", k, c.wantErr, err)
				}
				if c.wantErr == model.ErrorContextWindow && !errors.Is(err, model.ErrContextWindow) {
					t.Fatalf("errors.Is(%v, ErrContextWindow) is false", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				checkChunks(t, collect(t, s), textChunks)
			}
			if n := int(r.hits.Load()); n != c.hits {
				t.Errorf("server hit %d times, want %d", n, c.hits)
			}
			if !reflect.DeepEqual(ns.delays, c.delays) {
				t.Errorf("waits %v, want %v", ns.delays, c.delays)
			}
		})
	}
}

// TestKeyNeverInErrors triggers every error path with a canary key, from
// servers that echo the key back, and checks that no error text holds it.
func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const canary = "sk-canary-5f0c2a9e7b41d3"
	echo := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Authorization")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (%s)","type":"invalid_request_error","code":"%s"}}`, key, strings.TrimPrefix(key, "Bearer "), strings.TrimPrefix(key, "Bearer "))
		}
	}
	echoStream := func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		writeSSE(w, sse(ev(`{"content":"a"}`), `{"error":{"message":"failed for key `+key+`","type":"server_error","code":"`+key+`"}}`))
	}
	echoEvent := func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, []byte("event: error\ndata: "+r.Header.Get("Authorization")+"\n\n"))
	}
	echoJSON := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":"%s","code":502}}`, r.Header.Get("Authorization"))
	}
	drop := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	handlers := map[string]http.HandlerFunc{
		"401": echo(401), "429": echo(429), "500": echo(500), "400": echo(400), "413": echo(413),
		"400 context window": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"object":"error","message":"maximum context length exceeded for %s","code":400}`, r.Header.Get("Authorization"))
		},
		"mid-stream error": echoStream, "SSE error event": echoEvent, "200 JSON error": echoJSON, "connection drop": drop,
	}
	var paths []string
	var errs []error
	var mu sync.Mutex
	keyEnv := "GANGLION_TEST_OPENAI_CANARY"
	secret := func(name string) (string, bool) { return canary, name == keyEnv }
	var wg sync.WaitGroup
	for name, h := range handlers {
		wg.Add(1)
		p, r := serve(t, Config{APIKeyEnv: keyEnv}, h)
		go func() {
			defer wg.Done()
			req := userRequest("hi")
			req.Secret = secret
			var err error
			s, serr := p.Stream(context.Background(), req)
			if serr != nil {
				err = serr
			} else {
				for {
					c, rerr := s.Recv()
					if rerr != nil {
						if rerr != io.EOF {
							err = rerr
						}
						break
					}
					if c.Kind == model.KindError {
						err = c.Err
					}
				}
				s.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			paths = append(paths, name)
			errs = append(errs, err)
			if auth := r.headers[0].Get("Authorization"); auth != "Bearer "+canary {
				t.Errorf("%s: the canary key was not sent (Authorization %q)", name, auth)
			}
		}()
	}
	// A refused connection.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := build(Config{BaseURL: "http://" + addr + "/v1", Model: "m", APIKeyEnv: keyEnv})
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("hi")
	req.Secret = secret
	_, rerr := p.Stream(context.Background(), req)
	if model.KindOf(rerr) != model.ErrorTransient {
		t.Errorf("refused connection: %v is not transient", rerr)
	}
	wg.Wait()
	paths = append(paths, "refused connection")
	errs = append(errs, rerr)

	for i, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", paths[i])
			continue
		}
		t.Logf("%s: %v", paths[i], err)
		for e := err; e != nil; e = errors.Unwrap(e) {
			for _, text := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
				if strings.Contains(text, canary) {
					t.Errorf("%s: the key is in the error: %s", paths[i], text)
				}
			}
		}
		if me := modelError(t, err); !strings.Contains(me.Message, "[secret "+keyEnv+"]") && paths[i] != "connection drop" && paths[i] != "refused connection" {
			t.Errorf("%s: message %q does not show the redaction", paths[i], me.Message)
		}
	}
}

func TestConnectionDrop(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cut the connection, mid-stream
	})
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != 2 || got[0] != text("a") || got[1].Kind != model.KindError {
		t.Fatalf("chunks %v", got)
	}
	e := modelError(t, got[1].Err)
	if e.Kind != model.ErrorTransient || !strings.HasPrefix(e.Message, "stream interrupted: ") {
		t.Fatalf("error %+v", e)
	}
}

func TestConnectionDropAfterFinish(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "data: "+ev(`{"content":"a"}`)+"\n\ndata: "+finish("stop")+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, collect(t, s), []model.Chunk{text("a")})
}

func TestRefusedConnection(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := build(Config{BaseURL: "http://" + addr + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), userRequest("hi"))
	e := modelError(t, err)
	if e.Kind != model.ErrorTransient || e.Status != 0 || !strings.HasPrefix(e.Message, "connecting to the server: ") || !strings.Contains(e.Message, "refused") {
		t.Fatalf("error %+v", e)
	}
	if strings.Contains(e.Message, "http://") {
		t.Fatalf("the message holds the URL: %q", e.Message)
	}
}

func TestCleanMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000) // 4000 bytes
	got := clean("  "+long+"  ", nil)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > maxMessage+len("…") {
		t.Fatalf("clean cut %d bytes to %d: %q…", len(long), len(got), got[:20])
	}
	if got := clean("key abcd in abcd", secret.NewRedactor(map[string]string{"K": "abcd"})); got != "key [secret K] in [secret K]" {
		t.Fatalf("redacted %q", got)
	}
	if got := clean("a b c", secret.NewRedactor(map[string]string{"K": "a"})); got != "a b c" {
		t.Fatalf("a one-letter key garbled the message: %q", got)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeyFormsMasked has a server, or the transport, echo the key raw,
// base64-encoded and URL-encoded, and checks that the error's message shows
// the mask instead and that no error in its chain (a transport error's
// cause included) holds any form of the key.
func TestKeyFormsMasked(t *testing.T) {
	t.Parallel()
	const key = "sk-proj/CANARY+5f0c2a9e7b" // "/" and "+" differ in every form
	const keyEnv = "GANGLION_TEST_OPENAI_FORMS"
	forms := []struct{ name, text string }{
		{"raw", key},
		{"base64", base64.StdEncoding.EncodeToString([]byte(key))},
		{"URL-encoded", url.QueryEscape(key)},
	}
	const mask = "[secret " + keyEnv + "]"
	cfg := Config{APIKeyEnv: keyEnv}
	paths := []struct {
		name string
		// provider returns a provider whose calls echo form.
		provider func(t *testing.T, form string) *provider
		want     string // the error's text
	}{
		{"error status", func(t *testing.T, form string) *provider {
			p, _ := serve(t, cfg, status(401, nil, `{"error":{"message":"Incorrect API key provided: `+form+`","type":"invalid_request_error","code":"invalid_api_key"}}`))
			return p
		}, "openai: authentication failed (HTTP 401): Incorrect API key provided: " + mask},
		{"error in the stream", func(t *testing.T, form string) *provider {
			p, _ := serve(t, cfg, streaming(sse(ev(`{"content":"a"}`), `{"error":{"message":"failed for key `+form+`","type":"server_error"}}`)))
			return p
		}, "openai: transient error: failed for key " + mask},
		{"JSON error in a 200", func(t *testing.T, form string) *provider {
			p, _ := serve(t, cfg, status(200, nil, `{"error":{"message":"upstream refused key `+form+`","code":502}}`))
			return p
		}, "openai: transient error (HTTP 502): upstream refused key " + mask},
		{"transport error", func(t *testing.T, form string) *provider {
			c := cfg
			c.BaseURL, c.Model = "http://api.invalid/v1", "m"
			c.HTTPClient = &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return nil, errors.New("proxy refused key " + form)
			})}
			p, err := build(c)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, "openai: transient error: connecting to the server: proxy refused key " + mask},
	}
	for _, path := range paths {
		for _, form := range forms {
			t.Run(path.name+"/"+form.name, func(t *testing.T) {
				t.Parallel()
				req := userRequest("hi")
				req.Secret = func(name string) (string, bool) { return key, name == keyEnv }
				s, err := path.provider(t, form.text).Stream(context.Background(), req)
				if err == nil {
					for _, c := range collect(t, s) {
						if c.Kind == model.KindError {
							err = c.Err
						}
					}
				}
				if err == nil {
					t.Fatal("no error")
				}
				if err.Error() != path.want {
					t.Errorf("error\n got %s\nwant %s", err, path.want)
				}
				for e := err; e != nil; e = errors.Unwrap(e) {
					for _, text := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
						for _, f := range forms {
							if strings.Contains(text, f.text) {
								t.Errorf("the key (%s) is in %T: %s", f.name, e, text)
							}
						}
					}
				}
			})
		}
	}
}

// TestTransportErrorCause checks that a transport error whose text holds no
// form of the key stays the cause of the provider's error.
func TestTransportErrorCause(t *testing.T) {
	t.Parallel()
	refused := errors.New("proxy refused")
	p, err := build(Config{BaseURL: "http://api.invalid/v1", Model: "m", APIKeyEnv: "GANGLION_TEST_OPENAI_FORMS", HTTPClient: &http.Client{
		Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, refused }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("hi")
	req.Secret = func(string) (string, bool) { return "sk-proj-5f0c2a9e7b", true }
	_, err = p.Stream(context.Background(), req)
	if !errors.Is(err, refused) || model.KindOf(err) != model.ErrorTransient {
		t.Fatalf("error %v (%v) does not wrap %v as a transient error", err, model.KindOf(err), refused)
	}
}

package anthropic

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of error classification: HTTP statuses, error events, refused
// connections, retries and the API key kept out of every error.

const (
	body429      = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	body529      = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	body500      = `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	body401      = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`
	body403      = `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`
	body400      = `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`
	body400Ctx   = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`
	body404      = `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`
	body502Proxy = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>"
)

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      reply
		kind       model.ErrorKind
		sentinel   error
		retryAfter time.Duration
		text       string
	}{
		{"429", reply{status: 429, body: body429, header: map[string]string{"Retry-After": "7"}},
			model.ErrorRateLimit, model.ErrRateLimited, 7 * time.Second,
			"anthropic: rate limited (HTTP 429): Number of request tokens has exceeded your per-minute rate limit"},
		{"529 overloaded", reply{status: 529, body: body529},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 529): Overloaded"},
		{"500", reply{status: 500, body: body500},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 500): Internal server error"},
		{"502 from a proxy", reply{status: 502, body: body502Proxy},
			model.ErrorTransient, model.ErrTransient, 0, "anthropic: transient error (HTTP 502): <html> <head><title>502 Bad Gateway</title></head> <body>nginx</body> </html>"},
		{"401", reply{status: 401, body: body401},
			model.ErrorAuth, model.ErrAuth, 0, "anthropic: authentication failed (HTTP 401): invalid x-api-key"},
		{"403", reply{status: 403, body: body403},
			model.ErrorAuth, model.ErrAuth, 0, "anthropic: authentication failed (HTTP 403): Your API key does not have permission to use the specified resource."},
		{"400", reply{status: 400, body: body400},
			model.ErrorInvalidRequest, model.ErrInvalidRequest, 0, "anthropic: invalid request (HTTP 400): messages: text content blocks must be non-empty"},
		{"400 context window", reply{status: 400, body: body400Ctx},
			model.ErrorContextWindow, model.ErrContextWindow, 0, "anthropic: context window exceeded (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum"},
		{"404", reply{status: 404, body: body404},
			model.ErrorInvalidRequest, model.ErrInvalidRequest, 0, "anthropic: invalid request (HTTP 404): model: claude-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, tt.reply)
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if s != nil {
				t.Fatalf("stream returned with error %v", err)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %T %v is not a *model.Error", err, err)
			}
			if me.Kind != tt.kind || !errors.Is(err, tt.sentinel) {
				t.Errorf("kind = %v, want %v", me.Kind, tt.kind)
			}
			if me.Status != tt.reply.status {
				t.Errorf("status = %d", me.Status)
			}
			if me.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", me.RetryAfter, tt.retryAfter)
			}
			if err.Error() != tt.text {
				t.Errorf("error = %q\n want %q", err, tt.text)
			}
			if n := api.hitCount(); n != 1 {
				t.Errorf("%d requests, want 1: the provider must not retry", n)
			}
		})
	}
}

// retryPolicy retries without waiting and records the waits.
func retryPolicy(waits *[]time.Duration) model.RetryPolicy {
	return model.RetryPolicy{
		MaxRetries: 3,
		Sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return nil
		},
		Rand: func() float64 { return 0 },
	}
}

func TestWithRetry(t *testing.T) {
	text := []string{`text:"Hello"`, `text:"! Ça va? 😀"`, `text:" Line\nbreak."`, `usage:25/15/0/0`}
	tests := []struct {
		name    string
		replies []reply
		hits    int
		waits   []time.Duration
		want    []string
		openErr error // the error Stream returns instead
	}{
		{"429 then success",
			[]reply{{status: 429, body: body429, header: map[string]string{"Retry-After": "7"}}, {file: "text.sse"}},
			2, []time.Duration{7 * time.Second}, text, nil},
		{"529 then success",
			[]reply{{status: 529, body: body529}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"500 then success",
			[]reply{{status: 500, body: body500}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"error event before content then success",
			[]reply{{file: "error_first.sse"}, {file: "text.sse"}},
			2, []time.Duration{500 * time.Millisecond}, text, nil},
		{"error event after content is not retried",
			[]reply{{file: "error_midstream.sse"}, {file: "text.sse"}},
			1, nil, []string{`text:"Partial"`, `usage:25/1/0/0`, `error:transient error:anthropic: transient error: Overloaded`}, nil},
		{"401 is hit once",
			[]reply{{status: 401, body: body401}, {file: "text.sse"}},
			1, nil, nil, model.ErrAuth},
		{"context window is not retried",
			[]reply{{status: 400, body: body400Ctx}, {file: "text.sse"}},
			1, nil, nil, model.ErrContextWindow},
		{"retries run out",
			[]reply{{status: 529, body: body529}},
			4, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}, nil, model.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, tt.replies...)
			var waits []time.Duration
			p := model.WithRetry(newProvider(t, api.srv.URL, nil), retryPolicy(&waits))
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if tt.openErr != nil {
				if !errors.Is(err, tt.openErr) {
					t.Errorf("error = %v, want %v", err, tt.openErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				equalLines(t, shows(drain(t, s)), tt.want)
			}
			if n := api.hitCount(); n != tt.hits {
				t.Errorf("%d requests, want %d", n, tt.hits)
			}
			if !reflect.DeepEqual(waits, tt.waits) {
				t.Errorf("waits = %v, want %v", waits, tt.waits)
			}
		})
	}
}

// refusedURL is the address of a port that nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestConnectionRefused(t *testing.T) {
	p := newProvider(t, refusedURL(t), nil)
	_, err := p.Stream(context.Background(), userRequest("hi"))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.ErrorTransient || me.Status != 0 {
		t.Fatalf("error = %v, want a transient *model.Error", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error = %v", err)
	}
}

// TestKeyNeverLeaks makes every path fail with a canary key, the server
// echoing the key where it can, and looks for the key in every error.
func TestKeyNeverLeaks(t *testing.T) {
	const canary = "sk-ant-CANARY-7f3a9c1e5b"
	echo := func(s string) string { return strings.ReplaceAll(s, "KEY", canary) }
	midstream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"
	tests := []struct {
		name  string
		reply *reply // nil: connection refused
	}{
		{"401", &reply{status: 401, body: echo(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key KEY"}}`)}},
		{"429", &reply{status: 429, body: echo(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down, KEY"}}`), header: map[string]string{"Retry-After": "1"}}},
		{"529", &reply{status: 529, body: echo(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded KEY"}}`)}},
		{"400", &reply{status: 400, body: echo(`{"type":"error","error":{"type":"invalid_request_error","message":"bad request from KEY"}}`)}},
		{"400 context window", &reply{status: 400, body: echo(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long (KEY)"}}`)}},
		{"502 not JSON", &reply{status: 502, body: echo(`<html>x-api-key: KEY</html>`)}},
		{"error event", &reply{body: midstream + echo("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded KEY\"}}\n\n")}},
		{"error event not JSON", &reply{body: midstream + echo("event: error\ndata: KEY\n\n")}},
		{"cut stream", &reply{body: midstream}},
		{"connection refused", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := refusedURL(t)
			if tt.reply != nil {
				url = newFakeAPI(t, *tt.reply).srv.URL
			}
			var waits []time.Duration
			p := model.WithRetry(newProvider(t, url, nil), retryPolicy(&waits))
			req := userRequest("hi")
			req.Secret = secretOf(canary)
			var errs []error
			s, err := p.Stream(context.Background(), req)
			if err != nil {
				errs = append(errs, err)
			} else {
				for _, c := range drain(t, s) {
					if strings.Contains(show(c), canary) {
						t.Errorf("chunk %s holds the key", show(c))
					}
					if c.Err != nil {
						errs = append(errs, c.Err)
					}
				}
			}
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			for _, err := range errs {
				for e := err; e != nil; e = errors.Unwrap(e) {
					for _, text := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
						if strings.Contains(text, canary) {
							t.Errorf("error holds the key: %s", text)
						}
					}
				}
			}
		})
	}
}

func TestErrorEvents(t *testing.T) {
	tests := []struct {
		typ, msg string
		kind     model.ErrorKind
		text     string
	}{
		{"overloaded_error", "Overloaded", model.ErrorTransient, "anthropic: transient error: Overloaded"},
		{"api_error", "Internal server error", model.ErrorTransient, "anthropic: transient error: Internal server error"},
		{"rate_limit_error", "Rate limited", model.ErrorRateLimit, "anthropic: rate limited: Rate limited"},
		{"invalid_request_error", "tool_use ids must be unique", model.ErrorInvalidRequest, "anthropic: invalid request: tool_use ids must be unique"},
		{"invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", model.ErrorContextWindow, "anthropic: context window exceeded: prompt is too long: 210000 tokens > 200000 maximum"},
		{"authentication_error", "invalid x-api-key", model.ErrorAuth, "anthropic: authentication failed: invalid x-api-key"},
		{"permission_error", "not allowed", model.ErrorAuth, "anthropic: authentication failed: not allowed"},
		{"brand_new_error", "", model.ErrorOther, "anthropic: error: brand_new_error"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.msg, func(t *testing.T) {
			t.Parallel()
			data := fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, tt.typ, tt.msg)
			api := newFakeAPI(t, reply{body: sse("message_start", messageStart, "error", data)})
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, s)
			if len(got) != 1 || got[0].Kind != model.KindError {
				t.Fatalf("chunks %v, want one error", shows(got))
			}
			if k := model.KindOf(got[0].Err); k != tt.kind || got[0].Err.Error() != tt.text {
				t.Errorf("error %v (%v), want %s (%v)", got[0].Err, k, tt.text, tt.kind)
			}
		})
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeyFormsMasked has a server, or the transport, echo the key raw,
// base64-encoded and URL-encoded, and checks that the error's message shows
// the mask instead and that no error in its chain holds any form of the key.
func TestKeyFormsMasked(t *testing.T) {
	const key = "sk-ant/CANARY+7f3a9c1e5b" // "/" and "+" differ in every form
	forms := []struct{ name, text string }{
		{"raw", key},
		{"base64", base64.StdEncoding.EncodeToString([]byte(key))},
		{"URL-encoded", url.QueryEscape(key)},
	}
	const mask = "[secret " + testKeyEnv + "]"
	paths := []struct {
		name string
		// provider returns a provider whose calls echo form.
		provider func(t *testing.T, form string) *provider
		want     string // the error's text
	}{
		{"error status", func(t *testing.T, form string) *provider {
			api := newFakeAPI(t, reply{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + form + `"}}`})
			return newProvider(t, api.srv.URL, nil)
		}, "anthropic: authentication failed (HTTP 401): invalid x-api-key " + mask},
		{"error event", func(t *testing.T, form string) *provider {
			api := newFakeAPI(t, reply{body: sse("message_start", messageStart, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded for `+form+`"}}`)})
			return newProvider(t, api.srv.URL, nil)
		}, "anthropic: transient error: Overloaded for " + mask},
		{"error event not JSON", func(t *testing.T, form string) *provider {
			api := newFakeAPI(t, reply{body: sse("message_start", messageStart, "error", "key "+form)})
			return newProvider(t, api.srv.URL, nil)
		}, "anthropic: error: error event: key " + mask},
		{"transport error", func(t *testing.T, form string) *provider {
			hc := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return nil, errors.New("proxy refused key " + form)
			})}
			return newProvider(t, "http://api.invalid", func(c *Config) { c.HTTPClient = hc })
		}, `anthropic: transient error: Post "http://api.invalid/v1/messages": proxy refused key ` + mask},
	}
	for _, path := range paths {
		for _, form := range forms {
			t.Run(path.name+"/"+form.name, func(t *testing.T) {
				t.Parallel()
				req := userRequest("hi")
				req.Secret = secretOf(key)
				s, err := path.provider(t, form.text).Stream(context.Background(), req)
				if err == nil {
					for _, c := range drain(t, s) {
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

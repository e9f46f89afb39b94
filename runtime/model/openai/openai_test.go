package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Chunk constructors for expected sequences.

func text(s string) model.Chunk      { return model.Chunk{Kind: model.KindText, Text: s} }
func reasoning(s string) model.Chunk { return model.Chunk{Kind: model.KindReasoning, Text: s} }
func start(id, name string) model.Chunk {
	return model.Chunk{Kind: model.KindToolCallStart, ToolCallID: id, ToolName: name}
}
func delta(id, args string) model.Chunk {
	return model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: id, ArgumentsDelta: args}
}
func end(id string) model.Chunk { return model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: id} }
func usage(in, out, cached int64) model.Chunk {
	return model.Chunk{Kind: model.KindUsage, Usage: pipeline.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cached}}
}
func failure(kind model.ErrorKind, status int, msg string) model.Chunk {
	return model.Chunk{Kind: model.KindError, Err: &model.Error{Kind: kind, Provider: "openai", Status: status, Message: msg}}
}

// modelError returns the *model.Error err wraps, without its cause, for
// comparisons.
func modelError(t *testing.T, err error) model.Error {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	c := *e
	c.Err = nil
	return c
}

func checkChunks(t *testing.T, got, want []model.Chunk) {
	t.Helper()
	n := max(len(got), len(want))
	for i := range n {
		var g, w model.Chunk
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		ge, we := g.Err, w.Err
		g.Err, w.Err = nil, nil
		same := reflect.DeepEqual(g, w)
		if same && (ge != nil || we != nil) {
			same = ge != nil && we != nil && reflect.DeepEqual(modelError(t, ge), modelError(t, we))
		}
		if !same {
			t.Errorf("chunk %d:\n got %s\nwant %s", i, show(got, i), show(want, i))
		}
	}
}

func show(cs []model.Chunk, i int) string {
	if i >= len(cs) {
		return "(none)"
	}
	c := cs[i]
	s := fmt.Sprintf("%s text=%q id=%q name=%q args=%q usage=%+v", c.Kind, c.Text, c.ToolCallID, c.ToolName, c.ArgumentsDelta, c.Usage)
	if c.Err != nil {
		var e *model.Error
		if errors.As(c.Err, &e) {
			s += fmt.Sprintf(" err={kind=%q status=%d retry=%v msg=%q}", e.Kind, e.Status, e.RetryAfter, e.Message)
		} else {
			s += fmt.Sprintf(" err=%v", c.Err)
		}
	}
	return s
}

// collect receives every chunk of s, then closes it.
func collect(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	defer s.Close()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Recv after %d chunks: %v", len(out), err)
		}
		out = append(out, c)
	}
}

func readRecording(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeSSE streams data event by event, flushing after each.
func writeSSE(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, part := range bytes.SplitAfter(data, []byte("\n\n")) {
		w.Write(part)
		if f != nil {
			f.Flush()
		}
	}
}

// sse builds a stream from event data; an element starting with "event:"
// or ":" is written as it is.
func sse(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		if strings.HasPrefix(e, "event:") || strings.HasPrefix(e, ":") {
			b.WriteString(e)
		} else {
			b.WriteString("data: " + e)
		}
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// replay answers each request with the next of its answers (the last one
// repeats) and records what it received.
type replay struct {
	answers []http.HandlerFunc
	hits    atomic.Int32
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	n := int(r.hits.Add(1)) - 1
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.paths = append(r.paths, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	r.answers[min(n, len(r.answers)-1)](w, req)
}

func streaming(data []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeSSE(w, data) }
}

func recording(t testing.TB, name string) http.HandlerFunc { return streaming(readRecording(t, name)) }

func status(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ct := "application/json"
		if strings.HasPrefix(body, "<") {
			ct = "text/html"
		}
		w.Header().Set("Content-Type", ct)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// serve starts a server with the answers and a provider for it.
func serve(t *testing.T, cfg Config, answers ...http.HandlerFunc) (*provider, *replay) {
	t.Helper()
	r := &replay{answers: answers}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	cfg.HTTPClient = srv.Client()
	p, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

func userRequest(text string) *model.Request {
	return &model.Request{Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: text}}}
}

// TestAPIKey is not parallel: it sets environment variables.
func TestAPIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-must-not-be-sent")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/must-not-be-used")
	t.Setenv("GANGLION_TEST_OPENAI_KEY_ENV", "sk-from-env")
	t.Setenv("GANGLION_TEST_OPENAI_KEY_EMPTY", "")
	secret := func(name string) (string, bool) {
		if name == "GANGLION_TEST_OPENAI_KEY_EMPTY" {
			return "sk-from-secret", true
		}
		return "", false
	}
	cases := []struct {
		name   string
		env    string
		secret func(string) (string, bool)
		auth   string
		err    string
	}{
		{"from the environment", "GANGLION_TEST_OPENAI_KEY_ENV", secret, "Bearer sk-from-env", ""},
		{"from the secret", "GANGLION_TEST_OPENAI_KEY_EMPTY", secret, "Bearer sk-from-secret", ""},
		{"none needed", "", secret, "", ""},
		{"missing", "GANGLION_TEST_OPENAI_KEY_UNSET", secret, "", "openai: authentication failed: no API key: set GANGLION_TEST_OPENAI_KEY_UNSET or provide it"},
		{"missing, no secret function", "GANGLION_TEST_OPENAI_KEY_UNSET", nil, "", "openai: authentication failed: no API key: set GANGLION_TEST_OPENAI_KEY_UNSET or provide it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, r := serve(t, Config{APIKeyEnv: c.env}, recording(t, "text.sse"))
			req := userRequest("hi")
			req.Secret = c.secret
			s, err := p.Stream(context.Background(), req)
			if c.err != "" {
				if err == nil || err.Error() != c.err || !errors.Is(err, model.ErrAuth) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				if n := r.hits.Load(); n != 0 {
					t.Fatalf("server hit %d times", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			collect(t, s)
			h := r.headers[0]
			if got := h.Get("Authorization"); got != c.auth {
				t.Fatalf("Authorization = %q, want %q", got, c.auth)
			}
		})
	}
}

func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	p, _ := serve(t, Config{}, recording(t, "tool_calls_interleaved.sse"))
	var wg sync.WaitGroup
	var count atomic.Int32
	for range 8 {
		wg.Go(func() {
			for range 5 {
				s, err := p.Stream(context.Background(), userRequest("edit"))
				if err != nil {
					t.Error(err)
					return
				}
				got := collect(t, s)
				if len(got) != 11 || got[len(got)-1].Kind != model.KindUsage {
					t.Errorf("got %d chunks", len(got))
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if count.Load() != 40 {
		t.Fatalf("%d streams", count.Load())
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{BaseURL: "localhost:11434/v1"}, `openai: base URL "localhost:11434/v1" is not an absolute http or https URL`},
		{Config{BaseURL: "ftp://x/v1"}, `openai: base URL "ftp://x/v1" is not an absolute http or https URL`},
		{Config{BaseURL: "https://user:sk-secret@example.com/v1"}, "openai: base URL must not hold credentials: give the key through api_key_env"},
		{Config{MaxTokensField: "max"}, `openai: unknown max tokens field "max" (want "max_completion_tokens" or "max_tokens")`},
		{Config{MaxOutputTokens: -1}, "openai: max output tokens -1 is negative"},
		{Config{Headers: map[string]string{"authorization": "Bearer x"}}, "openai: the Authorization header comes from api_key_env, not from headers"},
	} {
		_, err := build(c.cfg)
		if err == nil || err.Error() != c.err {
			t.Errorf("build(%+v) = %v, want %q", c.cfg, err, c.err)
		}
	}
	for _, c := range []struct {
		cfg        Config
		completion bool
	}{
		{Config{}, true},
		{Config{BaseURL: "https://api.openai.com/v1/"}, true},
		{Config{BaseURL: "http://localhost:11434/v1"}, false},
		{Config{BaseURL: "http://localhost:11434/v1", MaxTokensField: maxCompletionTokens}, true},
		{Config{MaxTokensField: maxTokens}, false},
	} {
		p, err := build(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.completion != c.completion {
			t.Errorf("build(%+v): max_completion_tokens %v, want %v", c.cfg, p.completion, c.completion)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	p, r := serve(t, Config{Headers: map[string]string{"HTTP-Referer": "https://ganglion.dev", "X-Title": "Ganglion"}}, recording(t, "text.sse"))
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	if h := r.headers[0]; h.Get("HTTP-Referer") != "https://ganglion.dev" || h.Get("X-Title") != "Ganglion" {
		t.Fatalf("headers %v", h)
	}
}

package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// testKeyEnv names the key's variable in tests. No test sets it, so the
// key comes from Request.Secret unless a test says otherwise.
const testKeyEnv = "GANGLION_TEST_ANTHROPIC_KEY_UNSET"

const testKey = "sk-ant-test-key"

// reply is one canned HTTP response.
type reply struct {
	status int
	header map[string]string
	body   string // or file
	file   string // testdata/<file>
	// piece > 0 writes the body in pieces of that many bytes, flushing
	// each, so that reads end anywhere, also inside a UTF-8 character.
	piece int
	// hang, after the body, blocks until the client goes away.
	hang bool
	// linger, after the body, waits before ending the response.
	linger time.Duration
}

// fakeAPI is an Anthropic stand-in on loopback: it answers requests with
// its replies in turn (the last one again when they run out) and records
// what it received.
type fakeAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	replies []reply
	hits    int
	bodies  [][]byte
	headers []http.Header
	paths   []string
	remotes []string // the client's address of each request
}

func newFakeAPI(t *testing.T, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.remotes = append(f.remotes, r.RemoteAddr)
	rep := f.replies[min(f.hits, len(f.replies)-1)]
	f.hits++
	f.mu.Unlock()

	data := []byte(rep.body)
	if rep.file != "" {
		var err error
		if data, err = os.ReadFile("testdata/" + rep.file); err != nil {
			f.t.Errorf("fake API: %v", err)
			return
		}
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Request-Id", "req_011CTest")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	fl := w.(http.Flusher)
	if rep.piece <= 0 {
		w.Write(data)
	} else {
		for len(data) > 0 {
			n := min(rep.piece, len(data))
			w.Write(data[:n])
			fl.Flush()
			data = data[n:]
		}
	}
	fl.Flush()
	if rep.hang {
		<-r.Context().Done()
	}
	time.Sleep(rep.linger)
}

func (f *fakeAPI) hitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

func (f *fakeAPI) lastBody() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

func (f *fakeAPI) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[len(f.headers)-1]
}

func newProvider(t *testing.T, baseURL string, mod func(*Config)) *provider {
	t.Helper()
	cfg := Config{Model: "claude-test", BaseURL: baseURL, APIKeyEnv: testKeyEnv}
	if mod != nil {
		mod(&cfg)
	}
	p, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// secretOf is a Request.Secret that provides key as testKeyEnv.
func secretOf(key string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if name == testKeyEnv {
			return key, true
		}
		return "", false
	}
}

func userRequest(text string) *model.Request {
	return &model.Request{
		Agent:    "assistant",
		Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: text}},
		Secret:   secretOf(testKey),
	}
}

// show renders a chunk for comparisons.
func show(c model.Chunk) string {
	switch c.Kind {
	case model.KindText, model.KindReasoning:
		return fmt.Sprintf("%s:%q", c.Kind, c.Text)
	case model.KindToolCallStart:
		return fmt.Sprintf("start:%s:%s", c.ToolCallID, c.ToolName)
	case model.KindToolCallDelta:
		return fmt.Sprintf("delta:%s:%q", c.ToolCallID, c.ArgumentsDelta)
	case model.KindToolCallEnd:
		return "end:" + c.ToolCallID
	case model.KindUsage:
		u := c.Usage
		return fmt.Sprintf("usage:%d/%d/%d/%d", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	case model.KindError:
		return fmt.Sprintf("error:%s:%v", model.KindOf(c.Err), c.Err)
	}
	return c.Kind.String()
}

// drain reads s to its end, closing it.
func drain(t *testing.T, s model.Stream) []model.Chunk {
	t.Helper()
	defer s.Close()
	var out []model.Chunk
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		out = append(out, c)
		if len(out) > 1000 {
			t.Fatal("endless stream")
		}
	}
}

func shows(cs []model.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = show(c)
	}
	return out
}

func equalLines(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunks:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func TestAPIKey(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})

	t.Run("missing", func(t *testing.T) {
		p := newProvider(t, api.srv.URL, nil)
		req := userRequest("hi")
		req.Secret = nil
		_, err := p.Stream(context.Background(), req)
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.ErrorAuth {
			t.Fatalf("error = %v, want an auth *model.Error", err)
		}
		want := "anthropic: authentication failed: no API key: set " + testKeyEnv + " or provide it"
		if err.Error() != want {
			t.Errorf("error = %q\n want %q", err, want)
		}
		req.Secret = func(string) (string, bool) { return "", false }
		if _, err := p.Stream(context.Background(), req); !errors.Is(err, model.ErrAuth) {
			t.Errorf("error = %v with an unknown secret", err)
		}
		if n := api.hitCount(); n != 0 {
			t.Errorf("%d requests without a key", n)
		}
	})

	t.Run("environment first", func(t *testing.T) {
		const env = "GANGLION_TEST_ANTHROPIC_KEY_SET"
		t.Setenv(env, "sk-from-env")
		p := newProvider(t, api.srv.URL, func(c *Config) { c.APIKeyEnv = env })
		req := userRequest("hi")
		req.Secret = func(string) (string, bool) { return "sk-from-secret", true }
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if got := api.lastHeader().Get("X-Api-Key"); got != "sk-from-env" {
			t.Errorf("x-api-key = %q", got)
		}
	})

	t.Run("secret", func(t *testing.T) {
		p := newProvider(t, api.srv.URL, nil)
		var asked string
		req := userRequest("hi")
		req.Secret = func(name string) (string, bool) { asked = name; return "sk-from-secret", true }
		s, err := p.Stream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		if got := api.lastHeader().Get("X-Api-Key"); got != "sk-from-secret" || asked != testKeyEnv {
			t.Errorf("x-api-key = %q, secret asked: %q", got, asked)
		}
	})

	t.Run("default variable", func(t *testing.T) {
		p, err := build(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if p.cfg.APIKeyEnv != "ANTHROPIC_API_KEY" || p.cfg.BaseURL != "https://api.anthropic.com" {
			t.Errorf("defaults: %+v", p.cfg)
		}
	})
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []Config{
		{BaseURL: "api.anthropic.com"},
		{BaseURL: "ftp://x"},
		{BaseURL: "http://"},
		{Thinking: 1000},
		{Thinking: -1},
		{MaxOutputTokens: -1},
	} {
		if _, err := build(cfg); err == nil {
			t.Errorf("build(%+v) accepted", cfg)
		}
	}
}

// TestConnectionReuse: a stream read to its end leaves its connection to
// the next call.
func TestConnectionReuse(t *testing.T) {
	api := newFakeAPI(t, reply{file: "tool_use.sse", linger: 20 * time.Millisecond})
	p := newProvider(t, api.srv.URL, nil)
	for range 3 {
		s, err := p.Stream(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, s)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.remotes[0] != api.remotes[1] || api.remotes[1] != api.remotes[2] {
		t.Errorf("connections: %v, want one", api.remotes)
	}
}

// TestConcurrent runs tool loops with thinking at once, for the race
// detector.
func TestConcurrent(t *testing.T) {
	api := newFakeAPI(t, reply{file: "thinking_tool.sse", piece: 100})
	p := newProvider(t, api.srv.URL, func(c *Config) { c.Thinking = 1024 })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				req := userRequest("hi")
				req.Messages = pipeline.MessageSlice{
					{Role: pipeline.RoleUser, Content: "read a.txt"},
					{Role: pipeline.RoleAssistant, ToolCalls: []pipeline.ToolCall{{ID: "toolu_think1", Name: "read_file", Arguments: json.RawMessage(`{}`)}}},
					{Role: pipeline.RoleTool, ToolCallID: "toolu_think1", Content: "A"},
				}
				s, err := p.Stream(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				if got := drain(t, s); len(got) != 5 {
					t.Errorf("chunks: %v", shows(got))
				}
			}
		})
	}
	wg.Wait()
}

package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// modKey is the secret MOD_KEY provided to the instance of the HTTP tests.
const modKey = "s3cr3t-mod-key-value"

// httpRig is one WebAssembly extension that calls out over HTTP, in a
// pipeline of its own, and the loopback server it calls: every origin the
// guest names is dialled at the server, which sees which one in r.Host.
type httpRig struct {
	x      *wasm.Extension
	p      *pipeline.Pipeline
	srv    *httptest.Server
	client *http.Transport

	mu     sync.Mutex
	events []events.Event
	auth   []string // the Authorization headers the server saw
	logs   bytes.Buffer
}

// httpServer answers by path: /echo with what it was sent, /redirect with
// a redirect (code, to), /big with n bytes, /block only when the request
// ends (started is closed when it begins).
func (r *httpRig) handler(started chan struct{}) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		switch req.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(req.Body)
			w.Header().Set("X-Echo-Auth", req.Header.Get("Authorization"))
			fmt.Fprintf(w, "host=%s method=%s auth=%s guest=%s body=%s", req.Host, req.Method, req.Header.Get("Authorization"), req.Header.Get("X-Guest"), body)
		case "/redirect":
			code, _ := strconv.Atoi(req.URL.Query().Get("code"))
			http.Redirect(w, req, req.URL.Query().Get("to"), cmpOrInt(code, http.StatusFound))
		case "/big":
			n, _ := strconv.Atoi(req.URL.Query().Get("n"))
			w.Write(bytes.Repeat([]byte("x"), n))
		case "/block":
			if started != nil {
				once.Do(func() { close(started) })
			}
			<-req.Context().Done()
		default:
			http.NotFound(w, req)
		}
	})
}

func cmpOrInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

type secretsHost map[string]string

func (s secretsHost) Secret(_ context.Context, _, _, name string) (string, bool, error) {
	v, ok := s[name]
	return v, ok, nil
}

// newHTTPRig loads module (a path) with limits and grants, and starts the
// server; started is closed when a request reaches /block.
func newHTTPRig(t testing.TB, e *wasm.Engine, module string, limits wasm.Limits, grants wasm.Grants, started chan struct{}) *httpRig {
	t.Helper()
	r := &httpRig{}
	r.srv = httptest.NewServer(r.handler(started))
	t.Cleanup(r.srv.Close)
	addr := r.srv.Listener.Addr().String()
	r.client = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(r.client.CloseIdleConnections)
	x, err := e.Load(context.Background(), "fetcher", module, limits, grants)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus()
	bus.Subscribe("extension.http", func(ev events.Event) {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	})
	var b pipeline.Builder
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &r.mu, w: &r.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	api := extensions.NewAPI("fetcher", extensions.Host{Agent: "a", Builder: &b, Store: store.NewMemory(), Bus: bus, Logger: logger,
		Secrets: secretsHost{"MOD_KEY": modKey}, Grants: grants.Secrets, HTTP: r.client})
	if err := x.Register(api); err != nil {
		t.Fatal(err)
	}
	r.x = x
	r.p, err = b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			return &pipeline.TurnResult{FinishReason: pipeline.FinishText, Response: pipeline.Message{Role: pipeline.RoleAssistant, Content: "next"}}, nil
		},
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// turn runs a turn whose input is text.
func (r *httpRig) turn(ctx context.Context, text string) (string, error) {
	tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-1",
		Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: text}})
	res, err := r.p.RunTurn(ctx, tc)
	if err != nil {
		return "", err
	}
	return res.Response.Content, nil
}

// gohttpGrants grant what testdata/gohttp asks for: every method on
// granted.example, GET only on get.example:8080, and the secret.
var gohttpGrants = wasm.Grants{Secrets: []string{"MOD_KEY"}, HTTP: []wasm.HTTPGrant{
	{Origin: "http://granted.example"}, {Origin: "http://GET.example:8080", Methods: []string{"GET"}}}}

// TestGuestHTTP: a Go guest's requests, as the grant allows or refuses
// them, with the guest's own error code and the host's message.
func TestGuestHTTP(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, mods["gohttp"], wasm.Limits{}, gohttpGrants, nil)
	tests := []struct {
		name, req string
		want      string // the turn's answer, or its error's end
	}{
		{"get", `{"url":"http://granted.example/echo?q=1"}`, "200 host=granted.example method=GET auth= guest=gohttp body="},
		{"post with a body", `{"method":"POST","url":"http://granted.example/echo","body":"hello"}`, "200 host=granted.example method=POST auth= guest=gohttp body=hello"},
		{"the default port", `{"url":"http://granted.example:80/echo"}`, "200 host=granted.example:80 method=GET auth= guest=gohttp body="},
		{"origin not asked for", `{"url":"http://other.example/echo"}`, "[denied] http_request: origin http://other.example: the manifest's http does not list it"},
		{"another port", `{"url":"http://granted.example:8080/echo"}`, "[denied] http_request: origin http://granted.example:8080: the manifest's http does not list it"},
		{"another scheme", `{"url":"https://granted.example/echo"}`, "[denied] http_request: origin https://granted.example: the manifest's http does not list it"},
		{"method not granted", `{"method":"POST","url":"http://get.example:8080/echo","body":"x"}`,
			"[denied] http_request: POST to http://get.example:8080: the config grants only GET (add POST to its methods:)"},
		{"a method in lower case", `{"method":"post","url":"http://get.example:8080/echo","body":"x"}`,
			"[denied] http_request: POST to http://get.example:8080: the config grants only GET (add POST to its methods:)"},
		{"redirect within the grant", `{"url":"http://granted.example/redirect?to=http://get.example:8080/echo"}`,
			"200 host=get.example:8080 method=GET auth= guest=gohttp body="},
		{"303 after a POST", `{"method":"POST","body":"x","url":"http://granted.example/redirect?code=303&to=http://get.example:8080/echo"}`,
			"200 host=get.example:8080 method=GET auth= guest=gohttp body="},
		{"redirect out of the grant", `{"url":"http://granted.example/redirect?to=http://evil.example/echo"}`,
			"[failed] http_request: GET http://granted.example/redirect: redirect refused: origin http://evil.example: the manifest's http does not list it"},
		{"redirect to a method not granted", `{"method":"POST","body":"x","url":"http://granted.example/redirect?code=307&to=http://get.example:8080/echo"}`,
			"[failed] http_request: POST http://granted.example/redirect: redirect refused: POST to http://get.example:8080: the config grants only GET (add POST to its methods:)"},
		{"request too large", `{"method":"POST","url":"http://granted.example/echo","body":"b","repeat":1100000}`, "is over max_payload 1048576"},
		{"response too large", `{"url":"http://granted.example/big?n=1100000"}`, "[too large] http_request: the response body is over max_payload 1048576 bytes"},
		{"response within the bound", `{"url":"http://granted.example/big?n=1000"}`, "200 " + strings.Repeat("x", 1000)},
		{"timeout_ms", `{"url":"http://granted.example/block","timeout_ms":20}`, "[failed] http_request: GET http://granted.example/block: over the hook's deadline or timeout_ms"},
		{"not a URL", `{"url":"granted.example/echo"}`, `[invalid] http request: url "granted.example/echo": want an absolute http or https URL without user info`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.turn(context.Background(), tt.req)
			if err != nil {
				got = err.Error()
			}
			if !strings.HasSuffix(got, tt.want) {
				t.Errorf("turn = %q\nwant it to end with %q", got, tt.want)
			}
		})
	}
	// Each request sent is an event: what was asked of whom, without the
	// query.
	r.mu.Lock()
	defer r.mu.Unlock()
	first := r.events[0]
	data, _ := json.Marshal(first.Data)
	var d map[string]any
	json.Unmarshal(data, &d)
	if first.Source != "fetcher" || first.Instance != "k" || d["method"] != "GET" || d["url"] != "http://granted.example/echo" || d["status"] != float64(200) ||
		d["bytes"] != float64(len("host=granted.example method=GET auth= guest=gohttp body=")) {
		t.Errorf("first event %+v: %s", first, data)
	}
	// get, post, default port, 2 per redirect followed (3), the redirects
	// refused (2), the two big ones and the timed out one.
	if len(r.events) != 3+2*2+2+2+1 {
		for _, ev := range r.events {
			t.Logf("event %+v", ev.Data)
		}
		t.Errorf("%d events", len(r.events))
	}
}

// TestGuestHTTPSecretHeader: a secret the guest names goes into the
// request's header, placed by the host: the server sees it; the guest
// reads it masked, also where the server echoes it; no event or log
// holds it; a redirect to another origin drops it.
func TestGuestHTTPSecretHeader(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, mods["gohttp"], wasm.Limits{}, gohttpGrants, nil)
	got, err := r.turn(context.Background(), `{"url":"http://granted.example/echo","secret":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "200 host=granted.example method=GET auth=Bearer [secret] guest=gohttp body="; got != want {
		t.Errorf("the guest read %q, want %q", got, want)
	}
	got, err = r.turn(context.Background(), `{"url":"http://granted.example/redirect?to=http://get.example:8080/echo","secret":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := "200 host=get.example:8080 method=GET auth= guest=gohttp body="; got != want {
		t.Errorf("after a redirect to another origin the guest read %q, want %q", got, want)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if want := []string{"Bearer " + modKey, "Bearer " + modKey, ""}; strings.Join(r.auth, "|") != strings.Join(want, "|") {
		t.Errorf("the server saw Authorization %q, want %q", r.auth, want)
	}
	all, _ := json.Marshal(r.events)
	if strings.Contains(string(all), modKey) || strings.Contains(r.logs.String(), modKey) {
		t.Errorf("the secret leaked into the events (%s) or the logs (%s)", all, r.logs.String())
	}
}

// TestGuestHTTPCancelledWithTheTurn: a request in flight ends when the
// turn's context does, and only that hook call fails.
func TestGuestHTTPCancelledWithTheTurn(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	started := make(chan struct{})
	r := newHTTPRig(t, e, mods["gohttp"], wasm.Limits{}, gohttpGrants, started)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err = r.turn(ctx, `{"url":"http://granted.example/block"}`)
	if err == nil || !strings.Contains(err.Error(), "[failed] http_request: GET http://granted.example/block: context canceled") {
		t.Errorf("cancelled turn: %v", err)
	}
	if got, err := r.turn(context.Background(), `{"url":"http://granted.example/echo"}`); err != nil || !strings.HasPrefix(got, "200 ") {
		t.Errorf("the next turn: %q, %v", got, err)
	}
}

// TestGuestHTTPDeadline: a request's time counts against the hook's
// deadline: one that outlasts it fails the hook with the deadline.
func TestGuestHTTPDeadline(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, mods["gohttp"], wasm.Limits{Timeout: 300e6}, gohttpGrants, make(chan struct{}))
	_, err = r.turn(context.Background(), `{"url":"http://granted.example/block"}`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request past the deadline: %v, want a deadline error", err)
	}
	if got, err := r.turn(context.Background(), `{"url":"http://granted.example/echo"}`); err != nil || !strings.HasPrefix(got, "200 ") {
		t.Errorf("the next turn: %q, %v", got, err)
	}
}

// TestHostileHTTP: a guest that calls out to a host it was not granted,
// or follows a redirect out of its grant, is refused, and fails only its
// own call: the next call of the same extension goes through.
func TestHostileHTTP(t *testing.T) {
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, "testdata/hostile_http.wasm", wasm.Limits{}, wasm.Grants{HTTP: []wasm.HTTPGrant{{Origin: "http://granted.example"}}}, nil)
	for _, tt := range []struct{ name, req, want string }{
		{"a host not granted", `{"url":"http://evil.example/echo"}`, "http_request: origin http://evil.example: the manifest's http does not list it"},
		{"a redirect out of the grant", `{"url":"http://granted.example/redirect?to=http://evil.example/steal"}`,
			"http_request: GET http://granted.example/redirect: redirect refused: origin http://evil.example: the manifest's http does not list it"},
		{"a redirect to another port", `{"url":"http://granted.example/redirect?to=http://granted.example:81/steal"}`,
			"http_request: GET http://granted.example/redirect: redirect refused: origin http://granted.example:81: the manifest's http does not list it"},
		{"a secret not listed", `{"url":"http://granted.example/echo","secret_headers":{"X":{"secret":"MOD_KEY"}}}`,
			`http_request: secret "MOD_KEY": the manifest does not list it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.turn(context.Background(), tt.req)
			var ge *wasm.GuestError
			if !errors.As(err, &ge) || ge.Msg != tt.want {
				t.Errorf("turn: %v\nwant the guest's failure %q", err, tt.want)
			}
			if got, err := r.turn(context.Background(), `{"url":"http://granted.example/echo"}`); err != nil || got != "next" {
				t.Errorf("a granted call after it: %q, %v", got, err)
			}
		})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.auth {
		if a != "" {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
}

// TestGuestHTTPKeptAnswer: an answer too long for the guest's buffer is
// kept, and the guest's call again with the same request gets it without
// a second request (sdk/ABI.md, "Imports that act").
func TestGuestHTTPKeptAnswer(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, mods["gohttp"], wasm.Limits{}, gohttpGrants, nil)
	got, err := r.turn(context.Background(), `{"url":"http://granted.example/big?n=20000"}`)
	if err != nil || got != "200 "+strings.Repeat("x", 20000) {
		t.Fatalf("turn = %d bytes, %v", len(got), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.auth) != 1 || len(r.events) != 1 {
		t.Errorf("the server got %d requests, the bus %d events; want 1 and 1", len(r.auth), len(r.events))
	}
}

// BenchmarkHTTP: a request from a guest (hostile_http.wat's turn hook,
// which sends its input as the request and calls next) against the same
// request made natively through the same transport, to a loopback server.
// The difference is what the host adds: the hook call, the checks, the
// JSON both ways, the event. "paired" makes one of each per iteration, in
// turn, and reports the medians of each and of their differences, which
// a busy machine disturbs least; run the others interleaved:
//
//	go test -run '^$' -bench 'HTTP/paired' -count 10 ./extensions/wasm/
func BenchmarkHTTP(b *testing.B) {
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(b, e, "testdata/hostile_http.wasm", wasm.Limits{}, wasm.Grants{HTTP: []wasm.HTTPGrant{{Origin: "http://granted.example"}}}, nil)
	url := "http://granted.example/big?n=64"
	guest := func(b *testing.B) {
		if _, err := r.turn(context.Background(), `{"url":"`+url+`"}`); err != nil {
			b.Fatal(err)
		}
	}
	native := func(b *testing.B) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, http.NoBody)
		res, err := r.client.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(io.LimitReader(res.Body, 1<<20)); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
	b.Run("guest", func(b *testing.B) {
		for b.Loop() {
			guest(b)
		}
	})
	b.Run("native", func(b *testing.B) {
		for b.Loop() {
			native(b)
		}
	})
	b.Run("paired", func(b *testing.B) {
		var gs, ns, ds []float64
		for b.Loop() {
			t0 := time.Now()
			guest(b)
			t1 := time.Now()
			native(b)
			g, n := float64(t1.Sub(t0)), float64(time.Since(t1))
			gs, ns, ds = append(gs, g), append(ns, n), append(ds, g-n)
		}
		b.ReportMetric(median(gs), "guest-ns")
		b.ReportMetric(median(ns), "native-ns")
		b.ReportMetric(median(ds), "added-ns")
	})
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// TestGuestHTTPGrantsAtLoad: a module whose manifest asks for an origin
// the grants lack does not load, and the error names the grant to add; a
// grant that is no origin is refused as such.
func TestGuestHTTPGrantsAtLoad(t *testing.T) {
	mods, _ := guests.Build(t, goGuests...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tt := range []struct {
		name   string
		grants []wasm.HTTPGrant
		want   string
	}{
		{"one missing", []wasm.HTTPGrant{{Origin: "http://granted.example:80/"}},
			"its manifest asks for HTTP to origins the config does not grant: http://get.example:8080 (add them under the extension's http:)"},
		{"all missing", nil,
			"its manifest asks for HTTP to origins the config does not grant: http://granted.example, http://get.example:8080 (add them under the extension's http:)"},
		{"not an origin", []wasm.HTTPGrant{{Origin: "granted.example"}},
			`its config's http: "granted.example" is not an origin: want scheme://host[:port]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x, err := e.Load(context.Background(), "gohttp", mods["gohttp"], wasm.Limits{}, wasm.Grants{Secrets: []string{"MOD_KEY"}, HTTP: tt.grants})
			if err == nil {
				x.Close()
			}
			if err == nil || !strings.HasSuffix(err.Error(), ": "+tt.want) {
				t.Errorf("Load: %v\nwant it to end with %q", err, tt.want)
			}
		})
	}
}

// twinHTTPCases are the requests every SDK's twin of gohttp makes, and
// what each answers (guest is the twin's name): the same requests,
// refusals and masked secret.
func twinHTTPCases(guest string) []struct{ name, req, want string } {
	return []struct{ name, req, want string }{
		{"post with a body", `{"method":"POST","url":"http://granted.example/echo","body":"hello"}`, "200 host=granted.example method=POST auth= guest=" + guest + " body=hello"},
		{"a secret header", `{"url":"http://granted.example/echo","secret":true}`, "200 host=granted.example method=GET auth=Bearer [secret] guest=" + guest + " body="},
		{"origin not asked for", `{"url":"http://other.example/echo"}`, "[DENIED] http_request: origin http://other.example: the manifest's http does not list it"},
		{"method not granted", `{"method":"DELETE","url":"http://get.example:8080/echo"}`,
			"[DENIED] http_request: DELETE to http://get.example:8080: the config grants only GET (add DELETE to its methods:)"},
		{"redirect out of the grant", `{"url":"http://granted.example/redirect?to=http://evil.example/echo"}`,
			"[FAILED] http_request: GET http://granted.example/redirect: redirect refused: origin http://evil.example: the manifest's http does not list it"},
	}
}

// checkTwinHTTP runs twinHTTPCases through the guest of r.
func checkTwinHTTP(t *testing.T, r *httpRig, guest string) {
	t.Helper()
	for _, tt := range twinHTTPCases(guest) {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.turn(context.Background(), tt.req)
			if err != nil {
				got = err.Error()
			}
			if !strings.HasSuffix(got, tt.want) {
				t.Errorf("turn = %q\nwant it to end with %q", got, tt.want)
			}
		})
	}
}

// TestRustGuestHTTP: the Rust SDK's Http, through testdata/rusthttp, the
// twin of gohttp.
func TestRustGuestHTTP(t *testing.T) {
	mods, _ := rustGuests.Build(t, rustGuestDirs...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkTwinHTTP(t, newHTTPRig(t, e, mods["rusthttp"], wasm.Limits{}, gohttpGrants, nil), "rusthttp")
}

// TestAssemblyScriptGuestHTTP: the AssemblyScript SDK's Hook.http,
// through testdata/ashttp, the twin of gohttp, and an answer longer than
// the SDK's first buffer, read again from the kept answer without a second
// request.
func TestAssemblyScriptGuestHTTP(t *testing.T) {
	mods, _ := asGuests.Build(t, asGuestDirs...)
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := newHTTPRig(t, e, mods["ashttp"], wasm.Limits{}, gohttpGrants, nil)
	checkTwinHTTP(t, r, "ashttp")
	r.mu.Lock()
	before := len(r.auth)
	r.mu.Unlock()
	got, err := r.turn(context.Background(), `{"url":"http://granted.example/big?n=20000"}`)
	if err != nil || got != "200 "+strings.Repeat("x", 20000) {
		t.Fatalf("turn = %d bytes, %v", len(got), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.auth) - before; n != 1 {
		t.Errorf("the server got %d requests for one answer longer than the first buffer, want 1", n)
	}
}

// TestGuestHTTPThroughTheConfig: the config's http: grants reach the
// host: a module whose origin is granted (in another spelling of the same
// origin) loads, and its requests elsewhere are refused.
func TestGuestHTTPThroughTheConfig(t *testing.T) {
	rt := start(t, `[{wasm: testdata/hostile_http.wasm, http: ["HTTP://Granted.example:80", {origin: "https://api.example", methods: [GET]}]}]`, hostileScript)
	_, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(`{"url":"http://127.0.0.1:9/"}`))
	if err == nil || !strings.Contains(err.Error(), "http_request: origin http://127.0.0.1:9: the manifest's http does not list it") {
		t.Errorf("a request to an origin not granted: %v", err)
	}
}

package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// outage answers the first message of each text it is given 503 with a
// Retry-After, as a server whose store is unavailable for a moment
// does, and passes every other call to the server behind it. A message
// whose text says "started" is answered so as a turn that started and
// failed.
type outage struct {
	next http.Handler

	mu    sync.Mutex
	posts map[string]int // the messages' texts, and how often each was posted
}

func (o *outage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/messages") {
		o.next.ServeHTTP(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var text string
	if _, rest, ok := strings.Cut(string(b), `"text":"`); ok {
		text, _, _ = strings.Cut(rest, `"`)
	}
	o.mu.Lock()
	o.posts[text]++
	n := o.posts[text]
	o.mu.Unlock()
	switch {
	case strings.Contains(text, "started"):
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
		io.WriteString(w, `{"error": {"code": "unavailable", "status": 503, "message": "the store is unavailable for a moment; try again: commit", "result": {"turn_id": "turn-000009", "finish_reason": "error"}}}`)
	case n == 1:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
		io.WriteString(w, `{"error": {"code": "unavailable", "status": 503, "message": "the store is unavailable for a moment (a NATS server is down or electing a leader); try again: store: unavailable"}}`)
	default:
		o.next.ServeHTTP(w, r)
	}
}

// TestConsoleRetriesUnavailable drives the web console in a real
// headless Chromium against a server whose store is unavailable for a
// moment: a message answered 503 with a Retry-After is sent again after
// it, once, while a notice says so, and its answer shows; a message whose
// turn started is not sent again, and the chat says why.
func TestConsoleRetriesUnavailable(t *testing.T) {
	h := newHarness(t)
	o := &outage{next: h.srv, posts: map[string]int{}}
	ts := httptest.NewServer(o)
	t.Cleanup(ts.Close)
	ctx := browser(t) // after the server: the browser closes first, and its streams with it
	steps := []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"open the console", chromedp.Navigate(ts.URL + "/")},
		{"type the token", chromedp.SendKeys(chromedp.CSS("#token"), token)},
		{"connect", chromedp.Click(chromedp.CSS("#login button"))},
		{"see agent a", chromedp.WaitReady(chromedp.CSS(`#agent option[value="a"]`))},
		{"send a message", chromedp.SendKeys(chromedp.CSS("#text"), "hello there\r")},
		{"see the notice", chromedp.WaitVisible(`//p[@id="notice" and contains(., "The cluster is unavailable for a moment; retrying…")]`)},
		{"see the answer in the chat", chromedp.WaitVisible(`//ol[@id="messages"]/li[contains(., "echo hello there")]`)},
		{"see the notice go", chromedp.WaitNotVisible(chromedp.CSS("#notice"))},
		{"send a message whose turn starts", chromedp.SendKeys(chromedp.CSS("#text"), "it started\r")},
		{"see why it was not sent", chromedp.WaitVisible(`//ol[@id="messages"]/li[contains(., "Not sent: the store is unavailable for a moment; try again: commit")]`)},
	}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	for _, st := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Do(sctx, st.do)
		cancel()
		if err != nil {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("the console: %s: %v\npage:\n%.3000s", st.what, err, html)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.posts["hello there"] != 2 || o.posts["it started"] != 1 {
		t.Errorf("posts %v; want hello there twice (once again after the 503), it started once", o.posts)
	}
	if _, body := h.call("GET", "/v1/agents/a/instances/default/history", ""); strings.Count(body, `"content":"hello there"`) != 1 {
		t.Errorf("the history has hello there other than once: %s", body)
	}
}

package server_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ganglion-dev/ganglion/runtime"
)

// browser returns a headless Chromium context, or skips the test when no
// Chromium is installed (.ci/run installs Debian's).
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a real browser")
	}
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium installed (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Headless, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// TestConsole drives the web console in a real headless Chromium: a
// question the agent asks shows in the inbox, answered there it resumes
// the turn, and the resumed answer streams into the chat; a secret typed
// in the page reaches the tool and is in no page, API answer, event or
// stored message.
func TestConsole(t *testing.T) {
	data := t.TempDir() // badger on disk: the store is searched for the secret too
	h := newHarnessOn(t, []runtime.Option{runtime.WithDataDir(data)})
	ctx := browser(t) // after the harness: the browser closes first, and its streams with it
	// Every event, to look for the secret in.
	ectx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ectx, "GET", h.ts.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	evres, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var events strings.Builder
	evdone := make(chan struct{})
	go func() { io.Copy(&events, evres.Body); close(evdone) }()

	const secret = "s3cr3t-Typed-In-The-Page-77"
	item := func(kind string) string { return `//ol[@id="items"]//fieldset[contains(legend, "` + kind + `")]` }
	steps := []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"open the console", chromedp.Navigate(h.ts.URL + "/")},
		{"type the token", chromedp.SendKeys(chromedp.CSS("#token"), token)},
		{"connect", chromedp.Click(chromedp.CSS("#login button"))},
		{"see the app", chromedp.WaitVisible(chromedp.CSS("#app"))},
		{"see agent a", chromedp.WaitReady(chromedp.CSS(`#agent option[value="a"]`))},
		// By keyboard alone: the message box has the focus, Enter sends.
		{"type a message and press Enter", chromedp.SendKeys(chromedp.CSS("#text"), "hello there\r")},
		{"see the answer in the chat", chromedp.WaitVisible(`//ol[@id="messages"]/li[contains(., "echo hello there")]`)},
		// A question: answered in the inbox, the turn resumes into the chat.
		{"type a message", chromedp.SendKeys(chromedp.CSS("#text"), "ask me")},
		{"send it", chromedp.Click(chromedp.CSS("#send button"))},
		{"see the question in the inbox", chromedp.WaitVisible(item("question"))},
		{"answer Left", chromedp.Click(item("question") + `//button[starts-with(normalize-space(.), "Left")]`)},
		{"see the resumed answer in the chat", chromedp.WaitVisible(`//ol[@id="messages"]/li[contains(., "You chose")]`)},
		// A secret: typed into the dependency's password field.
		{"ask for a key", chromedp.SendKeys(chromedp.CSS("#text"), "need a key")},
		{"send it", chromedp.Click(chromedp.CSS("#send button"))},
		{"see the dependency in the inbox", chromedp.WaitVisible(item("dependency"))},
		{"type the secret", chromedp.SendKeys(item("dependency")+`//input[@type="password"]`, secret)},
		{"provide it", chromedp.Click(item("dependency") + `//button[normalize-space(.)="Provide"]`)},
		{"see the tool's answer in the chat", chromedp.WaitVisible(`//ol[@id="messages"]/li[contains(., "The tool says")]`)},
	}
	// The browser starts with the test's context, not a step's, or the
	// step's end would close it.
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
	chat, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#messages")))
	if err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(chat, "You chose Answer to your question") || !strings.Contains(chat, "27 bytes") {
		t.Errorf("the chat shows:\n%s", chat)
	}
	cancel()
	<-evdone
	var seen []string
	seen = append(seen, page, events.String())
	for _, path := range []string{"/v1/pending?all=true", "/v1/agents/a/instances/default/history", "/v1/agents/a/instances/default/history?effective=true", "/v1/tasks"} {
		_, b := h.call("GET", path, "")
		seen = append(seen, b)
	}
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Errorf("the secret shows in:\n%.2000s", s)
		}
	}
	if !strings.Contains(events.String(), "pending.provided") {
		t.Errorf("no pending.provided event seen")
	}
	// Nor is it in the store's files in clear (it is kept encrypted).
	h.rt.Close()
	filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret is in clear in the store's file %s", path)
		}
		return nil
	})
}

// TestConsoleFiles: the console's files, with headers that keep other
// sites out; the API stays behind its token.
func TestConsoleFiles(t *testing.T) {
	h := newHarness(t)
	for path, ctype := range map[string]string{"/": "text/html; charset=utf-8", "/console.js": "text/javascript; charset=utf-8", "/console.css": "text/css; charset=utf-8"} {
		res, err := http.Get(h.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != ctype || len(b) == 0 ||
			!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s = %d %v", path, res.StatusCode, res.Header)
		}
	}
	if res, _ := http.Get(h.ts.URL + "/nothing"); res.StatusCode != 404 {
		t.Errorf("GET /nothing = %d", res.StatusCode)
	}
	if res, _ := http.Post(h.ts.URL+"/", "text/plain", nil); res.StatusCode != 405 {
		t.Errorf("POST / = %d", res.StatusCode)
	}
}

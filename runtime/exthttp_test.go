package runtime_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// TestExtensionHTTP: an extension's request through its API's HTTP is a
// client span under its layer's, named by its method, with its URL but
// not its query or headers, and an extension.http event.
func TestExtensionHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") }))
	defer srv.Close()
	fetcher := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/check?token=t0p", strings.NewReader("x"))
				req.Header.Set("Authorization", "Bearer s3cr3t")
				res, err := api.HTTP.Do(req, t.InstanceKey())
				if err != nil {
					return nil, err
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return t.Next(ctx)
			})
			return nil
		}), nil
	}
	tp, sr := traced(t)
	h := newHarness(t, `
agents:
  - name: a
    extensions: [{name: fetcher}]
`, `
agents:
  a:
    fallback: {steps: [{text: done}]}
`, runtime.WithTracerProvider(tp), runtime.WithExtension("fetcher", fetcher))
	var mu sync.Mutex
	var got []events.Event
	h.rt.Events().Subscribe("extension.http", func(ev events.Event) {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})
	h.mustSend("a", "k", "hi")
	tree := spanTree(sr.Ended(), "ganglion.extension", "http.request.method", "url.full", "http.response.status_code")
	want := "  turn fetcher ganglion.extension=fetcher\n    POST ganglion.extension=fetcher http.request.method=POST url.full=" + srv.URL + "/check http.response.status_code=200\n"
	if !strings.Contains(tree, want) {
		t.Errorf("span tree:\n%s\nwant it to hold:\n%s", tree, want)
	}
	if strings.Contains(tree, "t0p") || strings.Contains(tree, "s3cr3t") {
		t.Errorf("the query or a header is in a span:\n%s", tree)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d extension.http events, want 1", len(got))
	}
	d := got[0].Data.(map[string]any)
	if got[0].Source != "fetcher" || got[0].Instance != "k" || d["method"] != "POST" || d["url"] != srv.URL+"/check" || d["status"] != 200 || d["bytes"] != int64(4) {
		t.Errorf("event %+v", got[0])
	}
}

package extensions

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// httpTopic is the topic of the event each outbound request of an
// extension publishes (docs/extensions.md, "Events").
const httpTopic = "extension.http"

// HTTP sends requests, each a span and an extension.http event.
type HTTP struct {
	transport http.RoundTripper
	events    *Events
}

// Do sends req for instance, following no redirect.
func (h *HTTP) Do(req *http.Request, instance string) (*http.Response, error) {
	rt := h.transport // nil: Host gave none
	if rt == nil {
		rt = http.DefaultTransport
	}
	start := time.Now()
	res, err := rt.RoundTrip(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query and all
		}
		h.publish(req, instance, start, 0, 0, err)
		return nil, err
	}
	// The event is published when the body is closed.
	res.Body = &httpBody{ReadCloser: res.Body, done: func(n int64) { h.publish(req, instance, start, res.StatusCode, n, nil) }}
	return res, nil
}

// publish publishes the event of one request: what was asked of whom,
// never its query, headers or bodies, which may hold secrets.
func (h *HTTP) publish(req *http.Request, instance string, start time.Time, status int, n int64, err error) {
	data := map[string]any{"method": req.Method, "url": req.URL.Scheme + "://" + req.URL.Host + req.URL.EscapedPath(),
		"status": status, "duration_ms": float64(time.Since(start).Microseconds()) / 1000, "bytes": n}
	if err != nil {
		data["error"] = err.Error()
	}
	h.events.Publish(httpTopic, instance, data)
}

// httpBody counts what is read of a response body, and calls done once,
// at Close.
type httpBody struct {
	io.ReadCloser
	n    int64
	once sync.Once
	done func(n int64)
}

func (b *httpBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *httpBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(b.n) })
	return err
}

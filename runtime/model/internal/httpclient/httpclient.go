// Package httpclient holds the HTTP client the built-in networked model
// providers use when their config gives none.
package httpclient

import (
	"net/http"
	"time"
)

// New returns Go's default transport, with a bound of 10 minutes on the
// wait for response headers, so that a server that accepts a connection
// and never answers cannot hang a call forever. The body of a stream has
// no time limit but its context's.
func New() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 10 * time.Minute
		return &http.Client{Transport: t}
	}
	return &http.Client{Transport: http.DefaultTransport}
}

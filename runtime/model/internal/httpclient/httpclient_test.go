package httpclient

import (
	"net/http"
	"testing"
	"time"
)

// TestNew: the client bounds the wait for headers, on a copy of the
// default transport that leaves the default as it was.
func TestNew(t *testing.T) {
	c := New()
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.ResponseHeaderTimeout != 10*time.Minute {
		t.Fatalf("transport = %#v, want a *http.Transport with a 10 minute header timeout", c.Transport)
	}
	if tr == http.DefaultTransport || http.DefaultTransport.(*http.Transport).ResponseHeaderTimeout != 0 {
		t.Error("New changed http.DefaultTransport")
	}
}

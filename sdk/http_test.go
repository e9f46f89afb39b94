//go:build !wasip1

package ganglion

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHTTP: a request goes out as the ABI's JSON (a binary body in
// base64), an answer too long for the buffer is asked for again with the
// very same request, and a body in base64 comes back as bytes.
func TestHTTP(t *testing.T) {
	f := newFake().use(t)
	long := strings.Repeat("b", 2*initialBuf)
	f.answers = []string{`{"status":200,"headers":{"Content-Type":"text/plain"},"body":"` + long + `"}`, `{"status":201,"headers":{},"body_base64":"AP8="}`}
	c := &hook{3}
	res, err := c.HTTP(HTTPRequest{Method: "POST", URL: "https://mod.example/v1", Header: map[string]string{"Accept": "text/plain"},
		SecretHeader: map[string]SecretHeader{"Authorization": {Secret: "MOD_KEY", Prefix: "Bearer "}}, Body: []byte("hi"), Timeout: time.Second})
	if err != nil || res.Status != 200 || string(res.Body) != long || res.Header["Content-Type"] != "text/plain" {
		t.Fatalf("HTTP = %d, %d bytes, %v, %v", res.Status, len(res.Body), res.Header, err)
	}
	req := `http_request {"method":"POST","url":"https://mod.example/v1","headers":{"Accept":"text/plain"},` +
		`"secret_headers":{"Authorization":{"secret":"MOD_KEY","prefix":"Bearer "}},"body":"hi","timeout_ms":1000}`
	if len(f.hostReqs) != 2 || f.hostReqs[0] != req || f.hostReqs[1] != req {
		t.Errorf("requests %q, want twice %s", f.hostReqs, req)
	}
	f.hostReqs = nil
	res, err = c.HTTP(HTTPRequest{URL: "https://mod.example/bin", Body: []byte{0, 0xff}})
	if err != nil || res.Status != 201 || !bytes.Equal(res.Body, []byte{0, 0xff}) {
		t.Fatalf("HTTP = %d, %q, %v", res.Status, res.Body, err)
	}
	if want := `http_request {"url":"https://mod.example/bin","body_base64":"AP8="}`; f.hostReqs[0] != want {
		t.Errorf("request %s, want %s", f.hostReqs[0], want)
	}
	f.codes["http_request"] = int32(CodeDenied)
	if _, err := c.HTTP(HTTPRequest{URL: "https://other.example"}); !errors.Is(err, ErrDenied) {
		t.Errorf("refused HTTP = %v", err)
	}
}

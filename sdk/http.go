package ganglion

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// HTTPRequest is a request a hook sends with [Context].HTTP (ABI version
// 2), to an origin the manifest lists in [Manifest].HTTP and the agent's
// config grants under the extension's http:.
type HTTPRequest struct {
	// Method is the request's method; "" is GET.
	Method string
	// URL is absolute, http or https.
	URL string
	// Header holds the request's headers, one value each.
	Header map[string]string
	// SecretHeader sets headers to a secret's value, which the host
	// places: the guest never reads it. The manifest lists each secret in
	// [Manifest].Secrets.
	SecretHeader map[string]SecretHeader
	// Body is the request's body.
	Body []byte
	// Timeout bounds the request; 0 (or more than is left): what is left
	// of the hook's deadline, which the request's time counts against.
	Timeout time.Duration
}

// SecretHeader is a header whose value is a secret, after Prefix
// ("Bearer ").
type SecretHeader struct {
	Secret string `json:"secret"`
	Prefix string `json:"prefix,omitempty"`
}

// HTTPResponse is the answer to an [HTTPRequest]: the last one, after the
// redirects the host followed within the grant.
type HTTPResponse struct {
	Status int
	// Header holds the response's headers, several values joined by ", ".
	Header map[string]string
	Body   []byte
}

// httpWire is an HTTPRequest or an HTTPResponse as the http_request import
// reads and answers it: a body that is UTF-8 goes as text, another in
// base64.
type httpWire struct {
	Status        int                     `json:"status,omitempty"`
	Method        string                  `json:"method,omitempty"`
	URL           string                  `json:"url,omitempty"`
	Headers       map[string]string       `json:"headers,omitempty"`
	SecretHeaders map[string]SecretHeader `json:"secret_headers,omitempty"`
	Body          *string                 `json:"body,omitempty"`
	BodyBase64    *string                 `json:"body_base64,omitempty"`
	TimeoutMS     int64                   `json:"timeout_ms,omitempty"`
}

// HTTP sends req and returns the response. Refusals are [*Error]s: an
// origin or method not granted is [ErrDenied], a response over the
// extension's max_payload [ErrTooLarge], a failed request or a redirect
// out of the grant [ErrFailed]. A hook call may send at most 16 requests
// (sdk/ABI.md, "Limits").
func (c *hook) HTTP(req HTTPRequest) (HTTPResponse, error) {
	w := httpWire{Method: req.Method, URL: req.URL, Headers: req.Header, SecretHeaders: req.SecretHeader, TimeoutMS: req.Timeout.Milliseconds()}
	if req.Body != nil {
		if utf8.Valid(req.Body) {
			s := string(req.Body)
			w.Body = &s
		} else {
			s := base64.StdEncoding.EncodeToString(req.Body)
			w.BodyBase64 = &s
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return HTTPResponse{}, fmt.Errorf("ganglion: http_request: %w", err)
	}
	ans, err := read("http_request", func(buf []byte) int32 { return host.httpRequest(c.h, b, buf) })
	if err != nil {
		return HTTPResponse{}, err
	}
	var a httpWire
	if err := json.Unmarshal(ans, &a); err != nil {
		return HTTPResponse{}, fmt.Errorf("ganglion: http_request: %w", err)
	}
	res := HTTPResponse{Status: a.Status, Header: a.Headers}
	switch {
	case a.Body != nil:
		res.Body = []byte(*a.Body)
	case a.BodyBase64 != nil:
		if res.Body, err = base64.StdEncoding.DecodeString(*a.BodyBase64); err != nil {
			return HTTPResponse{}, fmt.Errorf("ganglion: http_request: %w", err)
		}
	}
	return res, nil
}

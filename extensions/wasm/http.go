package wasm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/extensions"
)

// The http_request import (ABI version 2) lets a guest call the origins
// its manifest lists and the agent's config grants (sdk/ABI.md, "HTTP").
// The host checks every request, and every redirect, against the grant;
// places the secrets the guest names in headers without the guest reading
// them; bounds what goes out and what comes back; and sends it through
// the extension's [extensions.HTTP], which makes each request a span and
// an event.

// HTTPGrant lets an extension call one origin.
type HTTPGrant struct {
	// Origin is scheme://host[:port], http or https.
	Origin string
	// Methods are the methods allowed, upper case; none allows all.
	Methods []string
}

// Per hook call (with the calls nested in it), a guest may make at most
// maxHTTPCalls requests, of maxHTTPBytes of request JSON in all.
// Redirects followed count as one request.
const (
	maxHTTPCalls = 16
	maxHTTPBytes = 4 << 20
	// maxRedirects is the most redirects one request follows.
	maxRedirects = 10
)

// httpRequest is the request of http_request.
type httpRequest struct {
	Method        string                  `json:"method"`
	URL           string                  `json:"url"`
	Headers       map[string]string       `json:"headers"`
	SecretHeaders map[string]secretHeader `json:"secret_headers"`
	Body          *string                 `json:"body"`
	BodyBase64    *string                 `json:"body_base64"`
	TimeoutMS     int64                   `json:"timeout_ms"`
}

// secretHeader is a header whose value is a secret, with a prefix.
type secretHeader struct {
	Secret string `json:"secret"`
	Prefix string `json:"prefix"`
}

// httpResponse is the answer of http_request: the body as text when it is
// UTF-8, else in base64.
type httpResponse struct {
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 *string           `json:"body_base64,omitempty"`
}

// parseOrigin returns the origin s names, in its canonical form (scheme
// and host in lower case, no default port).
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an origin: want scheme://host[:port]", s)
	}
	return originOf(u)
}

// originOf returns the canonical origin of u.
func originOf(u *url.URL) (string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", errors.New("no host")
	}
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host, nil
}

// checkManifestHTTP refuses a manifest's http field if it names what is
// not an origin, or the manifest's ABI version predates it.
func checkManifestHTTP(m *Manifest) error {
	if len(m.HTTP) == 0 {
		return nil
	}
	if m.ABI < 2 {
		return errors.New("manifest: http needs abi 2")
	}
	for i, o := range m.HTTP {
		c, err := parseOrigin(o)
		if err != nil {
			return fmt.Errorf("manifest: http: %w", err)
		}
		m.HTTP[i] = c
	}
	return nil
}

// checkHTTPGrants refuses an extension whose manifest asks for origins
// the config does not grant, and puts the grants' origins in canonical
// form, which requests are checked against.
func (x *Extension) checkHTTPGrants() error {
	grants := make([]HTTPGrant, len(x.grants.HTTP))
	for i, g := range x.grants.HTTP {
		o, err := parseOrigin(g.Origin)
		if err != nil {
			return fmt.Errorf("its config's http: %w", err)
		}
		grants[i] = HTTPGrant{Origin: o, Methods: g.Methods}
	}
	x.grants.HTTP = grants
	var missing []string
	for _, o := range x.manifest.HTTP {
		if _, ok := x.httpGrant(o); !ok {
			missing = append(missing, o)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("its manifest asks for HTTP to origins the config does not grant: %s (add them under the extension's http:)", strings.Join(missing, ", "))
	}
	return nil
}

// httpGrant returns the grant of origin o (canonical).
func (x *Extension) httpGrant(o string) (HTTPGrant, bool) {
	for _, g := range x.grants.HTTP {
		if g.Origin == o {
			return g, true
		}
	}
	return HTTPGrant{}, x.grants.All
}

// allowHTTP returns "" if the manifest and the grant allow method to
// origin o, else why not.
func (in *instance) allowHTTP(method, o string) string {
	if !slices.Contains(in.x.manifest.HTTP, o) {
		return fmt.Sprintf("origin %s: the manifest's http does not list it", o)
	}
	g, ok := in.x.httpGrant(o)
	if !ok {
		return fmt.Sprintf("origin %s: the config does not grant it (add it under the extension's http:)", o)
	}
	if len(g.Methods) > 0 && !slices.Contains(g.Methods, method) {
		return fmt.Sprintf("%s to %s: the config grants only %s (add %s to its methods:)", method, o, strings.Join(g.Methods, ", "), method)
	}
	return ""
}

func hostHTTP(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	b, code := in.read(p[1], p[2], "http request")
	if code != 0 {
		return code
	}
	if code := in.buffer(p[3], p[4]); code != 0 {
		return code
	}
	if val, ok := f.takeKept("http_request", b); ok {
		return in.answer(f, "http_request", b, p[3], p[4], val)
	}
	var req httpRequest
	if err := decodeStrict(b, &req); err != nil {
		return in.fail(codeInvalid, "http request: %v", err)
	}
	// Methods are upper case, as the grants write them: "post" is POST.
	method := strings.ToUpper(cmp.Or(req.Method, http.MethodGet))
	u, err := url.Parse(req.URL)
	if err != nil || !u.IsAbs() || u.User != nil {
		return in.fail(codeInvalid, "http request: url %q: want an absolute http or https URL without user info", req.URL)
	}
	o, err := originOf(u)
	if err != nil {
		return in.fail(codeInvalid, "http request: url %q: %v", req.URL, err)
	}
	if why := in.allowHTTP(method, o); why != "" {
		return in.fail(codeDenied, "http_request: %s", why)
	}
	var body []byte
	switch {
	case req.Body != nil && req.BodyBase64 != nil:
		return in.fail(codeInvalid, "http request: body and body_base64 together")
	case req.Body != nil:
		body = []byte(*req.Body)
	case req.BodyBase64 != nil:
		if body, err = base64.StdEncoding.DecodeString(*req.BodyBase64); err != nil {
			return in.fail(codeInvalid, "http request: body_base64: %v", err)
		}
	}
	if req.TimeoutMS < 0 {
		return in.fail(codeInvalid, "http request: timeout_ms must not be negative")
	}
	header := http.Header{}
	for k, v := range req.Headers {
		if strings.EqualFold(k, "Host") {
			return in.fail(codeInvalid, "http request: the Host header is the URL's")
		}
		header.Set(k, v)
	}
	var secrets, secretKeys []string // the values placed, masked in the answer
	for k, s := range req.SecretHeaders {
		if !slices.Contains(in.x.manifest.Secrets, s.Secret) {
			return in.fail(codeDenied, "http_request: secret %q: the manifest does not list it", s.Secret)
		}
		v, found, err := in.x.api.Secrets.Get(f.ctx, f.instanceKey(), s.Secret)
		switch {
		case errors.Is(err, extensions.ErrNotGranted):
			return in.fail(codeDenied, "http_request: %v", err)
		case err != nil:
			return in.fail(codeFailed, "http_request: %v", err)
		case !found:
			return in.fail(codeNotFound, "http_request: secret %q was not provided to instance %q", s.Secret, f.instanceKey())
		}
		header.Set(k, s.Prefix+v)
		secretKeys = append(secretKeys, k)
		if v != "" {
			secrets = append(secrets, v)
		}
	}
	if code := in.spend("http_request", "requests", &in.spent.http, &in.spent.httpBytes, len(b), maxHTTPCalls, maxHTTPBytes); code != 0 {
		return code
	}
	// The request's time is the guest's: it is bounded by what is left of
	// the hook's deadline (and by timeout_ms), and the turn's end cancels it.
	left := time.Duration(in.deadline.Load() - in.x.clock.Load())
	if req.TimeoutMS > 0 {
		left = min(left, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	if left <= 0 {
		return in.fail(codeFailed, "http_request: no time left before the hook's deadline")
	}
	ctx, cancel := context.WithTimeout(f.ctx, left)
	defer cancel()
	res, code := in.sendHTTP(ctx, f, method, u, header, body, secretKeys)
	if code != 0 {
		return code
	}
	out, code := in.readHTTP(res, secrets)
	if code != 0 {
		return code
	}
	val, err := json.Marshal(out)
	if err != nil {
		return in.fail(codeFailed, "http_request: encode the answer: %v", err)
	}
	return in.answer(f, "http_request", b, p[3], p[4], val)
}

// sendHTTP sends the request and follows its redirects within the grant.
// Secret headers go to the request's own origin only: a redirect to
// another origin drops them, as Go's client drops Authorization.
func (in *instance) sendHTTP(ctx context.Context, f *frame, method string, u *url.URL, header http.Header, body []byte, secretKeys []string) (*http.Response, int32) {
	first, _ := originOf(u)
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
		if err != nil {
			return nil, in.fail(codeInvalid, "http request: %v", err)
		}
		req.Header = header
		res, err := in.x.api.HTTP.Do(req, f.instanceKey())
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				return nil, in.fail(codeFailed, "http_request: %s %s: over the hook's deadline or timeout_ms", method, redacted(u))
			}
			return nil, in.fail(codeFailed, "http_request: %s %s: %v", method, redacted(u), err)
		}
		loc := res.Header.Get("Location")
		if !isRedirect(res.StatusCode) || loc == "" {
			return res, 0
		}
		res.Body.Close()
		if hop == maxRedirects {
			return nil, in.fail(codeFailed, "http_request: %s %s: more than %d redirects", method, redacted(u), maxRedirects)
		}
		next, err := u.Parse(loc)
		if err != nil {
			return nil, in.fail(codeFailed, "http_request: %s %s: redirect to %q: %v", method, redacted(u), loc, err)
		}
		// As Go's client: 301, 302 and 303 go on without the body, as a
		// GET unless the request was a GET or a HEAD; 307 and 308 repeat
		// the request.
		if res.StatusCode != http.StatusTemporaryRedirect && res.StatusCode != http.StatusPermanentRedirect {
			body = nil
			if method != http.MethodGet && method != http.MethodHead {
				method = http.MethodGet
			}
		}
		o, err := originOf(next)
		if err != nil {
			return nil, in.fail(codeFailed, "http_request: %s %s: redirect refused: %v", method, redacted(u), err)
		}
		if why := in.allowHTTP(method, o); why != "" {
			return nil, in.fail(codeFailed, "http_request: %s %s: redirect refused: %s", method, redacted(u), why)
		}
		if len(secretKeys) > 0 && o != first {
			header = header.Clone()
			for _, k := range secretKeys {
				header.Del(k)
			}
			secretKeys = nil
		}
		u = next
	}
}

// isRedirect reports whether status asks the client to go elsewhere.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// redacted is u without its query, for messages.
func redacted(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// readHTTP reads the response within max_payload, with the secrets the
// request carried masked.
func (in *instance) readHTTP(res *http.Response, secrets []string) (httpResponse, int32) {
	defer res.Body.Close()
	limit := in.x.limits.MaxPayload
	b, err := io.ReadAll(io.LimitReader(res.Body, int64(limit)+1))
	if err != nil {
		return httpResponse{}, in.fail(codeFailed, "http_request: read the response: %v", err)
	}
	if len(b) > limit {
		return httpResponse{}, in.fail(codeTooLarge, "http_request: the response body is over max_payload %d bytes", limit)
	}
	mask := func(s string) string {
		for _, v := range secrets {
			s = strings.ReplaceAll(s, v, "[secret]")
		}
		return s
	}
	out := httpResponse{Status: res.StatusCode, Headers: make(map[string]string, len(res.Header))}
	for k, vs := range res.Header {
		out.Headers[k] = mask(strings.Join(vs, ", "))
	}
	if utf8.Valid(b) {
		s := mask(string(b))
		out.Body = &s
	} else {
		for _, v := range secrets {
			b = bytes.ReplaceAll(b, []byte(v), []byte("[secret]"))
		}
		s := base64.StdEncoding.EncodeToString(b)
		out.BodyBase64 = &s
	}
	return out, 0
}

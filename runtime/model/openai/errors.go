package openai

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	oa "github.com/openai/openai-go/v3"

	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Classifying failures: opening the stream, HTTP statuses, the server's
// error objects and network errors, with the API key masked by the
// provider's [secret.Redactor].

// maxErrorBody bounds the bytes of an error response read for its message.
const maxErrorBody = 1 << 20

// maxMessage bounds the length of a server's message in an error.
const maxMessage = 2048

func invalid(msg string) *model.Error {
	return &model.Error{Kind: model.ErrorInvalidRequest, Provider: providerName, Message: msg}
}

// openError classifies a failure to open the stream.
func openError(ctx context.Context, err error, resp *http.Response, red *secret.Redactor) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if resp != nil && resp.StatusCode >= 400 {
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
		}
		w := errorFromBody(body)
		var ae *oa.Error
		if errors.As(err, &ae) {
			// The SDK read OpenAI's shape already; prefer its fields.
			if ae.Message != "" {
				w.message = ae.Message
			}
			if ae.Code != "" {
				w.code = ae.Code
			}
		}
		return httpError(resp.StatusCode, resp.Header, w, red)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	var ae *oa.Error
	if errors.As(err, &ae) {
		return httpError(ae.StatusCode, nil, wireError{message: ae.Message, code: ae.Code, typ: ae.Type}, red)
	}
	if isNetworkError(err) {
		return networkError("connecting to the server", err, red)
	}
	return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: red.Redact(err.Error()), Err: cause(err, red)}
}

// cause is err, to wrap in a [*model.Error], unless its text holds the key
// in a form red masks.
func cause(err error, red *secret.Redactor) error {
	if s := err.Error(); red.Redact(s) != s {
		return nil
	}
	return err
}

// httpError is the error of an HTTP error status.
func httpError(status int, h http.Header, w wireError, red *secret.Redactor) *model.Error {
	kind := model.StatusKind(status)
	switch {
	case kind == model.ErrorInvalidRequest && model.IsContextWindowMessage(w.code+" "+w.message):
		kind = model.ErrorContextWindow
	case status == http.StatusTooManyRequests && (w.code == "insufficient_quota" || w.code == "billing_hard_limit_reached"):
		// A 429 that waiting does not cure: the account is out of credit.
		kind = model.ErrorAuth
	}
	msg := w.message
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &model.Error{
		Kind:       kind,
		Provider:   providerName,
		Status:     status,
		RetryAfter: model.RetryAfter(h, time.Now()),
		Message:    clean(msg, red),
	}
}

// notStreamed is the error of a 2xx answer in JSON instead of events.
func notStreamed(resp *http.Response, red *secret.Redactor) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	w := errorFromBody(body)
	if w.present {
		return &model.Error{Kind: w.kind(), Provider: providerName, Status: int(w.status), Message: clean(w.text(), red)}
	}
	return &model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "the server answered in JSON, not with an event stream: does it support streaming?"}
}

// errorFromBody reads the error of an error response in the shapes
// servers use; a body that is not JSON gives nothing.
func errorFromBody(body []byte) wireError {
	var w wireError
	var p parser
	p.b = body
	p.errorBody(&w)
	if p.err != nil {
		return wireError{}
	}
	return w
}

// isNetworkError reports whether err is a failure of the connection.
func isNetworkError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded)
}

// networkError is the transient error of a failed connection. Its message
// is the underlying error's, without the URL that net/http puts in front.
func networkError(what string, err error, red *secret.Redactor) *model.Error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := inner.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "request timed out"
	}
	return &model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: what + ": " + red.Redact(msg), Err: cause(inner, red)}
}

// clean bounds a server's message and masks the key in it.
func clean(msg string, red *secret.Redactor) string {
	msg = strings.TrimSpace(red.Redact(msg))
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// wireError is a server's error object.
type wireError struct {
	present bool
	message string
	code    string // a string, or a number's text
	typ     string
	status  int64 // an HTTP status found in code or status
}

func (w wireError) text() string {
	switch {
	case w.message != "":
		return w.message
	case w.code != "":
		return w.code
	case w.typ != "":
		return w.typ
	}
	return "the server reported an error"
}

// kind classifies an error object by its content.
func (w wireError) kind() model.ErrorKind {
	if model.IsContextWindowMessage(w.code + " " + w.message) {
		return model.ErrorContextWindow
	}
	if w.status >= 400 && w.status < 600 {
		return model.StatusKind(int(w.status))
	}
	words := strings.ToLower(w.code + " " + w.typ)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(words, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("rate_limit", "rate limit", "ratelimit", "too_many_requests"):
		return model.ErrorRateLimit
	case has("server_error", "internal", "overloaded", "unavailable", "timeout"):
		return model.ErrorTransient
	case has("auth", "invalid_api_key", "permission"):
		return model.ErrorAuth
	case has("invalid_request", "badrequest", "bad_request", "not_found", "notfound"):
		return model.ErrorInvalidRequest
	}
	return model.ErrorOther
}

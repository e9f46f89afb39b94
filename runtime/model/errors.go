package model

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorKind classifies a provider's failure; the kind decides what the
// runtime does about it.
type ErrorKind uint8

// The kinds of provider errors.
const (
	// ErrorOther is a failure no other kind describes; it is not retried.
	ErrorOther ErrorKind = iota
	// ErrorContextWindow: the request does not fit the model's context
	// window. Not retried as is: the history must shrink first (the
	// condensation extension's business).
	ErrorContextWindow
	// ErrorRateLimit: too many requests (HTTP 429). Retried after the
	// server's Retry-After, else after an exponential backoff.
	ErrorRateLimit
	// ErrorTransient: a network failure, a server error (5xx) or an
	// overloaded model. Retried after an exponential backoff.
	ErrorTransient
	// ErrorAuth: the key is missing, wrong or not allowed (401, 403). Not
	// retried.
	ErrorAuth
	// ErrorInvalidRequest: the provider refused the request (400, 404,
	// 422...), for another reason than its size. Not retried.
	ErrorInvalidRequest
)

var errorKindNames = [...]string{"error", "context window exceeded", "rate limited", "transient error", "authentication failed", "invalid request"}

// String names the kind as error messages do ("rate limited").
func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) {
		return errorKindNames[k]
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// retryable reports whether a call that failed with this kind may succeed
// if made again unchanged.
func (k ErrorKind) retryable() bool { return k == ErrorRateLimit || k == ErrorTransient }

// Sentinels that an [*Error] matches with errors.Is, by kind:
// errors.Is(err, model.ErrContextWindow) holds for any error wrapping an
// *Error of kind ErrorContextWindow.
var (
	ErrContextWindow  = errors.New("context window exceeded")
	ErrRateLimited    = errors.New("rate limited")
	ErrTransient      = errors.New("transient error")
	ErrAuth           = errors.New("authentication failed")
	ErrInvalidRequest = errors.New("invalid request")
)

var kindSentinels = map[ErrorKind]error{
	ErrorContextWindow:  ErrContextWindow,
	ErrorRateLimit:      ErrRateLimited,
	ErrorTransient:      ErrTransient,
	ErrorAuth:           ErrAuth,
	ErrorInvalidRequest: ErrInvalidRequest,
}

// Error is a classified provider failure. Providers return it from Stream,
// or in a [KindError] chunk. Its text never holds a key: providers build
// Message from the server's error message, not from the request.
type Error struct {
	Kind ErrorKind
	// Provider names the provider ("openai", "anthropic").
	Provider string
	// Status is the HTTP status, 0 when the failure had none (a network
	// error, a stream cut short).
	Status int
	// RetryAfter is how long the server asked to wait (Retry-After,
	// retry-after-ms), 0 if it did not say.
	RetryAfter time.Duration
	// Message is the server's explanation, or what went wrong.
	Message string
	// Err is the underlying error, if any.
	Err error
}

// Error reads "openai: rate limited (HTTP 429): message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's kind.
func (e *Error) Is(target error) bool {
	s, ok := kindSentinels[e.Kind]
	return ok && s == target
}

// KindOf returns the kind of the [*Error] err wraps, or ErrorOther.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ErrorOther
}

// StatusKind classifies an HTTP error status: 429 rate limit, 408, 409 and
// 5xx (529 is Anthropic's "overloaded") transient, 401 and 403 auth, other
// 4xx invalid request. A provider that recognises a context-window error
// in the body says so itself: servers report it as a plain 400.
func StatusKind(status int) ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return ErrorRateLimit
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		return ErrorTransient
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return ErrorAuth
	case status >= 400:
		return ErrorInvalidRequest
	}
	return ErrorOther
}

// RetryAfter reads how long a response asks the client to wait: the
// retry-after-ms header (OpenAI's), else Retry-After in seconds or as an
// HTTP date (relative to now). It returns 0 when neither is there or
// readable, or the time has passed.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// contextPhrases are how servers say a request is too long for the model,
// in OpenAI-compatible servers (OpenAI, vLLM, Ollama, LM Studio, OpenRouter)
// and Anthropic; lower case.
var contextPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"prompt is too long",
	"too many tokens",
	"exceed context limit",
	"exceeds the context",
	"input is too long",
	"reduce the length",
}

// IsContextWindowMessage reports whether a server's error message (or
// code) says the request is too long for the model's context window.
func IsContextWindowMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, p := range contextPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

package telemetry

import (
	"io"
	"net/http"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// HTTP returns the transport of extension ext's outbound requests
// (extensions.Host.HTTP): each request is a client span, from its start
// to the close of its response body, named by its method after the HTTP
// conventions. Its URL goes in without the query, and no header does: a
// guest's secret headers stay out. nil when t traces nothing, for the
// default transport.
func (t *T) HTTP(ext string) http.RoundTripper {
	if t == nil || !t.tracing {
		return nil
	}
	return &httpTransport{t: t, ext: keyExtension.String(ext), next: http.DefaultTransport}
}

type httpTransport struct {
	t    *T
	ext  attribute.KeyValue
	next http.RoundTripper
}

func (h *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := h.t.tracer.Start(req.Context(), req.Method, kindClient)
	if span.IsRecording() {
		u := req.URL
		attrs := []attribute.KeyValue{h.ext, semconv.HTTPRequestMethodKey.String(req.Method),
			semconv.URLFull(u.Scheme + "://" + u.Host + u.EscapedPath()), semconv.ServerAddress(u.Hostname())}
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
		span.SetAttributes(attrs...)
	}
	res, err := h.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(res.StatusCode))
	if res.StatusCode >= 500 {
		span.SetStatus(codes.Error, res.Status)
	}
	res.Body = &spanBody{ReadCloser: res.Body, span: span}
	return res, nil
}

// spanBody ends its span when the body is closed.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	once sync.Once
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.span.End() })
	return err
}

package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// flaky fails its first calls as told, then streams "ok".
type flaky struct {
	mu    sync.Mutex
	fails []error // per call: an error at open, or (wrapped in firstChunk) as the first chunk
	calls int
}

type firstChunk struct{ err error }

func (f firstChunk) Error() string { return "first chunk: " + f.err.Error() }

func (f *flaky) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if len(f.fails) > 0 {
		err := f.fails[0]
		f.fails = f.fails[1:]
		var fc firstChunk
		if errors.As(err, &fc) {
			return &chunks{list: []model.Chunk{{Kind: model.KindError, Err: fc.err}}}, nil
		}
		return nil, err
	}
	return &chunks{list: []model.Chunk{{Kind: model.KindText, Text: "ok"}, {Kind: model.KindText, Text: "!"}}}, nil
}

type chunks struct {
	list   []model.Chunk
	closed bool
}

func (c *chunks) Recv() (model.Chunk, error) {
	if len(c.list) == 0 {
		return model.Chunk{}, io.EOF
	}
	ch := c.list[0]
	c.list = c.list[1:]
	return ch, nil
}

func (c *chunks) Close() error { c.closed = true; return nil }

func drainText(t *testing.T, s model.Stream) string {
	t.Helper()
	var b strings.Builder
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Kind == model.KindError {
			fmt.Fprintf(&b, "[error: %v]", c.Err)
			continue
		}
		b.WriteString(c.Text)
	}
}

func TestWithRetry(t *testing.T) {
	rate := &model.Error{Kind: model.ErrorRateLimit, Provider: "p", Status: 429, RetryAfter: 7 * time.Second, Message: "slow down"}
	rateNoHint := &model.Error{Kind: model.ErrorRateLimit, Provider: "p", Status: 429}
	server := &model.Error{Kind: model.ErrorTransient, Provider: "p", Status: 500, Message: "oops"}
	auth := &model.Error{Kind: model.ErrorAuth, Provider: "p", Status: 401, Message: "bad key"}
	ctxWin := &model.Error{Kind: model.ErrorContextWindow, Provider: "p", Status: 400, Message: "too long"}
	huge := &model.Error{Kind: model.ErrorRateLimit, Provider: "p", Status: 429, RetryAfter: time.Hour}
	tests := []struct {
		name       string
		fails      []error
		maxRetries int
		want       string // the stream's text, or "error: ..." from Stream
		calls      int
		waits      []time.Duration
	}{
		{"no failure", nil, 0, "ok!", 1, nil},
		{"429 honours Retry-After", []error{rate}, 0, "ok!", 2, []time.Duration{7 * time.Second}},
		{"429 without a hint backs off", []error{rateNoHint, rateNoHint, rateNoHint}, 0, "ok!", 4, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}},
		{"500 then success", []error{server}, 0, "ok!", 2, []time.Duration{750 * time.Millisecond}},
		{"a failure as the first chunk is retried", []error{firstChunk{server}}, 0, "ok!", 2, []time.Duration{750 * time.Millisecond}},
		{"401 is not retried", []error{auth}, 0, "error: p: authentication failed (HTTP 401): bad key", 1, nil},
		{"a context-window error is not retried", []error{ctxWin}, 0, "error: p: context window exceeded (HTTP 400): too long", 1, nil},
		{"an unclassified error is not retried", []error{errors.New("boom")}, 0, "error: boom", 1, nil},
		{"a non-retryable first chunk is handed over", []error{firstChunk{auth}}, 0, "[error: p: authentication failed (HTTP 401): bad key]", 1, nil},
		{"bounded", []error{server, server, server}, 2, "error: p: transient error (HTTP 500): oops", 3, []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond}},
		{"bounded, the last failure as a chunk", []error{firstChunk{server}, firstChunk{server}}, 1, "[error: p: transient error (HTTP 500): oops]", 2, []time.Duration{750 * time.Millisecond}},
		{"no retries", []error{server}, -1, "error: p: transient error (HTTP 500): oops", 1, nil},
		{"Retry-After is capped", []error{huge}, 0, "ok!", 2, []time.Duration{model.MaxBackoff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{fails: tt.fails}
			var waits []time.Duration
			var infos []model.RetryInfo
			p := model.WithRetry(f, model.RetryPolicy{MaxRetries: tt.maxRetries,
				Sleep:   func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
				Rand:    func() float64 { return 0.5 },
				OnRetry: func(i model.RetryInfo) { infos = append(infos, i) }})
			s, err := p.Stream(context.Background(), &model.Request{Agent: "a"})
			got := ""
			if err != nil {
				got = "error: " + err.Error()
			} else {
				got = drainText(t, s)
				s.Close()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if f.calls != tt.calls {
				t.Errorf("%d calls, want %d", f.calls, tt.calls)
			}
			if fmt.Sprint(waits) != fmt.Sprint(tt.waits) {
				t.Errorf("waits %v, want %v", waits, tt.waits)
			}
			if len(infos) != len(tt.waits) {
				t.Fatalf("%d retry events, want %d", len(infos), len(tt.waits))
			}
			for i, in := range infos {
				if in.Attempt != i+1 || in.Delay != tt.waits[i] || in.Err == nil || in.Request.Agent != "a" {
					t.Errorf("retry %d = %+v", i, in)
				}
			}
		})
	}
}

// TestWithRetryCancel: cancelling the call stops the wait at once.
func TestWithRetryCancel(t *testing.T) {
	f := &flaky{fails: []error{&model.Error{Kind: model.ErrorRateLimit, RetryAfter: time.Hour}}}
	ctx, cancel := context.WithCancel(context.Background())
	p := model.WithRetry(f, model.RetryPolicy{OnRetry: func(model.RetryInfo) { cancel() }})
	_, err := p.Stream(ctx, &model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if f.calls != 1 {
		t.Errorf("%d calls, want 1", f.calls)
	}
}

func TestErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		status int
		kind   model.ErrorKind
		is     error
	}{
		{429, model.ErrorRateLimit, model.ErrRateLimited},
		{500, model.ErrorTransient, model.ErrTransient},
		{503, model.ErrorTransient, model.ErrTransient},
		{529, model.ErrorTransient, model.ErrTransient},
		{408, model.ErrorTransient, model.ErrTransient},
		{401, model.ErrorAuth, model.ErrAuth},
		{403, model.ErrorAuth, model.ErrAuth},
		{400, model.ErrorInvalidRequest, model.ErrInvalidRequest},
		{404, model.ErrorInvalidRequest, model.ErrInvalidRequest},
	} {
		k := model.StatusKind(tt.status)
		if k != tt.kind {
			t.Errorf("StatusKind(%d) = %v, want %v", tt.status, k, tt.kind)
		}
		err := fmt.Errorf("turn: %w", &model.Error{Kind: k, Status: tt.status})
		if !errors.Is(err, tt.is) || model.KindOf(err) != tt.kind {
			t.Errorf("%d: errors.Is(%v) false or KindOf = %v", tt.status, tt.is, model.KindOf(err))
		}
		if errors.Is(err, model.ErrContextWindow) {
			t.Errorf("%d matches ErrContextWindow", tt.status)
		}
	}
	if model.KindOf(errors.New("x")) != model.ErrorOther {
		t.Error("KindOf of a plain error")
	}
	for msg, want := range map[string]bool{
		"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.": true,
		"context_length_exceeded":                            true,
		"prompt is too long: 210000 tokens > 200000 maximum": true,
		"input length and `max_tokens` exceed context limit": true,
		"Invalid API key":                                    false,
		"rate limit reached for requests":                    false,
	} {
		if got := model.IsContextWindowMessage(msg); got != want {
			t.Errorf("IsContextWindowMessage(%q) = %v", msg, got)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{"Retry-After": {"12"}}, 12 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
	} {
		if got := model.RetryAfter(tt.h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

package model

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"time"
)

// Defaults of [RetryPolicy].
const (
	defaultMaxRetries = 5
	defaultBaseDelay  = time.Second
	// maxBackoff caps any wait, Retry-After included: 600 s.
	maxBackoff = 600 * time.Second
)

// RetryPolicy says how [WithRetry] retries a failed model call.
type RetryPolicy struct {
	// MaxRetries bounds the retries of one call (not counting the first
	// try). Zero means 5; a negative value, none.
	MaxRetries int
	// BaseDelay is the first backoff; each retry doubles it, up to
	// MaxDelay. Zero means 1 s.
	BaseDelay time.Duration
	// MaxDelay caps a wait, Retry-After included. Zero means 600 s.
	MaxDelay time.Duration
	// OnRetry, if set, is told of each retry before its wait.
	OnRetry func(RetryInfo)

	// Hooks for tests: the wait (default: a timer that ctx cancels) and
	// the jitter's random source (default math/rand/v2).
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64
}

// RetryInfo describes one retry.
type RetryInfo struct {
	Request *Request
	// Attempt is the retry's number, from 1.
	Attempt int
	// MaxRetries is the policy's bound.
	MaxRetries int
	// Delay is the wait before it; FromServer says it is the server's
	// Retry-After.
	Delay      time.Duration
	FromServer bool
	// Err is the failure that caused it.
	Err error
}

// WithRetry returns p retrying the calls that fail with a retryable
// [*Error] (rate limit, transient), as policy says: after the server's
// Retry-After when it gave one, else after an exponential backoff with
// jitter, never longer than MaxDelay. A call is retried only while nothing
// of its response has been delivered: a failure when the stream opens, or
// as its first chunk. Once a chunk went out, a later failure ends the
// stream as it is. Cancelling the call's context stops a wait at once.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	if policy.MaxRetries == 0 {
		policy.MaxRetries = defaultMaxRetries
	}
	if policy.BaseDelay <= 0 {
		policy.BaseDelay = defaultBaseDelay
	}
	if policy.MaxDelay <= 0 {
		policy.MaxDelay = maxBackoff
	}
	if policy.Sleep == nil {
		policy.Sleep = sleep
	}
	if policy.Rand == nil {
		policy.Rand = rand.Float64
	}
	return &retrying{p: p, policy: policy}
}

type retrying struct {
	p      Provider
	policy RetryPolicy
}

func (r *retrying) Stream(ctx context.Context, req *Request) (Stream, error) {
	for attempt := 0; ; attempt++ {
		s, first, err := r.open(ctx, req)
		if err == nil {
			return s, nil
		}
		var e *Error
		if !errors.As(err, &e) || !e.Kind.retryable() || attempt >= r.policy.MaxRetries {
			if s != nil {
				// The first chunk was the failure: hand it over as such.
				return &replay{Stream: s, first: first, has: true}, nil
			}
			return nil, err
		}
		if s != nil {
			s.Close()
		}
		d, fromServer := r.delay(attempt+1, e)
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(RetryInfo{Request: req, Attempt: attempt + 1, MaxRetries: r.policy.MaxRetries, Delay: d, FromServer: fromServer, Err: err})
		}
		if err := r.policy.Sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// open opens a stream and reads its first chunk. On success it returns
// the stream replaying that chunk. A failure to open returns err alone; a
// first chunk that is an error returns the stream, the chunk and the
// chunk's error.
func (r *retrying) open(ctx context.Context, req *Request) (Stream, Chunk, error) {
	s, err := r.p.Stream(ctx, req)
	if err != nil {
		return nil, Chunk{}, err
	}
	c, err := s.Recv()
	switch {
	case err == io.EOF:
		return &replay{Stream: s, eof: true}, Chunk{}, nil
	case err != nil:
		s.Close()
		return nil, Chunk{}, err
	case c.Kind == KindError && c.Err != nil:
		return s, c, c.Err
	}
	return &replay{Stream: s, first: c, has: true}, Chunk{}, nil
}

// delay is the wait before retry n (from 1) after e.
func (r *retrying) delay(n int, e *Error) (time.Duration, bool) {
	if e.RetryAfter > 0 {
		return min(e.RetryAfter, r.policy.MaxDelay), true
	}
	d := r.policy.BaseDelay << min(n-1, 30)
	if d <= 0 || d > r.policy.MaxDelay {
		d = r.policy.MaxDelay
	}
	// Equal jitter: half fixed, half random, so waits of many clients
	// spread out without collapsing to nothing.
	return d/2 + time.Duration(r.policy.Rand()*float64(d/2)), false
}

// replay is a stream whose first chunk was read already.
type replay struct {
	Stream
	first Chunk
	has   bool
	eof   bool
}

func (s *replay) Recv() (Chunk, error) {
	switch {
	case s.has:
		s.has = false
		return s.first, nil
	case s.eof:
		return Chunk{}, io.EOF
	}
	return s.Stream.Recv()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

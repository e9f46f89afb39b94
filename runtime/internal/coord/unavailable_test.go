package coord

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
)

// TestUnavailableClassifies: what nobody answered becomes
// store.ErrUnavailable; a deadline that is not the caller's stops
// matching context.DeadlineExceeded; the caller's own end, and other
// failures, stay as they are.
func TestUnavailableClassifies(t *testing.T) {
	alive := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name                       string
		ctx                        context.Context
		err                        error
		unavailable, deadline, out bool
		text                       string
	}{
		{name: "nil", ctx: alive, err: nil},
		{name: "no responders", ctx: alive, err: fmt.Errorf("cluster: lease on %q: %w", "a/k", nats.ErrNoResponders),
			unavailable: true, text: `cluster: lease on "a/k": nats: no responders available for request (store: unavailable)`},
		{name: "no response from stream", ctx: alive, err: jetstream.ErrNoStreamResponse, unavailable: true},
		{name: "request's own bound", ctx: alive, err: fmt.Errorf("take it: %w", context.DeadlineExceeded),
			unavailable: true, text: "take it: context deadline exceeded (no answer in time: store: unavailable)"},
		{name: "store's own, with its bound", ctx: alive,
			err:         fmt.Errorf("commit: %w: %w: %w", store.ErrUnavailable, store.ErrOutcomeUnknown, context.DeadlineExceeded),
			unavailable: true, out: true},
		{name: "store's own", ctx: alive, err: fmt.Errorf("fence: %w", store.ErrUnavailable), unavailable: true,
			text: "fence: store: unavailable"},
		{name: "caller's deadline", ctx: ended, err: fmt.Errorf("take it: %w", context.DeadlineExceeded), deadline: true},
		{name: "a refusal", ctx: alive, err: errors.New("cluster: lease on \"a/k\": wrong last sequence")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Unavailable(tc.ctx, tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("Unavailable(nil) = %v", got)
				}
				return
			}
			if errors.Is(got, store.ErrUnavailable) != tc.unavailable {
				t.Errorf("%v: matches store.ErrUnavailable: %t, want %t", got, !tc.unavailable, tc.unavailable)
			}
			if errors.Is(got, context.DeadlineExceeded) != tc.deadline {
				t.Errorf("%v: matches context.DeadlineExceeded: %t, want %t", got, !tc.deadline, tc.deadline)
			}
			if errors.Is(got, store.ErrOutcomeUnknown) != tc.out {
				t.Errorf("%v: matches store.ErrOutcomeUnknown: %t, want %t", got, !tc.out, tc.out)
			}
			if tc.text != "" && got.Error() != tc.text {
				t.Errorf("text %q, want %q", got.Error(), tc.text)
			}
			if !tc.unavailable && got != tc.err {
				t.Errorf("%v: changed to %v", tc.err, got)
			}
		})
	}
}

// TestRequestsWhileTheServerIsDown: with the NATS server gone, taking a
// lease, reading its owner, renewing it and reading a counter fail
// with errors that match store.ErrUnavailable, and not
// context.DeadlineExceeded: the caller's context did not end.
func TestRequestsWhileTheServerIsDown(t *testing.T) {
	s := natstest.Server(t)
	nc, _ := natstest.Connect(t, s.ClientURL())
	// The client's own bound on a request without a deadline, short so
	// that the test does not wait 5 s per request.
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := openLeases(t, js, "proc-a")
	held, err := l.Acquire(ctx, "a/held")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := OpenCounters(ctx, nc, js, "budgets", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	s.WaitForShutdown()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"acquire", func() error { _, err := l.Acquire(ctx, "a/k"); return err }},
		{"owner", func() error { _, err := l.Owner(ctx, "a/k"); return err }},
		{"renew", func() error { return held.Renew(ctx) }},
		{"read a counter", func() error { _, err := cs.Get(ctx, "root", "turns"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("error %v; want one matching store.ErrUnavailable", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v matches context.DeadlineExceeded, yet the caller's context did not end", err)
			}
		})
	}
	// A counter's addition is a core NATS request, with no bound but the
	// caller's: its end is the caller's deadline, not an outage.
	bctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = cs.Add(bctx, "root", "turns", 1)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("an addition past the caller's deadline: %v; want context.DeadlineExceeded alone", err)
	}
}

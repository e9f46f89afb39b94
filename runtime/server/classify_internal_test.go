package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// TestTransientErrors: a store that did not answer is 503 "unavailable"
// with a Retry-After, also when its error matches the deadline of its own
// bound (no 504); a write whose outcome is unknown is 503
// "outcome_unknown" without one, saying the turn may have been saved, as
// is a turn whose commit was fenced (its process lost the instance); a
// closed runtime is 503 "closed" with one; a deadline alone is still 504.
func TestTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		code   string
		status int
		after  int
		msg    string
	}{
		{"unavailable", fmt.Errorf("take its lease: %w", store.ErrUnavailable), "unavailable", 503, 2,
			"the store is unavailable for a moment (a NATS server is down or electing a leader); try again: take its lease: store: unavailable"},
		{"unavailable past its own bound", fmt.Errorf("fence: %w: %w", store.ErrUnavailable, context.DeadlineExceeded), "unavailable", 503, 2,
			"the store is unavailable for a moment"},
		{"outcome unknown", fmt.Errorf("commit: %w: %w: %w", store.ErrUnavailable, store.ErrOutcomeUnknown, context.DeadlineExceeded), "outcome_unknown", 503, 0,
			"the turn or action may have been done, or not (the store did not confirm a write, or the process running it stopped or lost the instance before it answered); read the history or the pending item before you try it again: commit: "},
		{"fenced", fmt.Errorf("save instance a/k: %w: another owner took the instance since", store.ErrFenced), "outcome_unknown", 503, 0,
			"the turn or action may have been done, or not"},
		{"closed", fmt.Errorf("agent %q: %w", "a", runtime.ErrClosed), "closed", 503, 2, `agent "a": runtime: closed`},
		{"the caller's deadline", fmt.Errorf("turn: %w", context.DeadlineExceeded), "timeout", 504, 0, "turn: context deadline exceeded"},
		{"anything else", errors.New("boom"), "internal", 500, 0, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := errorOf(tc.err, nil)
			if e.Code != tc.code || e.Status != tc.status || e.RetryAfter != tc.after || !strings.HasPrefix(e.Message, tc.msg) {
				t.Errorf("errorOf(%v) = %+v\nwant %s %d, retry after %d, message starting %q", tc.err, e, tc.code, tc.status, tc.after, tc.msg)
			}
		})
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

// TestRemoteErrorKeepsUnavailable: a routed turn's error that matched
// store.ErrUnavailable, or store.ErrOutcomeUnknown, on its owner still
// matches it on the process that sent the turn, so that the sender's
// caller sees the outage as transient.
func TestRemoteErrorKeepsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want []error
		not  []error
	}{
		{"unavailable", fmt.Errorf("take its lease: %w", store.ErrUnavailable),
			[]error{store.ErrUnavailable}, []error{store.ErrOutcomeUnknown, context.DeadlineExceeded}},
		{"outcome unknown", fmt.Errorf("commit: %w: %w", store.ErrUnavailable, store.ErrOutcomeUnknown),
			[]error{store.ErrUnavailable, store.ErrOutcomeUnknown}, []error{context.DeadlineExceeded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &node{kinds: remoteKinds}
			got := n.replyError(n.errorReply(tc.err))
			if got.Error() != tc.err.Error() {
				t.Errorf("text %q, want %q", got, tc.err)
			}
			for _, w := range tc.want {
				if !errors.Is(got, w) {
					t.Errorf("%v does not match %v on the sender", got, w)
				}
			}
			for _, w := range tc.not {
				if errors.Is(got, w) {
					t.Errorf("%v matches %v on the sender", got, w)
				}
			}
		})
	}
}

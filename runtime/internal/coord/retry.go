package coord

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Waits between two tries of a request nobody answered.
const (
	firstRetryWait = 25 * time.Millisecond
	maxRetryWait   = 500 * time.Millisecond
)

// unanswered reports whether err says that a request reached no
// stream: nobody listened (the stream has no leader, as for a moment
// after a server restarts) or, when published is set, the stream did not
// answer a publish. A request without responders was never delivered, so
// trying it again cannot apply it twice; a publish without an answer may
// have been applied, so only a request whose second application is
// harmless passes published.
func unanswered(err error, published bool) bool {
	return errors.Is(err, nats.ErrNoResponders) ||
		published && errors.Is(err, jetstream.ErrNoStreamResponse)
}

// retry calls try with a context bound by requestTimeout, again while it
// fails [unanswered] and that bound has time left, and returns its last
// error. A stream's leader election takes a second or two, well inside
// the bound, and a caller should not see it as an outage.
func retry(ctx context.Context, published bool, try func(context.Context) error) error {
	cctx, cancel := bound(ctx)
	defer cancel()
	wait := firstRetryWait
	for {
		err := try(cctx)
		if !unanswered(err, published) {
			return err
		}
		select {
		case <-cctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetryWait)
	}
}

package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/internal/jsopen"
	"github.com/ganglion-dev/ganglion/store"
)

// Unavailable returns err, the error of a request to NATS made on behalf
// of a caller whose context is ctx, made to match [store.ErrUnavailable]
// when nobody answered it, or not in time, or the cluster had no leader
// for it ([jsopen.Unavailable]): a transient outage, as while a NATS
// server is down and its streams elect new leaders. It returns err as it
// is when err is nil or something else, and when ctx has ended: the
// caller's own cancellation or deadline is no outage.
//
// A deadline that ended while ctx lives was the request's own bound (one
// the request was given, or the client's default), not the caller's: the
// error it returns then no longer matches [context.DeadlineExceeded],
// which callers take for their own deadline; it keeps
// [store.ErrOutcomeUnknown] if err matched it.
func Unavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	marked := errors.Is(err, store.ErrUnavailable)
	if !marked && !jsopen.Unavailable(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return fmt.Errorf("%s (no answer in time: %w; %w)", err, store.ErrUnavailable, store.ErrOutcomeUnknown)
		}
		return fmt.Errorf("%s (no answer in time: %w)", err, store.ErrUnavailable)
	}
	if marked {
		return err
	}
	return fmt.Errorf("%w (%w)", err, store.ErrUnavailable)
}

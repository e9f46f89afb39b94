package coord

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRetry(t *testing.T) {
	old := requestTimeout
	requestTimeout = 300 * time.Millisecond
	t.Cleanup(func() { requestTimeout = old })
	noResponders := fmt.Errorf("add: %w", nats.ErrNoResponders)
	for _, tc := range []struct {
		name      string
		published bool
		errs      []error // of the tries in turn; the last one repeats
		wantTries int     // 0: more than one, until the bound
		wantErr   error
	}{
		{name: "answered", errs: []error{nil}, wantTries: 1},
		{name: "refused", errs: []error{jetstream.ErrKeyExists}, wantTries: 1, wantErr: jetstream.ErrKeyExists},
		{name: "no responders, then answered", errs: []error{noResponders, noResponders, nil}, wantTries: 3},
		{name: "no responders until the bound", errs: []error{noResponders}, wantErr: nats.ErrNoResponders},
		{name: "unanswered publish, not retried", errs: []error{jetstream.ErrNoStreamResponse, nil}, wantTries: 1, wantErr: jetstream.ErrNoStreamResponse},
		{name: "unanswered publish, retried", published: true, errs: []error{jetstream.ErrNoStreamResponse, jetstream.ErrKeyExists}, wantTries: 2, wantErr: jetstream.ErrKeyExists},
		{name: "timeout, not retried", published: true, errs: []error{nats.ErrTimeout, nil}, wantTries: 1, wantErr: nats.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			err := retry(context.Background(), tc.published, func(ctx context.Context) error {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("a try has no deadline")
				}
				tries++
				return tc.errs[min(tries, len(tc.errs))-1]
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantTries > 0 && tries != tc.wantTries || tc.wantTries == 0 && tries < 2 {
				t.Errorf("%d tries, want %d (0: several)", tries, tc.wantTries)
			}
		})
	}
}

func TestRetryStopsWithTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	err := retry(ctx, false, func(context.Context) error {
		tries++
		if tries == 2 {
			cancel()
		}
		return nats.ErrNoResponders
	})
	if !errors.Is(err, nats.ErrNoResponders) || tries != 2 {
		t.Errorf("after the caller's cancel: %d tries, err %v; want 2 tries and no responders", tries, err)
	}
}

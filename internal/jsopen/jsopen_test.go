package jsopen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	offline     = &jetstream.APIError{Code: 400, ErrorCode: codeNoPeers, Description: "no suitable peers for placement, peer offline"}
	noLeader    = &jetstream.APIError{Code: 503, ErrorCode: codeUnavailable, Description: "JetStream system temporarily unavailable"}
	noResources = &jetstream.APIError{Code: 400, ErrorCode: codeNoPeers, Description: "no suitable peers for placement, insufficient resources"}
	badConfig   = &jetstream.APIError{Code: 400, ErrorCode: 10052, Description: "replicas > 1 not supported in non-clustered mode"}
)

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"peer offline", offline, true},
		{"no leader", noLeader, true},
		{"wrapped", errors.Join(errors.New("open"), offline), true},
		{"insufficient resources", noResources, false},
		{"another API error", badConfig, false},
		{"not an API error", errors.New("peer offline"), false},
		{"deadline", context.DeadlineExceeded, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no responders", fmt.Errorf("commit: %w", nats.ErrNoResponders), true},
		{"no response from stream", jetstream.ErrNoStreamResponse, true},
		{"timeout", nats.ErrTimeout, true},
		{"deadline", context.DeadlineExceeded, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"no leader", noLeader, true},
		{"peer offline", offline, true},
		{"another 503", &jetstream.APIError{Code: 503, ErrorCode: 10039, Description: "jetstream not enabled for account"}, true},
		{"insufficient resources", noResources, false},
		{"another API error", badConfig, false},
		{"closed by its owner", nats.ErrConnectionClosed, false},
		{"canceled", context.Canceled, false},
		{"plain", errors.New("no responders"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unavailable(tc.err); got != tc.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// errUntilDone stands for a try that lasts until its context ends.
var errUntilDone = errors.New("until done")

// TestCreate: create is tried again while it fails transiently, and its
// first other outcome is Create's.
func TestCreate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []error // of the tries, in order; the last repeats
		timeout time.Duration
		tries   int    // at least
		want    string // error text; "" for success
	}{
		{"at once", []error{nil}, time.Minute, 1, ""},
		{"after a peer came back", []error{offline, offline, nil}, time.Minute, 3, ""},
		{"after an election", []error{noLeader, nil}, time.Minute, 2, ""},
		{"a lasting failure is not tried again", []error{noResources}, time.Minute, 1, "insufficient resources"},
		{"a later lasting failure ends it", []error{offline, badConfig}, time.Minute, 2, "non-clustered mode"},
		{"a peer stays offline", []error{offline}, 300 * time.Millisecond, 2, "peer offline (still so after"},
		{"the deadline during a try", []error{offline, errUntilDone}, 300 * time.Millisecond, 2, "peer offline (still so after"},
		{"the deadline during the first try", []error{errUntilDone}, 100 * time.Millisecond, 1, "context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			tries := 0
			v, err := Create(ctx, func(ctx context.Context) (int, error) {
				err := tc.results[min(tries, len(tc.results)-1)]
				tries++
				if err == errUntilDone {
					<-ctx.Done()
					err = ctx.Err()
				}
				if err != nil {
					return 0, err
				}
				return 42, nil
			})
			if tries < tc.tries {
				t.Errorf("tried %d times, want at least %d", tries, tc.tries)
			}
			if tc.want == "" {
				if err != nil || v != 42 {
					t.Fatalf("Create = %d, %v; want 42, nil", v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCreateTriesAgainUnanswered: a try that gets no answer in time is
// tried again, and the error says so when none ever comes.
func TestCreateTriesAgainUnanswered(t *testing.T) {
	defer func(d time.Duration) { tryTimeout = d }(tryTimeout)
	tryTimeout = 50 * time.Millisecond
	for _, tc := range []struct {
		name    string
		answer  int // the try that gets an answer; 0: none
		timeout time.Duration
		want    string
	}{
		{"the second try answered", 2, time.Minute, ""},
		{"no try answered", 0, 500 * time.Millisecond, "no answer within 50ms: context deadline exceeded (still so after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			tries := 0
			_, err := Create(ctx, func(ctx context.Context) (bool, error) {
				tries++
				if tries == tc.answer {
					return true, nil
				}
				<-ctx.Done()
				return false, ctx.Err()
			})
			if tc.want == "" {
				if err != nil || tries != tc.answer {
					t.Fatalf("Create = %v after %d tries; want success after %d", err, tries, tc.answer)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || tries < 2 {
				t.Fatalf("Create error = %v after %d tries; want it to contain %q, after more than one", err, tries, tc.want)
			}
		})
	}
}

// TestCreateKeepsTheFailure: the error a transient failure ends with is
// still that failure, for errors.As.
func TestCreateKeepsTheFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Create(ctx, func(context.Context) (struct{}, error) { return struct{}{}, offline })
	var api *jetstream.APIError
	if !errors.As(err, &api) || api.ErrorCode != codeNoPeers {
		t.Fatalf("Create error = %v, want the API error", err)
	}
}

// TestCreateIsBounded: without a deadline of the caller's, create gets
// one, Timeout away.
func TestCreateIsBounded(t *testing.T) {
	_, err := Create(context.Background(), func(ctx context.Context) (bool, error) {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > Timeout {
			t.Errorf("create's deadline = %v, %v; want one at most %s away", d, ok, Timeout)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBound(t *testing.T) {
	ctx, cancel := Bound(context.Background())
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > Timeout || time.Until(d) < Timeout-time.Minute {
		t.Errorf("no deadline given: Bound's deadline = %v, %v; want about %s from now", d, ok, Timeout)
	}
	mine, cancelMine := context.WithTimeout(context.Background(), time.Hour)
	defer cancelMine()
	got, cancel2 := Bound(mine)
	defer cancel2()
	if got != mine {
		t.Error("Bound replaced a deadline the caller gave")
	}
}

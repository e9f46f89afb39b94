package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/jsopen"

	"github.com/ganglion-dev/ganglion/store"
)

// This file bounds the store's requests to the server, and says what
// their failures mean: a request waits at most the store's request timeout,
// and less once a reconnection of the store's NATS connection orphaned it.
//
// A request's answer comes back on the connection the request went out
// on. When that connection's server dies, the client reconnects to
// another, and an answer the old server was to deliver is lost: a commit
// waited for it until its request timeout ran out (10 s by default),
// though after the reconnection it could only come if the stream's leader
// had not answered yet. So a request sent before a reconnection is given
// reconnectGrace from when the reconnection is seen, then ends as
// unanswered (a commit's outcome unknown), and its caller goes on: it
// tries again, or reads what the store holds.

// reconnectGrace is how long a request that went out before a
// reconnection still waits for its answer: a leader that had not answered
// before the connection moved answers on the new one within it.
const reconnectGrace = time.Second

// reconnectPoll is how often the connection's count of reconnections is
// read: the connection's own reconnect handler is its owner's to set.
const reconnectPoll = 100 * time.Millisecond

// connWatch follows the reconnections of a NATS connection.
type connWatch struct {
	nc   *nats.Conn
	stop chan struct{}
	done chan struct{}

	mu sync.Mutex
	// epoch lives until reconnectGrace after the connection's next
	// reconnection: the requests sent before it end with it.
	epoch  context.Context
	cancel context.CancelFunc
}

func watchConn(nc *nats.Conn) *connWatch {
	w := &connWatch{nc: nc, stop: make(chan struct{}), done: make(chan struct{})}
	w.epoch, w.cancel = context.WithCancel(context.Background())
	go w.loop()
	return w
}

func (w *connWatch) loop() {
	defer close(w.done)
	t := time.NewTicker(reconnectPoll)
	defer t.Stop()
	seen := w.nc.Stats().Reconnects
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if n := w.nc.Stats().Reconnects; n != seen {
			seen = n
			w.mu.Lock()
			old := w.cancel
			w.epoch, w.cancel = context.WithCancel(context.Background())
			w.mu.Unlock()
			time.AfterFunc(reconnectGrace, old)
		}
	}
}

// current returns the context that ends reconnectGrace after the
// connection's next reconnection.
func (w *connWatch) current() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// close ends the watch.
func (w *connWatch) close() {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	w.cancel()
	w.mu.Unlock()
}

// errReconnected says why a request ended that a reconnection orphaned.
const errReconnected = "the connection to the server was lost while the request waited, and its answer with it"

// request bounds one request to the server: ctx, with the store's request
// timeout as a deadline of its own, ended also by a reconnection of the
// connection the request went out on (jetstream_requests.go).
func (s *jsStore) request(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	stop := context.AfterFunc(s.conn.current(), cancel)
	return ctx, func() { stop(); cancel() }
}

// unavailableError is the error of a request that got no answer in time,
// or found no server to answer it: it matches [store.ErrUnavailable], and
// [store.ErrOutcomeUnknown] too when it was a commit's last request.
type unavailableError struct {
	msg     string // what happened, without err
	unknown bool
	err     error
}

func (e *unavailableError) Error() string { return e.msg + ": " + e.err.Error() }

func (e *unavailableError) Unwrap() error { return e.err }

// Is makes the error match store.ErrUnavailable, and store.ErrOutcomeUnknown if the
// commit's outcome is unknown.
func (e *unavailableError) Is(target error) bool {
	return target == store.ErrUnavailable || e.unknown && target == store.ErrOutcomeUnknown
}

// unavailable returns err, of a request bounded by [jsStore.request] under
// the caller's ctx, as an [unavailableError] if it says that nobody
// answered (in time); else, or once ctx itself has ended, err as it is.
func (s *jsStore) unavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if ue := (*unavailableError)(nil); errors.As(err, &ue) {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &unavailableError{msg: fmt.Sprintf("the server did not answer within %s", s.timeout), err: err}
	case errors.Is(err, context.Canceled):
		// ctx lives: the request's own bound ended it, at a reconnection.
		return &unavailableError{msg: errReconnected, err: err}
	case errors.Is(err, errNoResponders), errors.Is(err, nats.ErrNoResponders):
		return &unavailableError{msg: "no server answers for the bucket (its stream may have no leader)", err: err}
	case jsopen.Unavailable(err):
		return &unavailableError{msg: "the server is unavailable", err: err}
	}
	return err
}

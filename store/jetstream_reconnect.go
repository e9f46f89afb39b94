package store

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// This file ends the requests that a reconnection of the store's NATS
// connection orphaned.
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

// bound returns ctx, ended also when the connection reconnects (and
// reconnectGrace has passed); stop frees it.
func (w *connWatch) bound(ctx context.Context) (_ context.Context, stop func()) {
	w.mu.Lock()
	epoch := w.epoch
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	unwatch := context.AfterFunc(epoch, cancel)
	return ctx, func() { unwatch(); cancel() }
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

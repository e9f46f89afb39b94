package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/store"
)

// TestClusterForwardOwnerLeft: a turn forwarded to a process that leaves
// the cluster before it answers (it was killed, or stalled past its
// membership) may have run there in part: its error matches
// store.ErrOutcomeUnknown, which the API answers 503 outcome_unknown,
// "read the history first", instead of 500. The chaos soak saw the 500.
func TestClusterForwardOwnerLeft(t *testing.T) {
	ctx := context.Background()
	n, _, nc, _ := nodeOnServer(t)
	asked := make(chan struct{})
	sub, err := nc.Subscribe("t.node.ghost.send", func(*nats.Msg) { close(asked) }) // takes the turn, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	go func() {
		<-asked
		n.setLive([]string{"me"})
	}()
	res, err := n.forward(ctx, "ghost", "worker", "k", pipeline.InputEvent{Text: "hi"})
	if !errors.Is(err, store.ErrOutcomeUnknown) || !strings.Contains(err.Error(), `agent "worker" instance "k": process ghost: the process stopped before it answered`) {
		t.Fatalf("forward to a process that left = %v; want one matching store.ErrOutcomeUnknown, naming the instance and the process", err)
	}
	if res == nil || res.FinishReason != pipeline.FinishError {
		t.Fatalf("result = %+v, want finish reason error", res)
	}
}

// testNode is a node named "me" of a runtime that has not stopped, whose
// peer "ghost" is alive.
func testNode(t *testing.T, nc *nats.Conn, leases *coord.Leases) (*node, *forwards) {
	t.Helper()
	halt, cut := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cut(nil) })
	f := &forwards{cut: cut}
	env := seam.ClusterEnv{Env: seam.Env{Logger: slog.New(slog.DiscardHandler)}, Local: f, Halt: halt,
		Errors: seam.Errors{Closed: errClosed, Cut: errCut}}
	return &node{l: f, env: env, log: env.Logger, errs: env.Errors, kinds: remoteKinds,
		nc: nc, leases: leases, name: "me", prefix: "t.node.", live: []string{"ghost", "me"}}, f
}

// The runtime's errors, as it gives them to the cluster.
var (
	errClosed = errors.New("runtime: closed")
	errCut    = fmt.Errorf("%w: the runtime stopped before the turn ended", errClosed)
)

// forwards is the part of a runtime a forward uses: the gate a stop
// closes, which waits for the forwards in flight and refuses new ones,
// and the cut of the stop's time.
type forwards struct {
	seam.Local
	cut     context.CancelCauseFunc
	mu      sync.Mutex
	n       int
	shut    bool
	drained chan struct{}
}

func (f *forwards) Enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shut {
		return false
	}
	f.n++
	return true
}

func (f *forwards) Leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.shut {
		close(f.drained)
	}
}

// stop closes the gate: drained is closed once no forward is in flight.
func (f *forwards) stop() (drained <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shut, f.drained = true, make(chan struct{})
	if f.n == 0 {
		close(f.drained)
	}
	return f.drained
}

// TestClusterStopWaitsForForwards: a stop of the process that forwarded a
// turn to another waits for its answer, as for a turn of its own, and
// refuses new forwards; cut when the stop's time is up, the forward ends
// with an error saying the turn goes on there (an unknown outcome, not a
// 500), and the owner is not told to cancel it. The chaos soak saw a
// stopping process close its connection under such a call: "nats:
// connection closed", answered 500.
func TestClusterStopWaitsForForwards(t *testing.T) {
	ctx := context.Background()
	n, f, nc, _ := nodeOnServer(t)
	asked, cancelled := make(chan struct{}), make(chan struct{}, 1)
	subscribe(t, nc, map[string]nats.MsgHandler{
		"t.node.ghost.send":   func(*nats.Msg) { close(asked) }, // takes the turn, answers late
		"t.node.ghost.cancel": func(*nats.Msg) { cancelled <- struct{}{} },
	})
	type outcome struct {
		res *pipeline.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := n.forward(ctx, "ghost", "worker", "k", pipeline.InputEvent{Text: "hi"})
		done <- outcome{res, err}
	}()
	<-asked
	drained := f.stop()
	select {
	case <-drained:
		t.Fatal("the stop did not wait for the forward in flight")
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := n.forward(ctx, "ghost", "worker", "k2", pipeline.InputEvent{Text: "later"}); !errors.Is(err, errClosed) {
		t.Fatalf("a forward once the stop began = %v, want ErrClosed", err)
	}
	f.cut(errCut) // the stop's time is up
	got := <-done
	<-drained
	if !errors.Is(got.err, store.ErrOutcomeUnknown) || !errors.Is(got.err, errClosed) || !strings.Contains(got.err.Error(), "process ghost: runtime: closed: the runtime stopped before the turn ended; it goes on there") {
		t.Fatalf("the cut forward = %v; want one matching store.ErrOutcomeUnknown and ErrClosed, saying the turn goes on at ghost", got.err)
	}
	select {
	case <-cancelled:
		t.Fatal("the owner was told to cancel a turn this process only stopped waiting for")
	case <-time.After(100 * time.Millisecond):
	}
}

// nodeOnServer returns a node on a NATS server of its own, its connection
// and its leases (a 1 s TTL).
func nodeOnServer(t *testing.T) (*node, *forwards, *nats.Conn, *coord.Leases) {
	t.Helper()
	nc, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	leases, err := coord.Open(context.Background(), js, "leases", "me", time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	n, f := testNode(t, nc, leases)
	return n, f, nc, leases
}

// subscribe subscribes each handler to its subject until the test ends.
func subscribe(t *testing.T, nc *nats.Conn, handlers map[string]nats.MsgHandler) {
	t.Helper()
	for subject, h := range handlers {
		sub, err := nc.Subscribe(subject, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
	}
}

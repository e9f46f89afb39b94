package runtime

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/cluster"
	"github.com/ganglion-dev/ganglion/store"
)

// TestClusterForwardOwnerLeft: a turn forwarded to a process that leaves
// the cluster before it answers (it was killed, or stalled past its
// membership) may have run there in part: its error matches
// store.ErrOutcomeUnknown, which the API answers 503 outcome_unknown,
// "read the history first", instead of 500. The chaos soak saw the 500.
func TestClusterForwardOwnerLeft(t *testing.T) {
	ctx := context.Background()
	nc, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	leases, err := cluster.Open(ctx, js, "leases", "me", time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := testNode(t, nc, leases)
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
func testNode(t *testing.T, nc *nats.Conn, leases *cluster.Leases) *node {
	t.Helper()
	r := &Runtime{logger: slog.New(slog.DiscardHandler)}
	r.halt, r.cut = context.WithCancelCause(context.Background())
	t.Cleanup(func() { r.cut(nil) })
	return &node{r: r, nc: nc, leases: leases, name: "me", prefix: "t.node.", live: []string{"ghost", "me"}}
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
	nc, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	leases, err := cluster.Open(ctx, js, "leases", "me", time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := testNode(t, nc, leases)
	asked, cancelled := make(chan struct{}), make(chan struct{}, 1)
	for subject, h := range map[string]nats.MsgHandler{
		"t.node.ghost.send":   func(*nats.Msg) { close(asked) }, // takes the turn, answers late
		"t.node.ghost.cancel": func(*nats.Msg) { cancelled <- struct{}{} },
	} {
		sub, err := nc.Subscribe(subject, h)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
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
	drained, ok := n.r.forwards.shut()
	if !ok {
		t.Fatal("the forwards' gate was shut already")
	}
	select {
	case <-drained:
		t.Fatal("the stop did not wait for the forward in flight")
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := n.forward(ctx, "ghost", "worker", "k2", pipeline.InputEvent{Text: "later"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a forward once the stop began = %v, want ErrClosed", err)
	}
	n.r.cut(errCut) // the stop's time is up
	got := <-done
	<-drained
	if !errors.Is(got.err, store.ErrOutcomeUnknown) || !errors.Is(got.err, ErrClosed) || !strings.Contains(got.err.Error(), "process ghost: runtime: closed: the runtime stopped before the turn ended; it goes on there") {
		t.Fatalf("the cut forward = %v; want one matching store.ErrOutcomeUnknown and ErrClosed, saying the turn goes on at ghost", got.err)
	}
	select {
	case <-cancelled:
		t.Fatal("the owner was told to cancel a turn this process only stopped waiting for")
	case <-time.After(100 * time.Millisecond):
	}
}

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
	n := &node{r: &Runtime{logger: slog.New(slog.DiscardHandler)}, nc: nc, leases: leases, name: "me", prefix: "t.node.", live: []string{"ghost", "me"}}
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

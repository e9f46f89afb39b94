package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// TestClusterForwardLost: core NATS carries a request and its answer at
// most once, and a NATS server that stops drops what it carries: a turn
// forwarded to its owner, whose request or answer is lost so, while the
// owner stays alive, must not wait for ever. The forward asks the owner
// whether it still has the request, and once told no twice, ends with an
// error matching store.ErrOutcomeUnknown (the turn may have run); while
// the owner has it, the forward waits for its answer however long the
// turn runs. The cluster soak saw a turn's call hang for its whole 30 s
// timeout, sent through a process 62 ms after a NATS server stopped, on a
// process with nothing left running once the client gave up.
func TestClusterForwardLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		// owner serves the request as the owner's process got it; it
		// answers with the reply it is given.
		owner   func(m *nats.Msg, answer func(*nats.Msg))
		wantErr string // "": the turn's answer
	}{
		{name: "request lost", owner: func(*nats.Msg, func(*nats.Msg)) {},
			wantErr: `agent "worker" instance "k": process ghost: the request or its answer was lost on the way`},
		{name: "answer lost", owner: func(m *nats.Msg, answer func(*nats.Msg)) {
			m.Reply = "t.lost" // answered to nobody
			answer(m)
		}, wantErr: `agent "worker" instance "k": process ghost: the request or its answer was lost on the way`},
		{name: "slow turn", owner: func(m *nats.Msg, answer func(*nats.Msg)) {
			answer(m) // the turn runs several checks long
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			n, _, nc, leases := nodeOnServer(t)
			// ghost is the owner's node: its requests' handler and its
			// answers to the checks are a node's own.
			ghost, _ := testNode(t, nc, leases)
			ghost.name = "ghost"
			turn := func(m *nats.Msg) {
				handle(ghost, m, func(remoteSend) remoteReply {
					time.Sleep(3500 * time.Millisecond) // three checks of a 1 s TTL
					return remoteReply{Result: &pipeline.TurnResult{Response: pipeline.Message{Content: "done"}}}
				})
			}
			subscribe(t, nc, map[string]nats.MsgHandler{
				"t.node.ghost.send":  func(m *nats.Msg) { tc.owner(m, turn) },
				"t.node.ghost.calls": ghost.serveCalls,
			})
			fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			res, err := n.forward(fctx, "ghost", "worker", "k", pipeline.InputEvent{Text: "hi"})
			if fctx.Err() != nil {
				t.Fatalf("the forward waited for its whole deadline: %+v, %v", res, err)
			}
			if tc.wantErr == "" {
				if err != nil || res == nil || res.Response.Content != "done" {
					t.Fatalf("forward = %+v, %v; want the turn's answer", res, err)
				}
				ghost.handlers.Wait()
				return
			}
			if !errors.Is(err, store.ErrOutcomeUnknown) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("forward = %v; want one matching store.ErrOutcomeUnknown, saying %q", err, tc.wantErr)
			}
			if res == nil || res.FinishReason != pipeline.FinishError {
				t.Fatalf("result = %+v, want finish reason error", res)
			}
			ghost.handlers.Wait()
		})
	}
}

// TestClusterActLost: an action on a pending item forwarded to its
// owner, whose request or answer is lost, ends as the lost turn does,
// with an error matching store.ErrOutcomeUnknown: the owner may have
// taken the action, and the item says whether it did.
func TestClusterActLost(t *testing.T) {
	ctx := context.Background()
	n, _, nc, leases := nodeOnServer(t)
	ghost, _ := testNode(t, nc, leases)
	ghost.name = "ghost"
	subscribe(t, nc, map[string]nats.MsgHandler{
		"t.node.ghost.act":   func(*nats.Msg) {}, // lost on the way
		"t.node.ghost.calls": ghost.serveCalls,
	})
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := n.forwardAct(fctx, "ghost", "p-1", extensions.Action{Kind: extensions.ActionAnswer, Value: "yes"})
	want := `pending item "p-1": process ghost: the request or its answer was lost on the way`
	if fctx.Err() != nil || !errors.Is(err, store.ErrOutcomeUnknown) || !strings.Contains(err.Error(), want) {
		t.Fatalf("forwardAct = %v; want one matching store.ErrOutcomeUnknown, saying %q, before the deadline", err, want)
	}
}

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// This file holds the requests between a cluster's processes: how one
// asks another, waits, and reads its errors.

// remoteReply is the owner's answer to a remoteSend.
type remoteReply struct {
	Result *pipeline.TurnResult `json:"result,omitempty"`
	Error  string               `json:"error,omitempty"`
	// Kinds name the sentinel errors Error matches, so that the sender's
	// errors.Is sees what a local turn's caller would.
	Kinds []string `json:"kinds,omitempty"`
}

// remoteKinds are the sentinel errors a routed turn's error keeps besides
// the runtime's own (seam.Errors.Kinds).
var remoteKinds = map[string]error{
	"moved": errMoved, "invalid-name": store.ErrInvalidName,
	"deadline": context.DeadlineExceeded, "canceled": context.Canceled,
	"item-not-found": ledger.ErrNotFound, "item-resolved": ledger.ErrResolved,
	"invalid-action": extensions.ErrInvalidAction, "store-unavailable": store.ErrUnavailable,
	"outcome-unknown": store.ErrOutcomeUnknown,
}

// remoteError is a routed turn's error as the owner wrote it.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Unwrap() []error { return e.kinds }

// replyError is rep's error, or nil.
func (n *node) replyError(rep remoteReply) error {
	if rep.Error == "" {
		return nil
	}
	e := &remoteError{msg: rep.Error}
	for _, k := range rep.Kinds {
		if s, ok := n.kinds[k]; ok {
			e.kinds = append(e.kinds, s)
		}
	}
	return e
}

// errorReply is the reply that carries err.
func (n *node) errorReply(err error) remoteReply {
	rep := remoteReply{Error: err.Error()}
	for k, s := range n.kinds {
		if errors.Is(err, s) {
			rep.Kinds = append(rep.Kinds, k)
		}
	}
	slices.Sort(rep.Kinds)
	return rep
}

// resultReply is the reply that carries res and err.
func (n *node) resultReply(res *pipeline.TurnResult, err error) remoteReply {
	var rep remoteReply
	if err != nil {
		rep = n.errorReply(err)
	}
	rep.Result = res
	return rep
}

func (n *node) reply(m *nats.Msg, rep remoteReply) {
	data, err := json.Marshal(rep)
	if err != nil {
		data, _ = json.Marshal(remoteReply{Error: "cluster: encode reply: " + err.Error()})
	}
	if err := m.Respond(data); err != nil {
		n.log.Warn("cluster: answering a routed turn failed", "err", err)
	}
}

// leftGrace is how long call still waits for an answer once the process
// asked has left.
const leftGrace = 500 * time.Millisecond

// errOwnerLeft is call's error when the process it waited for left the
// cluster before answering: what it was asked may have been done in part.
var errOwnerLeft = errors.New("the process stopped before it answered")

// call sends req to process owner's subject suffix (".send", ".report",
// ".act") and returns the reply. It fails with an error matching errMoved
// when nobody answers there (the owner is gone; its leases expire within a
// TTL), with errOwnerLeft when the owner leaves the cluster while the call
// waits (its answer will never come), and with ctx's error when ctx ends
// first.
//
// A stop of this process waits for the call, as for a turn of its own,
// and refuses new ones (Errors.Closed); if the stop's time runs out first, the
// call ends with an error matching errCut and store.ErrOutcomeUnknown, and
// owner goes on with what it was asked.
func (n *node) call(ctx context.Context, owner, suffix string, req any) (remoteReply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return remoteReply{}, err
	}
	if !n.l.Enter() {
		return remoteReply{}, n.errs.Closed
	}
	defer n.l.Leave()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.env.Halt, cancel)()
	var left atomic.Bool
	// A process that stops answers before it leaves, but its answer and
	// the news that it left reach this process apart: give the answer
	// leftGrace to land.
	defer n.onLeave(owner, func() { left.Store(true); time.AfterFunc(leftGrace, cancel) })()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+owner+suffix, data)
	switch {
	case err != nil && left.Load() && ctx.Err() == nil:
		return remoteReply{}, fmt.Errorf("process %s: %w", owner, errOwnerLeft)
	case ctx.Err() != nil:
		return remoteReply{}, ctx.Err()
	case err != nil && n.env.Halt.Err() != nil:
		return remoteReply{}, fmt.Errorf("process %s: %w; it goes on there (%w: read the history or the pending item)", owner, n.errs.Cut, store.ErrOutcomeUnknown)
	case errors.Is(err, nats.ErrNoResponders):
		return remoteReply{}, fmt.Errorf("%w (%s, which does not answer)", errMoved, owner)
	case err != nil:
		return remoteReply{}, fmt.Errorf("process %s: %w", owner, err)
	}
	var rep remoteReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return remoteReply{}, fmt.Errorf("process %s: malformed reply: %w", owner, err)
	}
	return rep, nil
}

// handle answers m, a request another process sent with call, with what
// answer makes of its decoded body, in a goroutine of its own: NATS calls
// a subscription's handler for one message at a time. Once the node stops
// it answers errMoved: the sender looks for the instance's next owner.
func handle[T any](n *node, m *nats.Msg, answer func(T) remoteReply) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.reply(m, n.errorReply(n.stopping()))
		return
	}
	n.handlers.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.handlers.Done()
		var req T
		if err := json.Unmarshal(m.Data, &req); err != nil {
			n.reply(m, remoteReply{Error: fmt.Sprintf("cluster: malformed request on %s: %v", m.Subject, err)})
			return
		}
		n.reply(m, answer(req))
	}()
}

// whileMoved runs try until it fails with something other than errMoved,
// which says that what it asked of an instance's owner was not done: the
// instance has just moved (its owner gave it up, or died and its lease has
// not expired yet). It pauses between tries, 10 ms doubling to 500 ms, for
// at most twice the lease TTL, by when a dead owner's leases have expired.
// waited says the error is its own (it gave up, or ctx ended), not try's;
// its error never matches errMoved.
func (n *node) whileMoved(ctx context.Context, try func() error) (waited bool, err error) {
	ttl := n.leases.TTL()
	giveUp := time.Now().Add(2 * ttl)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := try()
		switch {
		case !errors.Is(err, errMoved):
			return false, err
		case time.Now().After(giveUp):
			return true, fmt.Errorf("its owner did not answer, and its lease (%v) did not pass to this process within %v: %s", ttl, 2*ttl, err)
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("waiting for its owner: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

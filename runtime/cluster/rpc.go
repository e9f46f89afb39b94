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
	"github.com/nats-io/nuid"

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

// errLost is call's error when the process it waited for, alive, says it
// does not have the request: NATS lost the request or its answer (it
// carries each at most once, and a NATS server that stops drops what it
// carries). What it was asked may have been done, in part or whole.
var errLost = errors.New("the request or its answer was lost on the way (a NATS server stopped, or a connection dropped)")

// callHeader carries a request's call ID, which the process asked answers
// checks about while it serves the request (serveCalls).
const callHeader = "Ganglion-Call"

// call sends req to process owner's subject suffix (".send", ".report",
// ".act") and returns the reply. It fails with an error matching errMoved
// when nobody answers there (the owner is gone; its leases expire within a
// TTL), with errOwnerLeft when the owner leaves the cluster while the call
// waits (its answer will never come), with errLost when the owner, alive,
// says it does not have the request (checkCall), and with ctx's error when
// ctx ends first.
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
	var left, lost atomic.Bool
	// A process that stops answers before it leaves, but its answer and
	// the news that it left reach this process apart: give the answer
	// leftGrace to land.
	defer n.onLeave(owner, func() { left.Store(true); time.AfterFunc(leftGrace, cancel) })()
	id := nuid.Next()
	go n.checkCall(rctx, owner, id, func() { lost.Store(true); cancel() })
	m := &nats.Msg{Subject: n.prefix + owner + suffix, Data: data, Header: nats.Header{callHeader: []string{id}}}
	msg, err := n.nc.RequestMsgWithContext(rctx, m)
	switch {
	case err != nil && left.Load() && ctx.Err() == nil:
		return remoteReply{}, fmt.Errorf("process %s: %w", owner, errOwnerLeft)
	case err != nil && lost.Load() && ctx.Err() == nil:
		return remoteReply{}, fmt.Errorf("process %s: %w", owner, errLost)
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

// checkCall asks owner, every lease TTL until ctx ends, whether it still
// serves call id; told no twice in a row (once could be a request
// that waits, behind a stall, to be taken, or an answer on its way), it
// calls lost. A check that gets no answer says nothing: an owner that
// stopped leaves the cluster, which ends the call (onLeave).
func (n *node) checkCall(ctx context.Context, owner, id string, lost func()) {
	every := n.leases.TTL()
	t := time.NewTimer(every)
	defer t.Stop()
	for no := 0; ; t.Reset(every) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		rep, err := n.nc.RequestWithContext(cctx, n.prefix+owner+".calls", []byte(id))
		cancel()
		switch {
		case err != nil:
			no = 0
		case string(rep.Data) == "no":
			if no++; no == 2 {
				lost()
				return
			}
		default:
			no = 0
		}
	}
}

// serveCalls answers checkCall: "yes" while this process serves the call
// whose ID the message holds, from its receipt until its answer is sent.
func (n *node) serveCalls(m *nats.Msg) {
	n.mu.Lock()
	serving := n.serving[string(m.Data)]
	n.mu.Unlock()
	answer := "no"
	if serving {
		answer = "yes"
	}
	m.Respond([]byte(answer))
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
	id := m.Header.Get(callHeader)
	if id != "" {
		if n.serving == nil {
			n.serving = map[string]bool{}
		}
		n.serving[id] = true
	}
	n.mu.Unlock()
	go func() {
		defer n.handlers.Done()
		defer func() {
			n.mu.Lock()
			delete(n.serving, id)
			n.mu.Unlock()
		}()
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

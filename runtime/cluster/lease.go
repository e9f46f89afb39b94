package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/store"
)

// This file holds the leases: which process owns an instance, and for
// how long.

// leaseName is the name of an instance's lease.
func leaseName(agent, key string) string { return agent + "/" + key }

// ownership is what the node keeps of an instance (instance.placed): its
// lease while this process holds it, and the fence its commits carry.
type ownership struct {
	// lease is the instance's lease while this process owns it; guarded
	// by the instance's slot.
	lease *coord.Lease
	// used is when a turn last started on the instance, in Unix
	// nanoseconds, so that an idle instance's lease is given up.
	used atomic.Int64
	// fence is the instance's fence in the store, taken with the lease:
	// every commit of the instance and of its tasks carries it, so that
	// the store refuses what this process writes once another took the
	// instance over, even if this one stalled past its lease without
	// knowing. Zero while this process does not hold the lease;
	// lostFence once a commit found it passed; unknownFence once a commit
	// got no answer. Read by reports and state writes outside the
	// instance's turns.
	fence atomic.Uint64
	// pins counts the writers of its tasks outside a turn, which keep its
	// lease from being given up as idle; guarded by the node's mu.
	pins int
}

// adopt gives a new instance its ownership.
func (n *node) Adopt(inst seam.Held) { inst.Placed().Store(&ownership{}) }

// ownOf returns the ownership of an instance of the node (adopt).
func ownOf(inst seam.Held) *ownership { return inst.Placed().Load().(*ownership) }

// fence is the fence inst's commits carry.
func (n *node) Fence(inst seam.Held) uint64 { return ownOf(inst).fence.Load() }

// failed fences inst off after a commit of it failed: refused for its
// fence, another process owns it, and own takes it again or routes there;
// without an answer, the batch may be stored or land later still, and own
// takes a new fence, which refuses it, before the instance is read again.
// Meanwhile its writes are refused.
func (n *node) Failed(inst seam.Held, err error) {
	o := ownOf(inst)
	switch {
	case errors.Is(err, store.ErrFenced):
		o.fence.Store(lostFence)
	case errors.Is(err, store.ErrOutcomeUnknown) && o.fence.Load() != 0:
		o.fence.Store(unknownFence)
	}
}

// own makes sure this process holds inst's lease, taking it if nobody
// does, and fails with an error matching errMoved if another process
// holds it, or store.ErrUnavailable if JetStream did not answer in time
// (the lease and the fence are asked under a bound of their own, whose
// end is no deadline of the caller's). The caller holds inst's turn slot.
func (n *node) Own(ctx context.Context, inst seam.Held) error {
	o := ownOf(inst)
	o.used.Store(time.Now().UnixNano())
	if o.lease != nil && o.lease.Held() {
		switch o.fence.Load() {
		case unknownFence:
			return n.refence(ctx, inst)
		case lostFence:
		default:
			return nil
		}
	}
	if o.lease != nil {
		n.log.Warn("cluster: the lease of an instance was lost; taking it again", "agent", inst.Agent(), "instance", inst.Key())
		n.forget(inst, o.lease)
		o.lease = nil
		o.fence.Store(0) // not this process's until it takes the lease again
	}
	// What this process read before may have changed on another.
	inst.Unload()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	l, err := n.leases.Acquire(lctx, leaseName(inst.Agent(), inst.Key()))
	if err != nil {
		if he := (*coord.HeldError)(nil); errors.As(err, &he) {
			return fmt.Errorf("agent %q instance %q: %w (%s)", inst.Agent(), inst.Key(), errMoved, he.Owner)
		}
		return fmt.Errorf("agent %q instance %q: take its lease: %w", inst.Agent(), inst.Key(), coord.Unavailable(ctx, err))
	}
	// The fence is taken after the lease and before the instance is
	// loaded: what a former owner committed before it is loaded, what it
	// would commit after it is refused (store.Fence).
	fence, err := n.store.Fence(lctx, inst.Agent(), inst.Key())
	if err != nil {
		n.forget(inst, l)
		return fmt.Errorf("agent %q instance %q: take its fence: %w", inst.Agent(), inst.Key(), coord.Unavailable(ctx, err))
	}
	o.lease = l
	o.fence.Store(fence)
	n.mu.Lock()
	n.held[inst] = l
	n.mu.Unlock()
	// The tasks of the instance may have changed while another process
	// owned it.
	n.l.ForgetTasks(inst.Agent(), inst.Key())
	return nil
}

// refence takes a new fence for inst, whose lease this process keeps,
// after a commit of it got no answer (unknownFence): the batch may be
// stored, or still in flight, and the new fence makes the store refuse it
// if it lands later. Then the instance is read again, with its tasks. The
// lease is kept, not given up and taken again: a release still running
// in the background could purge the new lease. The caller holds inst's
// turn slot.
func (n *node) refence(ctx context.Context, inst seam.Held) error {
	inst.Unload()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	fence, err := n.store.Fence(lctx, inst.Agent(), inst.Key())
	if err != nil {
		return fmt.Errorf("agent %q instance %q: take a new fence after a commit that got no answer: %w", inst.Agent(), inst.Key(), err)
	}
	ownOf(inst).fence.Store(fence)
	n.l.ForgetTasks(inst.Agent(), inst.Key())
	n.log.Info("cluster: took a new fence after a commit that got no answer; reading the instance again", "agent", inst.Agent(), "instance", inst.Key())
	return nil
}

// lostFence is an instance's fence once a commit found that another
// process took a later one: no store hands it out, so every commit that
// carries it is refused until own takes the instance again.
const lostFence = math.MaxUint64

// unknownFence is an instance's fence once a commit got no answer
// (store.ErrOutcomeUnknown): no store hands it out either, so every
// commit that carries it is refused until own takes a new fence.
const unknownFence = math.MaxUint64 - 1

// movedIfFenced makes err, if a commit's fence refused it, match errMoved
// too: nothing was written, and the write may go to the new owner.
func movedIfFenced(err error) error {
	if errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("%w: %w", errMoved, err)
	}
	return err
}

// fenceOf is the fence of agent's instance key for a write of what its
// owner alone writes: zero if this process does not hold the instance's
// lease (it is not in memory here, or was given up).
func (n *node) fenceOf(agent, key string) uint64 {
	in, unhold := n.l.Cached(agent, key)
	if in == nil {
		return 0
	}
	defer unhold()
	return ownOf(in).fence.Load()
}

// state is the extensions' state store: the state of an instance this
// process owns is written under the instance's fence (ownedState).
func (n *node) State() extensions.StateStore { return ownedState{n} }

// ownedState is the extensions' state store in a cluster: the state of
// an instance this process owns is written under the instance's fence,
// so that an extension of an owner that stalled past its lease cannot
// write over what the next owner's wrote.
type ownedState struct{ n *node }

// GetState implements [extensions.StateStore].
func (s ownedState) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	return s.n.store.GetState(ctx, agent, key, extension)
}

// SetState implements [extensions.StateStore]: a commit of the state
// alone, under the instance's fence (none outside a cluster, or for an
// instance this process does not own).
func (s ownedState) SetState(ctx context.Context, agent, key, extension string, value []byte) error {
	return s.n.store.Commit(ctx, agent, key, store.Batch{State: map[string][]byte{extension: value}, Fence: s.n.fenceOf(agent, key)})
}

// forget stops renewing l, inst's lease, and gives it up in the
// background unless it was lost.
func (n *node) forget(inst seam.Held, l *coord.Lease) {
	n.mu.Lock()
	if n.held[inst] == l {
		delete(n.held, inst)
	}
	n.mu.Unlock()
	if !l.Held() {
		return
	}
	n.releasing.Add(1)
	go func() {
		defer n.releasing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
		defer cancel()
		if err := l.Release(ctx); err != nil && !errors.Is(err, coord.ErrLost) {
			n.log.Warn("cluster: giving up a lease failed; it expires on its own", "lease", l.Name(), "err", err)
		}
	}()
}

// evicted gives up the lease of an instance that left the cache.
func (n *node) Evicted(inst seam.Held) {
	n.mu.Lock()
	l := n.held[inst]
	n.mu.Unlock()
	if l != nil {
		n.forget(inst, l)
	}
}

// renewLoop renews the leases held three times per TTL, and gives up
// those of instances idle for a whole TTL. A round first asks the store
// whether it answers: a process that cannot reach its store can run no
// turn, so it renews nothing, and its membership and leases expire; the
// other processes take its instances and tasks over, and it joins again
// once its store answers.
func (n *node) renewLoop() {
	defer close(n.done)
	ttl := n.leases.TTL()
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.storeAnswers() {
			continue
		}
		n.renewMembership()
		n.mu.Lock()
		orphans := time.Now().Before(n.orphans)
		n.mu.Unlock()
		if orphans && n.recovering.CompareAndSwap(false, true) {
			go func() {
				defer n.recovering.Store(false)
				n.l.Recover()
			}()
		}
		n.mu.Lock()
		held := make(map[seam.Held]*coord.Lease, len(n.held))
		for in, l := range n.held {
			held[in] = l
		}
		n.mu.Unlock()
		idleSince := time.Now().Add(-ttl).UnixNano()
		renew := map[*coord.Lease]seam.Held{}
		for in, l := range held {
			o := ownOf(in)
			if o.used.Load() < idleSince && in.TryAcquire() {
				// Idle, no turn runs or waits, and nothing writes its
				// tasks: let it go, so that another process may take it
				// without waiting.
				n.mu.Lock()
				pinned := o.pins > 0
				if !pinned && n.held[in] == l {
					delete(n.held, in)
				}
				n.mu.Unlock()
				if !pinned {
					if o.lease == l {
						o.lease = nil
						o.fence.Store(0)
						in.Unload()
					}
					in.Release()
					n.forget(in, l)
					continue
				}
				in.Release()
			}
			renew[l] = in
		}
		n.renew(renew)
	}
}

// storePinger is a store that can be asked whether its server answers:
// the JetStream store. Another store (a caller's own, or one that wraps
// the JetStream store) is taken to answer.
type storePinger interface {
	Ping(ctx context.Context) error
}

// storeAnswers asks the store, if it can be asked, whether it answers, and
// logs when that changes. It runs on the renewal loop alone.
func (n *node) storeAnswers() bool {
	p, ok := n.store.(storePinger)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	err := p.Ping(ctx)
	switch {
	case err != nil && !n.storeDown:
		n.storeDown = true
		n.log.Warn("cluster: the store does not answer; this process leaves the cluster until it does, and its instances and tasks move to the others", "err", err)
	case err == nil && n.storeDown:
		n.storeDown = false
		n.log.Info("cluster: the store answers again; this process joins the cluster again")
	}
	return err == nil
}

// renewers bounds the renewals in flight: one after the other, a
// thousand leases at a third of a millisecond each would outlast a short
// TTL.
const renewers = 64

// renew renews leases, each an instance's, renewers at a time. A lease
// found lost is renewed no more: it leaves the held ones, and the
// instance's next turn takes it again (own).
func (n *node) renew(leases map[*coord.Lease]seam.Held) {
	var wg sync.WaitGroup
	next := make(chan *coord.Lease)
	for range min(renewers, len(leases)) {
		wg.Go(func() {
			for l := range next {
				ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
				err := l.Renew(ctx)
				cancel()
				switch {
				case errors.Is(err, coord.ErrLost):
					n.mu.Lock()
					if in := leases[l]; n.held[in] == l {
						delete(n.held, in)
					}
					n.mu.Unlock()
					n.log.Warn("cluster: a lease expired before it was renewed; its instance may run on another process now", "lease", l.Name())
				case err != nil:
					n.log.Warn("cluster: renewing a lease failed; trying again", "lease", l.Name(), "err", err)
				}
			}
		})
	}
	// A round on a server that does not answer takes leaseTimeout for
	// each renewers leases: once the node stops, the rest are left.
feed:
	for l := range leases {
		select {
		case next <- l:
		case <-n.stop:
			break feed
		}
	}
	close(next)
	wg.Wait()
}

// holds reports whether this process holds the lease of agent's
// instance key.
func (n *node) holds(agent, key string) bool {
	in, unhold := n.l.Cached(agent, key)
	if in == nil {
		return false
	}
	unhold()
	n.mu.Lock()
	l := n.held[in]
	n.mu.Unlock()
	return l != nil && l.Held()
}

// pin keeps this process's lease of agent's instance key, if it holds it,
// from being given up as idle until unpin: the caller writes what the
// owner alone writes (a task of the instance) outside a turn. It is not
// ok either while the instance's fence must be taken again: the caller
// takes the lease (takeLease), whose own takes the fence.
func (n *node) pin(agent, key string) (unpin func(), ok bool) {
	in, unhold := n.l.Cached(agent, key) // not evicted while pinned
	if in == nil {
		return nil, false
	}
	n.mu.Lock()
	l := n.held[in]
	// A fence that the store refuses (lostFence, unknownFence) must be
	// taken again, by own, before the instance's owner writes.
	o := ownOf(in)
	f := o.fence.Load()
	ok = l != nil && l.Held() && f != lostFence && f != unknownFence
	if ok {
		o.pins++
	}
	n.mu.Unlock()
	if !ok {
		unhold()
		return nil, false
	}
	return func() {
		n.mu.Lock()
		o.pins--
		n.mu.Unlock()
		unhold()
	}, true
}

// owner returns the process that owns agent's instance key: mine when it
// is this one, "" when nobody owns it. The lookup is one round trip to
// JetStream, bounded by leaseTimeout: past it, the error matches
// store.ErrUnavailable, not the caller's deadline.
func (n *node) owner(ctx context.Context, agent, key string) (owner string, mine bool, err error) {
	if n.holds(agent, key) {
		return n.name, true, nil
	}
	lctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	owner, err = n.leases.Owner(lctx, leaseName(agent, key))
	if err != nil {
		return "", false, coord.Unavailable(ctx, err)
	}
	return owner, owner == n.name, nil
}

// mayRun reports whether this process may run the tasks of agent's
// instance key: it owns it, or nobody does (as far as JetStream answers).
func (n *node) MayRun(ctx context.Context, agent, key string) bool {
	owner, mine, err := n.owner(ctx, agent, key)
	return err == nil && (owner == "" || mine)
}

// takeLease takes the lease of agent's instance key, which nobody owns,
// for this process, waiting at most leaseTimeout for a turn of it that
// runs here to end.
func (n *node) takeLease(ctx context.Context, agent, key string) error {
	inst, unhold, err := n.l.Hold(agent, key)
	if err != nil {
		return err
	}
	defer unhold()
	wctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	if err := inst.Acquire(wctx); err != nil {
		return fmt.Errorf("agent %q instance %q: %w (waiting for its turn here: %v)", agent, key, errMoved, err)
	}
	defer inst.Release()
	return n.Own(ctx, inst)
}

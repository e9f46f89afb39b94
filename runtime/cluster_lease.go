package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/runtime/internal/cluster"
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
	lease *cluster.Lease
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
func (n *node) adopt(inst *instance) { inst.placed.Store(&ownership{}) }

// ownOf returns the ownership of an instance of the node (adopt).
func ownOf(inst *instance) *ownership { return inst.placed.Load().(*ownership) }

// fence is the fence inst's commits carry.
func (n *node) fence(inst *instance) uint64 { return ownOf(inst).fence.Load() }

// failed fences inst off after a commit of it failed: refused for its
// fence, another process owns it, and own takes it again or routes there;
// without an answer, the batch may be stored or land later still, and own
// takes a new fence, which refuses it, before the instance is read again.
// Meanwhile its writes are refused.
func (n *node) failed(inst *instance, err error) {
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
func (n *node) own(ctx context.Context, inst *instance) error {
	r := n.r
	o := ownOf(inst)
	o.used.Store(time.Now().UnixNano())
	if o.lease != nil && o.lease.Held() {
		switch o.fence.Load() {
		case unknownFence:
			return r.refence(ctx, inst)
		case lostFence:
		default:
			return nil
		}
	}
	if o.lease != nil {
		r.logger.Warn("cluster: the lease of an instance was lost; taking it again", "agent", inst.agent.name, "instance", inst.key)
		n.forget(inst, o.lease)
		o.lease = nil
		o.fence.Store(0) // not this process's until it takes the lease again
	}
	// What this process read before may have changed on another.
	inst.unload()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	l, err := n.leases.Acquire(lctx, leaseName(inst.agent.name, inst.key))
	if err != nil {
		if he := (*cluster.HeldError)(nil); errors.As(err, &he) {
			return fmt.Errorf("agent %q instance %q: %w (%s)", inst.agent.name, inst.key, errMoved, he.Owner)
		}
		return fmt.Errorf("agent %q instance %q: take its lease: %w", inst.agent.name, inst.key, cluster.Unavailable(ctx, err))
	}
	// The fence is taken after the lease and before the instance is
	// loaded: what a former owner committed before it is loaded, what it
	// would commit after it is refused (store.Fence).
	fence, err := r.store.Fence(lctx, inst.agent.name, inst.key)
	if err != nil {
		n.forget(inst, l)
		return fmt.Errorf("agent %q instance %q: take its fence: %w", inst.agent.name, inst.key, cluster.Unavailable(ctx, err))
	}
	o.lease = l
	o.fence.Store(fence)
	n.mu.Lock()
	n.held[inst] = l
	n.mu.Unlock()
	// The tasks of the instance may have changed while another process
	// owned it.
	r.forgetTasks(inst)
	return nil
}

// refence takes a new fence for inst, whose lease this process keeps,
// after a commit of it got no answer (unknownFence): the batch may be
// stored, or still in flight, and the new fence makes the store refuse it
// if it lands later. Then the instance is read again, with its tasks. The
// lease is kept, not given up and taken again: a release still running
// in the background could purge the new lease. The caller holds inst's
// turn slot.
func (r *Runtime) refence(ctx context.Context, inst *instance) error {
	inst.unload()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	fence, err := r.store.Fence(lctx, inst.agent.name, inst.key)
	if err != nil {
		return fmt.Errorf("agent %q instance %q: take a new fence after a commit that got no answer: %w", inst.agent.name, inst.key, err)
	}
	ownOf(inst).fence.Store(fence)
	r.forgetTasks(inst)
	r.logger.Info("cluster: took a new fence after a commit that got no answer; reading the instance again", "agent", inst.agent.name, "instance", inst.key)
	return nil
}

// forgetTasks drops inst's tasks from the tasks' cache: they are read
// again from the store.
func (r *Runtime) forgetTasks(inst *instance) {
	r.tasks.mu.Lock()
	for id, t := range r.tasks.cache {
		if t.Agent == inst.agent.name && t.Instance == inst.key {
			delete(r.tasks.cache, id)
		}
	}
	r.tasks.mu.Unlock()
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

// fence is the fence of agent's instance key for a write of what its
// owner alone writes: zero outside a cluster, or if this process does not
// hold the instance's lease (it is not cached here, or was given up).
func (r *Runtime) fence(agent, key string) uint64 {
	if _, clustered := r.place.(*node); !clustered {
		return 0
	}
	r.cache.mu.Lock()
	in := r.cache.instances[instanceID{agent, key}]
	r.cache.mu.Unlock()
	if in == nil {
		return 0
	}
	return ownOf(in).fence.Load()
}

// taskFence is the fence of the instance whose tasks put are, for a
// commit of them: zero as for fence, or if they are not all one
// instance's.
func (r *Runtime) taskFence(put []*Task) uint64 {
	if len(put) == 0 {
		return 0
	}
	for _, t := range put[1:] {
		if t.Agent != put[0].Agent || t.Instance != put[0].Instance {
			return 0
		}
	}
	return r.fence(put[0].Agent, put[0].Instance)
}

// state is the extensions' state store: the state of an instance this
// process owns is written under the instance's fence (ownedState).
func (n *node) state() extensions.StateStore { return ownedState{n.r} }

// ownedState is the extensions' state store in a cluster: the state of
// an instance this process owns is written under the instance's fence,
// so that an extension of an owner that stalled past its lease cannot
// write over what the next owner's wrote.
type ownedState struct{ r *Runtime }

// GetState implements [extensions.StateStore].
func (s ownedState) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	return s.r.store.GetState(ctx, agent, key, extension)
}

// SetState implements [extensions.StateStore]: a commit of the state
// alone, under the instance's fence (none outside a cluster, or for an
// instance this process does not own).
func (s ownedState) SetState(ctx context.Context, agent, key, extension string, value []byte) error {
	return s.r.store.Commit(ctx, agent, key, store.Batch{State: map[string][]byte{extension: value}, Fence: s.r.fence(agent, key)})
}

// forget stops renewing l, inst's lease, and gives it up in the
// background unless it was lost.
func (n *node) forget(inst *instance, l *cluster.Lease) {
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
		if err := l.Release(ctx); err != nil && !errors.Is(err, cluster.ErrLost) {
			n.r.logger.Warn("cluster: giving up a lease failed; it expires on its own", "lease", l.Name(), "err", err)
		}
	}()
}

// evicted gives up the lease of an instance that left the cache.
func (n *node) evicted(inst *instance) {
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
				n.r.recoverOrphans()
			}()
		}
		n.mu.Lock()
		held := make(map[*instance]*cluster.Lease, len(n.held))
		for in, l := range n.held {
			held[in] = l
		}
		n.mu.Unlock()
		idleSince := time.Now().Add(-ttl).UnixNano()
		renew := map[*cluster.Lease]*instance{}
		for in, l := range held {
			o := ownOf(in)
			if o.used.Load() < idleSince && in.tryAcquire() {
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
						in.unload()
					}
					in.release()
					n.forget(in, l)
					continue
				}
				in.release()
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
	p, ok := n.r.store.(storePinger)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	err := p.Ping(ctx)
	switch {
	case err != nil && !n.storeDown:
		n.storeDown = true
		n.r.logger.Warn("cluster: the store does not answer; this process leaves the cluster until it does, and its instances and tasks move to the others", "err", err)
	case err == nil && n.storeDown:
		n.storeDown = false
		n.r.logger.Info("cluster: the store answers again; this process joins the cluster again")
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
func (n *node) renew(leases map[*cluster.Lease]*instance) {
	var wg sync.WaitGroup
	next := make(chan *cluster.Lease)
	for range min(renewers, len(leases)) {
		wg.Go(func() {
			for l := range next {
				ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
				err := l.Renew(ctx)
				cancel()
				switch {
				case errors.Is(err, cluster.ErrLost):
					n.mu.Lock()
					if in := leases[l]; n.held[in] == l {
						delete(n.held, in)
					}
					n.mu.Unlock()
					n.r.logger.Warn("cluster: a lease expired before it was renewed; its instance may run on another process now", "lease", l.Name())
				case err != nil:
					n.r.logger.Warn("cluster: renewing a lease failed; trying again", "lease", l.Name(), "err", err)
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
	n.r.cache.mu.Lock()
	in := n.r.cache.instances[instanceID{agent, key}]
	n.r.cache.mu.Unlock()
	if in == nil {
		return false
	}
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
	r := n.r
	r.cache.mu.Lock()
	in := r.cache.instances[instanceID{agent, key}]
	if in != nil {
		in.refs++ // not evicted while pinned
	}
	r.cache.mu.Unlock()
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
		r.unhold(in)
		return nil, false
	}
	return func() {
		n.mu.Lock()
		o.pins--
		n.mu.Unlock()
		r.unhold(in)
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
		return "", false, cluster.Unavailable(ctx, err)
	}
	return owner, owner == n.name, nil
}

// mayRun reports whether this process may run the tasks of agent's
// instance key: it owns it, or nobody does (as far as JetStream answers).
func (n *node) mayRun(ctx context.Context, agent, key string) bool {
	owner, mine, err := n.owner(ctx, agent, key)
	return err == nil && (owner == "" || mine)
}

// takeLease takes the lease of agent's instance key, which nobody owns,
// for this process, waiting at most leaseTimeout for a turn of it that
// runs here to end.
func (r *Runtime) takeLease(ctx context.Context, agent, key string) error {
	a, ok := r.agents.byName[agent]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownAgent, agent)
	}
	inst := r.instance(a, key)
	defer r.unhold(inst)
	wctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	if err := inst.acquire(wctx); err != nil {
		return fmt.Errorf("agent %q instance %q: %w (waiting for its turn here: %v)", agent, key, errMoved, err)
	}
	defer inst.release()
	return r.place.own(ctx, inst)
}

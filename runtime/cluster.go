package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/envref"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/cluster"
	"github.com/ganglion-dev/ganglion/store"
)

// errMoved is the error of a turn that reached a process which does not
// own its instance: the sender looks the owner up again and goes there.
var errMoved = errors.New("instance owned by another process")

// node is the runtime's place in a cluster (the config's cluster block):
// its connection to NATS, the leases of the instances it owns, and the
// subscription that runs the turns other processes route to it.
//
// A turn runs on the process that holds its instance's lease (see
// RATIONALE.md, "Cluster mode: one owner per instance"). A process takes
// the lease when it runs a turn of an instance nobody owns, renews it
// while it keeps the instance, and gives it up when the instance idles a
// whole TTL, leaves the cache, or the runtime closes; a process that dies
// loses its leases when they expire. The owner alone keeps the instance in
// memory: taking a lease (again) reloads it from the shared store.
type node struct {
	r      *Runtime
	nc     *nats.Conn
	leases *cluster.Leases
	// members holds each live process's lease on its own name, and
	// member is this process's.
	members *cluster.Leases
	member  *cluster.Lease
	waits   *cluster.Waits // the cluster's wait-for graph of agent requests
	name    string         // this process's, in leases and subjects
	prefix  string         // of every process's subjects: "<cluster>.node."
	events  string         // of the events' subjects: "<cluster>.events."
	unbus   func()         // ends the publishing of this process's events
	subs    []*nats.Subscription

	mu      sync.Mutex
	held    map[*instance]*cluster.Lease  // the leases held, by instance
	running map[string]context.CancelFunc // routed turns running here, by request ID
	closed  bool
	live    []string // the processes alive, sorted, as last listed
	// leaving are called when a process leaves, by its name: the turns
	// routed to it stop waiting for its answer.
	leaving map[string]map[*func()]struct{}
	// orphans is until when to look for the instances and tasks of a
	// process that stopped, which its leases' expiry frees.
	orphans    time.Time
	recovering atomic.Bool // a recovery runs
	// watch follows the live processes until unwatch.
	watch   context.Context
	unwatch context.CancelFunc

	stop      chan struct{}  // ends the renewal loop
	done      chan struct{}  // closed when it has ended
	handlers  sync.WaitGroup // routed requests being answered
	releasing sync.WaitGroup // leases being given up in the background
}

// Defaults of the config's cluster block.
const (
	defaultClusterName = "ganglion"
	defaultLeaseTTL    = 10 * time.Second
)

// leaseTimeout bounds one lease operation: taking, renewing or giving up
// a lease is one round trip to JetStream.
const leaseTimeout = 5 * time.Second

// openCluster connects to the cluster c names and opens its shared store,
// unless o gives a store. The node starts serving when [node.start] runs.
func (r *Runtime) openCluster(ctx context.Context, o *options, c *config.Cluster) error {
	if o.memory {
		return errors.New("cluster: a cluster shares its store in JetStream; it cannot run on the memory store")
	}
	if o.secretKey == nil && o.secretKeyFile == "" && os.Getenv(SecretKeyEnv) == "" {
		return fmt.Errorf("cluster: every process seals and opens the same secrets, so they need the same key: set %s (32 bytes, base64) in each process's environment", SecretKeyEnv)
	}
	name := c.Name
	if name == "" {
		name = defaultClusterName
	}
	ttl := defaultLeaseTTL
	if c.LeaseTTL != "" {
		ttl, _ = time.ParseDuration(c.LeaseTTL) // Validate checked it
	}
	self := nodeName()
	urls := envref.Expand(c.URL, func(r envref.Ref) string { return os.Getenv(r.Name) })
	opts := []nats.Option{nats.Name("ganglion " + self), nats.MaxReconnects(-1)}
	if c.Credentials != "" {
		opts = append(opts, nats.UserCredentials(c.Credentials))
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return fmt.Errorf("cluster: connect to %s: %w", redactURLs(urls), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("cluster: %w", err)
	}
	leases, err := cluster.Open(ctx, js, name+"_leases", self, ttl, c.Replicas)
	if err != nil {
		nc.Close()
		return err
	}
	members, err := cluster.Open(ctx, js, name+"_nodes", self, ttl, c.Replicas)
	if err != nil {
		nc.Close()
		return err
	}
	waits, err := cluster.OpenWaits(ctx, nc, js, name+"_waits")
	if err != nil {
		nc.Close()
		return err
	}
	n := &node{r: r, nc: nc, leases: leases, members: members, waits: waits, name: self, prefix: name + ".node.", events: name + ".events.",
		held: map[*instance]*cluster.Lease{}, running: map[string]context.CancelFunc{}}
	r.node = n
	r.tasks.api.remote = n.deliverAnswer
	if o.store == nil {
		st, err := store.OpenJetStream(ctx, nc, name, store.WithReplicas(max(c.Replicas, 1)))
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		r.store, r.ownsStore = st, true
	}
	return nil
}

// nodeName names this process in the cluster: its host, its process ID
// and a random suffix, so that a restarted process is never mistaken for
// the one before it.
func nodeName() string {
	host, _ := os.Hostname()
	host = unsafeSubject.ReplaceAllString(host, "-")
	if len(host) > 32 {
		host = host[:32]
	}
	if host == "" {
		host = "host"
	}
	id := nuid.Next()
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + id[len(id)-6:]
}

var unsafeSubject = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// redactURLs returns NATS URLs as an error may show them: without
// passwords.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		} else if at := strings.LastIndex(p, "@"); at >= 0 {
			parts[i] = "…" + p[at:]
		}
	}
	return strings.Join(parts, ",")
}

// start serves the turns routed to this process and starts renewing its
// leases.
func (n *node) start() error {
	for suffix, h := range map[string]nats.MsgHandler{".send": n.serve, ".cancel": n.cancel, ".report": n.serveReport, ".act": n.serveAct} {
		sub, err := n.nc.Subscribe(n.prefix+n.name+suffix, h)
		if err != nil {
			return fmt.Errorf("cluster: subscribe: %w", err)
		}
		n.subs = append(n.subs, sub) // shutdown ends them, New failing too
	}
	// Every process's events reach every bus: a console or an event
	// stream on any process sees the whole cluster.
	sub, err := n.nc.Subscribe(n.events+">", n.receiveEvent)
	if err != nil {
		return fmt.Errorf("cluster: subscribe: %w", err)
	}
	n.subs = append(n.subs, sub)
	n.unbus = n.r.bus.Subscribe("*", n.publishEvent)
	if err := n.nc.Flush(); err != nil {
		return fmt.Errorf("cluster: subscribe: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if n.member, err = n.members.Acquire(ctx, n.name); err != nil {
		return fmt.Errorf("cluster: join: %w", err)
	}
	// The live processes, as they come and go, place the instances
	// nobody owns; wait for the first list.
	first := make(chan struct{})
	var once sync.Once
	n.watch, n.unwatch = context.WithCancel(context.Background())
	if err := n.members.WatchHolders(n.watch, func(live []string) {
		n.setLive(live)
		once.Do(func() { close(first) })
	}); err != nil {
		return fmt.Errorf("cluster: join: %w", err)
	}
	select {
	case <-first:
	case <-ctx.Done():
		return fmt.Errorf("cluster: join: listing the processes: %w", ctx.Err())
	}
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go n.renewLoop()
	return nil
}

// setLive notes the processes alive. When one has gone, the instances it
// owned are freed within a lease TTL: for two TTLs, each renewal round
// looks for what they left undone.
func (n *node) setLive(live []string) {
	if !slices.Contains(live, n.name) {
		live = append(live, n.name)
		slices.Sort(live)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.live {
		if !slices.Contains(live, p) {
			n.r.logger.Info("cluster: a process left; taking over what it leaves", "process", p)
			n.orphans = time.Now().Add(2*n.leases.TTL() + time.Second)
			for f := range n.leaving[p] {
				(*f)()
			}
			delete(n.leaving, p)
		}
	}
	n.live = live
}

// onLeave calls f if process p leaves before stop is called.
func (n *node) onLeave(p string, f func()) (stop func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leaving == nil {
		n.leaving = map[string]map[*func()]struct{}{}
	}
	if n.leaving[p] == nil {
		n.leaving[p] = map[*func()]struct{}{}
	}
	n.leaving[p][&f] = struct{}{}
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.leaving[p], &f)
		if len(n.leaving[p]) == 0 {
			delete(n.leaving, p)
		}
	}
}

// place returns the process a turn of agent's instance key that nobody
// owns runs on: the live process whose name, hashed with the instance's,
// scores highest (rendezvous hashing), so that every process picks the
// same one and a process joining or leaving moves only its share.
func (n *node) place(agent, key string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	best, bestScore := n.name, uint64(0)
	for _, p := range n.live {
		h := fnv.New64a()
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write([]byte(leaseName(agent, key)))
		if s := mix(h.Sum64()); s > bestScore || s == bestScore && p < best {
			best, bestScore = p, s
		}
	}
	return best
}

// leaseName is the name of an instance's lease.
func leaseName(agent, key string) string { return agent + "/" + key }

// own makes sure this process holds inst's lease, taking it if nobody
// does, and fails with an error matching errMoved if another process
// holds it. The caller holds inst's turn slot.
func (r *Runtime) own(ctx context.Context, inst *instance) error {
	n := r.node
	if n == nil {
		return nil
	}
	inst.used.Store(time.Now().UnixNano())
	if inst.lease != nil && inst.lease.Held() {
		return nil
	}
	if inst.lease != nil {
		r.logger.Warn("cluster: the lease of an instance was lost; taking it again", "agent", inst.agent.name, "instance", inst.key)
		n.forget(inst, inst.lease)
		inst.lease = nil
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
		return fmt.Errorf("agent %q instance %q: take its lease: %w", inst.agent.name, inst.key, err)
	}
	inst.lease = l
	n.mu.Lock()
	n.held[inst] = l
	n.mu.Unlock()
	// The tasks of the instance may have changed while another process
	// owned it.
	r.tasks.mu.Lock()
	for id, t := range r.tasks.cache {
		if t.Agent == inst.agent.name && t.Instance == inst.key {
			delete(r.tasks.cache, id)
		}
	}
	r.tasks.mu.Unlock()
	return nil
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
// those of instances idle for a whole TTL.
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
		var renew []*cluster.Lease
		for in, l := range held {
			if in.used.Load() < idleSince && in.tryAcquire() {
				// Idle, no turn runs or waits, and nothing writes its
				// tasks: let it go, so that another process may take it
				// without waiting.
				n.mu.Lock()
				pinned := in.pins > 0
				if !pinned && n.held[in] == l {
					delete(n.held, in)
				}
				n.mu.Unlock()
				if !pinned {
					if in.lease == l {
						in.lease = nil
						in.unload()
					}
					in.release()
					n.forget(in, l)
					continue
				}
				in.release()
			}
			renew = append(renew, l)
		}
		n.renew(renew)
	}
}

// mix is splitmix64's finalizer: FNV's high bits barely change when
// only the end of its input does (names differing in a suffix), which
// would place most instances on one process.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// renewers bounds the renewals in flight: one after the other, a
// thousand leases at a third of a millisecond each would outlast a short
// TTL.
const renewers = 64

// renew renews leases, renewers at a time.
func (n *node) renew(leases []*cluster.Lease) {
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
					n.r.logger.Warn("cluster: a lease expired before it was renewed; its instance may run on another process now", "lease", l.Name())
				case err != nil:
					n.r.logger.Warn("cluster: renewing a lease failed; trying again", "lease", l.Name(), "err", err)
				}
			}
		})
	}
	for _, l := range leases {
		next <- l
	}
	close(next)
	wg.Wait()
}

// renewMembership renews this process's place among the live ones (taking
// it again if it expired while the process paused), and lists them.
func (n *node) renewMembership() {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	err := n.member.Renew(ctx)
	if errors.Is(err, cluster.ErrLost) {
		var le *cluster.Lease
		if le, err = n.members.Acquire(ctx, n.name); err == nil {
			n.member = le
		}
	}
	if err != nil {
		n.r.logger.Warn("cluster: renewing this process's membership failed; trying again", "err", err)
	}
}

// recoverOrphans does for the instances a stopped process owned what New
// does at start-up: it continues their tasks, resumes their answered
// turns and expires their overdue pending items. Instances other live
// processes own are theirs; each freed one is taken by one process (the
// one it hashes to), and a task turn that ran already is refused there.
func (r *Runtime) recoverOrphans() {
	if !r.gate.enter() {
		return
	}
	defer r.gate.leave()
	if err := r.recover(r.tasks.bg, true); err != nil && r.tasks.bg.Err() == nil {
		r.logger.Warn("cluster: recovering what a stopped process left failed in part", "err", err)
	}
}

// remoteSend is a turn routed to the process that owns its instance.
type remoteSend struct {
	ID       string              `json:"id"`
	Agent    string              `json:"agent"`
	Instance string              `json:"instance"`
	Input    pipeline.InputEvent `json:"input"`
	// TimeoutMS is what was left of the sender's deadline; 0: none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// remoteReply is the owner's answer to a remoteSend.
type remoteReply struct {
	Result *pipeline.TurnResult `json:"result,omitempty"`
	Error  string               `json:"error,omitempty"`
	// Kinds name the sentinel errors Error matches, so that the sender's
	// errors.Is sees what a local turn's caller would.
	Kinds []string `json:"kinds,omitempty"`
}

// remoteKinds are the sentinel errors a routed turn's error keeps.
var remoteKinds = map[string]error{
	"moved": errMoved, "closed": ErrClosed, "unknown-agent": ErrUnknownAgent,
	"unavailable": ErrAgentUnavailable, "cycle": ErrCycle, "depth": ErrDepth,
	"paused": ErrPaused, "task-failed": ErrTaskFailed, "task-moved": errTaskMoved,
	"budget": errBudget, "no-task": ErrNoTask, "invalid-name": store.ErrInvalidName,
	"deadline": context.DeadlineExceeded, "canceled": context.Canceled,
	"item-not-found": ledger.ErrNotFound, "item-resolved": ledger.ErrResolved,
	"invalid-action": extensions.ErrInvalidAction,
}

// remoteError is a routed turn's error as the owner wrote it.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.kinds }

// replyError is rep's error, or nil.
func replyError(rep remoteReply) error {
	if rep.Error == "" {
		return nil
	}
	e := &remoteError{msg: rep.Error}
	for _, k := range rep.Kinds {
		if s, ok := remoteKinds[k]; ok {
			e.kinds = append(e.kinds, s)
		}
	}
	return e
}

// errorReply is the reply that carries err.
func errorReply(err error) remoteReply {
	rep := remoteReply{Error: err.Error()}
	for k, s := range remoteKinds {
		if errors.Is(err, s) {
			rep.Kinds = append(rep.Kinds, k)
		}
	}
	slices.Sort(rep.Kinds)
	return rep
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
// owner alone writes (a task of the instance) outside a turn.
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
	ok = l != nil && l.Held()
	if ok {
		in.pins++
	}
	n.mu.Unlock()
	if !ok {
		r.unhold(in)
		return nil, false
	}
	return func() {
		n.mu.Lock()
		in.pins--
		n.mu.Unlock()
		r.unhold(in)
	}, true
}

// owner returns the process that owns agent's instance key: mine when it
// is this one, "" when nobody owns it.
func (n *node) owner(ctx context.Context, agent, key string) (owner string, mine bool, err error) {
	if n.holds(agent, key) {
		return n.name, true, nil
	}
	owner, err = n.leases.Owner(ctx, leaseName(agent, key))
	if err != nil {
		return "", false, err
	}
	return owner, owner == n.name, nil
}

// forward runs a turn on owner and returns its result.
func (n *node) forward(ctx context.Context, owner, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	req := remoteSend{ID: nuid.Next(), Agent: agent, Instance: key, Input: in}
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q: route to process %s: %w", agent, key, owner, err)
	}
	// The owner may die while it runs the turn: its departure ends the
	// wait (its answer will never come).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var left atomic.Bool
	defer n.onLeave(owner, func() { left.Store(true); cancel() })()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+owner+".send", data)
	switch {
	case left.Load() && ctx.Err() == nil:
		// Not errMoved: the turn may have run in part, and running it
		// again is not this call's to decide. A task's turn is continued
		// by the process that takes the instance over.
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q: process %s stopped while it ran the turn", agent, key, owner)
	case ctx.Err() != nil:
		// Tell the owner, so that the turn ends there too.
		n.nc.Publish(n.prefix+owner+".cancel", []byte(req.ID))
		return &pipeline.TurnResult{FinishReason: pipeline.FinishAborted}, fmt.Errorf("agent %q instance %q on process %s: %w", agent, key, owner, ctx.Err())
	case errors.Is(err, nats.ErrNoResponders):
		// The owner is gone; its lease expires within a TTL.
		return nil, fmt.Errorf("agent %q instance %q: %w (%s, which does not answer)", agent, key, errMoved, owner)
	case err != nil:
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q on process %s: %w", agent, key, owner, err)
	}
	var rep remoteReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q on process %s: malformed reply: %w", agent, key, owner, err)
	}
	return rep.Result, replyError(rep)
}

// serve answers a turn another process routed here, in a goroutine of its
// own: NATS calls a subscription's handler for one message at a time.
func (n *node) serve(m *nats.Msg) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.reply(m, errorReply(ErrClosed))
		return
	}
	n.handlers.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.handlers.Done()
		var req remoteSend
		if err := json.Unmarshal(m.Data, &req); err != nil {
			n.reply(m, remoteReply{Error: "cluster: malformed routed turn: " + err.Error()})
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		if req.TimeoutMS > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond)
		}
		defer cancel()
		n.mu.Lock()
		n.running[req.ID] = cancel
		n.mu.Unlock()
		defer func() {
			n.mu.Lock()
			delete(n.running, req.ID)
			n.mu.Unlock()
		}()
		res, err := n.r.sendHere(ctx, req.Agent, req.Instance, req.Input)
		rep := remoteReply{Result: res}
		if err != nil {
			rep = errorReply(err)
			rep.Result = res
		}
		n.reply(m, rep)
	}()
}

func (n *node) reply(m *nats.Msg, rep remoteReply) {
	data, err := json.Marshal(rep)
	if err != nil {
		data, _ = json.Marshal(remoteReply{Error: "cluster: encode reply: " + err.Error()})
	}
	if err := m.Respond(data); err != nil {
		n.r.logger.Warn("cluster: answering a routed turn failed", "err", err)
	}
}

// cancel ends a routed turn whose sender gave up.
func (n *node) cancel(m *nats.Msg) {
	n.mu.Lock()
	cancel := n.running[string(m.Data)]
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// shutdown stops serving and renewing, and gives up every lease, so that
// other processes take the instances over at once. The runtime's turns
// have ended.
func (n *node) shutdown() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	if n.unbus != nil {
		n.unbus()
	}
	var errs []error
	for _, s := range n.subs {
		if err := s.Unsubscribe(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: unsubscribe: %w", err))
		}
	}
	n.handlers.Wait()
	if n.stop != nil {
		close(n.stop)
		<-n.done
	}
	if n.unwatch != nil {
		n.unwatch()
	}
	n.mu.Lock()
	held := make(map[*instance]*cluster.Lease, len(n.held))
	for in, l := range n.held {
		held[in] = l
	}
	n.mu.Unlock()
	for in, l := range held {
		n.forget(in, l)
	}
	if n.member != nil {
		n.forget(nil, n.member)
	}
	n.releasing.Wait()
	return errors.Join(errs...)
}

// route runs a turn on the process that owns its instance: here when this
// process does or nobody does (it takes the lease then), else there. When
// the owner has just given the instance up, or has died and its lease has
// not expired yet, it looks again, until ctx ends or twice the lease TTL
// has passed. The error it returns never matches errMoved: that error
// means "this turn did not run here", and a turn that called this one did
// run.
//
// place says what to do when nobody owns the instance: run the turn on
// the process the instance's name hashes to (true), or here.
func (r *Runtime) route(ctx context.Context, agentName, key string, in pipeline.InputEvent, place bool) (*pipeline.TurnResult, error) {
	if _, err := r.runnable(agentName); err != nil {
		return nil, err
	}
	if err := store.ValidateInstanceKey(key); err != nil {
		return nil, err
	}
	ttl := r.node.leases.TTL()
	giveUp := time.Now().Add(2 * ttl)
	wait := 10 * time.Millisecond
	for {
		owner, mine, err := r.node.owner(ctx, agentName, key)
		if err != nil {
			return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, fmt.Errorf("agent %q instance %q: %w", agentName, key, err)
		}
		placed := owner == "" && place
		if placed {
			owner = r.node.place(agentName, key)
			mine = owner == r.node.name
		}
		var res *pipeline.TurnResult
		if mine || owner == "" {
			res, err = r.sendHere(ctx, agentName, key, in)
		} else {
			res, err = r.node.forward(ctx, owner, agentName, key, in)
		}
		if !errors.Is(err, errMoved) {
			return res, err
		}
		if placed {
			place = false // the process it hashed to is gone: run it here
		}
		if time.Now().After(giveUp) {
			return &pipeline.TurnResult{FinishReason: pipeline.FinishError},
				fmt.Errorf("agent %q instance %q: its owner did not answer, and its lease (%v) did not pass to this process within %v: %s", agentName, key, ttl, 2*ttl, err)
		}
		select {
		case <-ctx.Done():
			return &pipeline.TurnResult{FinishReason: pipeline.FinishAborted}, fmt.Errorf("agent %q instance %q: waiting for its owner: %w", agentName, key, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// remoteReport is a child task's report, routed to the process that owns
// its parent's instance.
type remoteReport struct {
	Parent   string             `json:"parent"`
	Agent    string             `json:"agent"`    // of the parent
	Instance string             `json:"instance"` // of the parent
	Response DelegationResponse `json:"response"`
}

// report hands a child task's report to its parent, parentID, on the
// process that owns the parent's instance, this one if nobody does: the
// parent's task is written there alone. The child's task is deleted in
// the commit that adds the report, so a report that does not get there
// (no process takes the parent's instance within twice the lease TTL)
// leaves the child stored, and its answer, in its history, is reported
// again when its instance next loads (resettleTask).
func (n *node) report(ctx context.Context, parentID string, resp DelegationResponse) error {
	giveUp := time.Now().Add(2 * n.leases.TTL())
	wait := 10 * time.Millisecond
	for {
		parent, err := n.r.Task(ctx, parentID)
		if errors.Is(err, ErrNoTask) {
			return n.r.applyReport(ctx, parentID, resp) // which drops it, deleting the child
		}
		if err != nil {
			return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parentID, err)
		}
		err = n.reportTo(ctx, &parent, resp)
		if !errors.Is(err, errMoved) {
			return err
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("task %s: reporting to task %s: no process took its instance %s/%s within %v: %s", resp.ChildTaskID, parentID, parent.Agent, parent.Instance, 2*n.leases.TTL(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parentID, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// reportTo applies the report here if this process owns the parent's
// instance, or can take it, and sends it to its owner otherwise.
func (n *node) reportTo(ctx context.Context, parent *Task, resp DelegationResponse) error {
	owner, mine, err := n.owner(ctx, parent.Agent, parent.Instance)
	switch {
	case err != nil:
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parent.ID, err)
	case mine || owner == "":
		unpin, ok := n.pin(parent.Agent, parent.Instance)
		if !ok {
			// Nobody's, or this process's lease went stale: take it.
			if err := n.r.takeLease(ctx, parent.Agent, parent.Instance); err != nil {
				return err
			}
			unpin, ok = n.pin(parent.Agent, parent.Instance)
		}
		if !ok {
			return fmt.Errorf("task %s: reporting to task %s: %w (the lease of %s/%s was given up meanwhile)", resp.ChildTaskID, parent.ID, errMoved, parent.Agent, parent.Instance)
		}
		defer unpin()
		return n.r.applyReport(ctx, parent.ID, resp)
	}
	data, err := json.Marshal(remoteReport{Parent: parent.ID, Agent: parent.Agent, Instance: parent.Instance, Response: resp})
	if err != nil {
		return fmt.Errorf("task %s: reporting to task %s: %w", resp.ChildTaskID, parent.ID, err)
	}
	rctx, cancel := context.WithTimeout(ctx, n.r.calls.timeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+owner+".report", data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("task %s: reporting to task %s: %w (%s, which does not answer)", resp.ChildTaskID, parent.ID, errMoved, owner)
	case err != nil:
		return fmt.Errorf("task %s: reporting to task %s on process %s: %w", resp.ChildTaskID, parent.ID, owner, err)
	}
	var rep remoteReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return fmt.Errorf("task %s: reporting to task %s on process %s: malformed reply: %w", resp.ChildTaskID, parent.ID, owner, err)
	}
	return replyError(rep)
}

// serveReport applies a report routed here, if this process still owns
// the parent's instance.
func (n *node) serveReport(m *nats.Msg) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.reply(m, errorReply(ErrClosed))
		return
	}
	n.handlers.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.handlers.Done()
		var req remoteReport
		if err := json.Unmarshal(m.Data, &req); err != nil {
			n.reply(m, remoteReply{Error: "cluster: malformed routed report: " + err.Error()})
			return
		}
		unpin, ok := n.pin(req.Agent, req.Instance)
		if !ok {
			n.reply(m, errorReply(fmt.Errorf("task %s: %w (not %s)", req.Parent, errMoved, n.name)))
			return
		}
		defer unpin()
		var rep remoteReply
		if err := n.r.applyReport(n.r.tasks.bg, req.Parent, req.Response); err != nil {
			rep = errorReply(err)
		}
		n.reply(m, rep)
	}()
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
	return r.own(ctx, inst)
}

// awaitAnswer receives the answer to replyTo, an Ask of this process,
// when another process's task gives it, into wait; stop ends the wait.
func (n *node) awaitAnswer(replyTo string, wait chan<- Report) (stop func(), err error) {
	sub, err := n.nc.Subscribe(n.prefix+"answer."+replyTo, func(m *nats.Msg) {
		var rep Report
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			m.Respond([]byte("malformed answer: " + err.Error()))
			return
		}
		if _, ok := n.r.tasks.api.waiters.LoadAndDelete(replyTo); !ok {
			m.Respond([]byte("no caller waits for it any more"))
			return
		}
		wait <- rep // buffered, and the waiter was taken: never blocks
		m.Respond(nil)
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: wait for an answer: %w", err)
	}
	if err := n.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("cluster: wait for an answer: %w", err)
	}
	return func() { sub.Unsubscribe() }, nil
}

// deliverAnswer hands an Ask's answer to the process that waits for it.
func (n *node) deliverAnswer(ctx context.Context, rep Report) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+"answer."+rep.ReplyTo, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("no caller waits for task %s any more (it gave up, or its process stopped); the answer is in %s/%s's history", rep.TaskID, rep.Agent, rep.Instance)
	case err != nil:
		return fmt.Errorf("task %s: handing its answer to the process that asked: %w", rep.TaskID, err)
	case len(msg.Data) > 0:
		return fmt.Errorf("task %s: the process that asked refused its answer: %s", rep.TaskID, msg.Data)
	}
	return nil
}

// remoteAct is a human's action on a pending item, routed to the process
// that owns the item's instance. A provided value travels sealed with the
// key every process shares, never in clear.
type remoteAct struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Value  string `json:"value,omitempty"`
	Sealed []byte `json:"sealed,omitempty"` // Value, of a provide
	Reason string `json:"reason,omitempty"`
}

// actAAD binds a sealed value to the item it answers.
func actAAD(id string) string { return "cluster-act/" + id }

// act applies a human's action to item id on the process that owns its
// instance: here when this one does or nobody does.
func (n *node) act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	giveUp := time.Now().Add(2 * n.leases.TTL())
	wait := 10 * time.Millisecond
	for {
		it, err := n.r.ledger.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		owner, mine, err := n.owner(ctx, it.Agent, it.Instance)
		if err != nil {
			return nil, fmt.Errorf("pending item %q: %w", id, err)
		}
		var res *pipeline.TurnResult
		if mine || owner == "" {
			res, err = n.r.actHere(ctx, id, act)
		} else {
			res, err = n.forwardAct(ctx, owner, id, act)
		}
		if !errors.Is(err, errMoved) {
			return res, err
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("pending item %q: the process that owns agent %q instance %q did not answer, and its lease did not pass to this process within %v", id, it.Agent, it.Instance, 2*n.leases.TTL())
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pending item %q: waiting for its instance's owner: %w", id, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func (n *node) forwardAct(ctx context.Context, owner, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	req := remoteAct{ID: id, Kind: string(act.Kind), Value: act.Value, Reason: act.Reason}
	if act.Kind == extensions.ActionProvide {
		sealed, err := n.r.keyring.Seal([]byte(act.Value), actAAD(id))
		if err != nil {
			return nil, fmt.Errorf("pending item %q: %w", id, err)
		}
		req.Value, req.Sealed = "", sealed
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("pending item %q: %w", id, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var left atomic.Bool
	defer n.onLeave(owner, func() { left.Store(true); cancel() })()
	msg, err := n.nc.RequestWithContext(rctx, n.prefix+owner+".act", data)
	switch {
	case left.Load() && ctx.Err() == nil:
		return nil, fmt.Errorf("pending item %q: process %s stopped while it applied the action; see whether the item is still open", id, owner)
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("pending item %q: %w (%s, which does not answer)", id, errMoved, owner)
	case err != nil:
		return nil, fmt.Errorf("pending item %q on process %s: %w", id, owner, err)
	}
	var rep remoteReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return nil, fmt.Errorf("pending item %q on process %s: malformed reply: %w", id, owner, err)
	}
	return rep.Result, replyError(rep)
}

// serveAct applies an action routed here; a process that no longer owns
// the item's instance says so, and the sender looks again.
func (n *node) serveAct(m *nats.Msg) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.reply(m, errorReply(ErrClosed))
		return
	}
	n.handlers.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.handlers.Done()
		var req remoteAct
		if err := json.Unmarshal(m.Data, &req); err != nil {
			n.reply(m, remoteReply{Error: "cluster: malformed routed action: " + err.Error()})
			return
		}
		act := extensions.Action{Kind: extensions.ActionKind(req.Kind), Value: req.Value, Reason: req.Reason}
		if req.Sealed != nil {
			v, err := n.r.keyring.Open(req.Sealed, actAAD(req.ID))
			if err != nil {
				n.reply(m, remoteReply{Error: fmt.Sprintf("pending item %q: the provided value cannot be opened here: do all processes share one %s?", req.ID, SecretKeyEnv)})
				return
			}
			act.Value = string(v)
		}
		// The sender gave up when its own wait ended; the action is the
		// human's, and runs to its end here.
		res, err := n.r.actHere(n.r.tasks.bg, req.ID, act)
		rep := remoteReply{Result: res}
		if err != nil {
			rep = errorReply(err)
			rep.Result = res
		}
		n.reply(m, rep)
	}()
}

// publishEvent sends an event of this process's bus to the others.
func (n *node) publishEvent(ev events.Event) {
	if ev.Process != "" {
		return // another's, received
	}
	ev.Process = n.name
	data, err := json.Marshal(ev)
	if err != nil {
		n.r.logger.Warn("cluster: an event cannot be sent to the other processes", "topic", ev.Topic, "err", err)
		return
	}
	if err := n.nc.Publish(n.events+ev.Topic, data); err != nil {
		n.r.logger.Warn("cluster: sending an event to the other processes failed", "topic", ev.Topic, "err", err)
	}
}

// receiveEvent publishes another process's event on this one's bus.
func (n *node) receiveEvent(m *nats.Msg) {
	var ev events.Event
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		n.r.logger.Warn("cluster: a malformed event from another process", "subject", m.Subject, "err", err)
		return
	}
	if ev.Process == n.name || ev.Process == "" {
		return // its own, back
	}
	n.r.bus.Publish(ev)
}

// waitFor records in the cluster's wait-for graph that a turn of self
// waits (at most timeout) for one of to, unless to's turns already wait,
// directly or through others and on any process, for self's: the cycle of
// two independent turns calling each other, which the chain a call carries
// cannot see. done takes the edge away.
func (n *node) waitFor(ctx context.Context, self, to string, timeout time.Duration) (done func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, leaseTimeout)
	defer cancel()
	remove, err := n.waits.Add(wctx, self, to, timeout)
	if err != nil {
		return nil, err
	}
	done = func() {
		n.releasing.Add(1)
		go func() {
			defer n.releasing.Done()
			ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
			defer cancel()
			if err := remove(ctx); err != nil {
				n.r.logger.Warn("cluster: removing a wait from the wait-for graph failed; it expires on its own", "from", self, "to", to, "err", err)
			}
		}()
	}
	path, err := n.waits.Path(wctx, to, self)
	if err != nil {
		done()
		return nil, err
	}
	if path != nil {
		done()
		return nil, fmt.Errorf("%w: %s → %s (a turn of %s waits for %s already)", ErrCycle, self, strings.Join(path, " → "), to, self)
	}
	return done, nil
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
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

	"github.com/ganglion-dev/ganglion/internal/envref"
	"github.com/ganglion-dev/ganglion/runtime/internal/coord"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/store"
	jsstore "github.com/ganglion-dev/ganglion/store/jetstream"
)

// errMoved is the error of a request that reached a process which does
// not own its instance: the sender looks the owner up again and goes
// there.
var errMoved = seam.ErrMoved

func init() { seam.Cluster = open }

var _ seam.Placement = (*node)(nil)

// node is the runtime's place in a cluster (the config's cluster block):
// its connection to NATS, the leases of the instances it owns, and the
// subscription that runs the turns other processes route to it. It is the
// runtime's placement ([seam.Placement]).
//
// A turn runs on the process that holds its instance's lease (see
// RATIONALE.md, "Cluster mode: one owner per instance"). A process takes
// the lease when it runs a turn of an instance nobody owns, renews it
// while it keeps the instance, and gives it up when the instance idles a
// whole TTL, leaves the cache, or the runtime closes; a process that dies
// loses its leases when they expire. The owner alone keeps the instance in
// memory: taking a lease (again) reloads it from the shared store.
type node struct {
	l     seam.Local
	env   seam.ClusterEnv
	log   *slog.Logger
	store store.Store // the store the processes share
	errs  seam.Errors
	// kinds are the errors a routed request's error keeps: the runtime's
	// and the cluster's own (remoteKinds).
	kinds  map[string]error
	nc     *nats.Conn
	leases *coord.Leases
	// members holds each live process's lease on its own name, and
	// member is this process's.
	members *coord.Leases
	member  *coord.Lease
	waits   *coord.Waits    // the cluster's wait-for graph of agent requests
	budgets *coord.Counters // what each task tree spent, across processes (budget.go)
	name    string          // this process's, in leases and subjects
	prefix  string          // of every process's subjects: "<cluster>.node."
	events  string          // of the events' subjects: "<cluster>.events."
	unbus   func()          // ends the publishing of this process's events
	subs    []*nats.Subscription

	mu      sync.Mutex
	held    map[seam.Held]*coord.Lease    // the leases held, by instance
	running map[string]context.CancelFunc // routed turns running here, by request ID
	serving map[string]bool               // requests being answered here, by call ID (serveCalls)
	closed  bool
	live    []string // the processes alive, sorted, as last listed
	// leaving are called when a process leaves, by its name: the turns
	// routed to it stop waiting for its answer.
	leaving map[string]map[*func()]struct{}
	// orphans is until when to look for the instances and tasks of a
	// process that stopped, which its leases' expiry frees.
	orphans    time.Time
	recovering atomic.Bool        // a recovery runs
	unwatch    context.CancelFunc // ends the watch of the live processes

	stop      chan struct{}  // ends the renewal loop
	done      chan struct{}  // closed when it has ended
	handlers  sync.WaitGroup // routed requests being answered
	releasing sync.WaitGroup // leases being given up in the background
	adding    sync.WaitGroup // additions to task budgets' counters (budget.go)

	// storeDown: the store did not answer the last renewal round's ping;
	// read and written by the renewal loop alone.
	storeDown bool
}

// Defaults of the config's cluster block.
const (
	defaultClusterName = "ganglion"
	defaultLeaseTTL    = 10 * time.Second
)

// leaseTimeout bounds one lease operation: taking, renewing or giving up
// a lease is one round trip to JetStream.
const leaseTimeout = 5 * time.Second

// open connects to the cluster env's config names and opens its shared
// store, unless env gives a store. The node starts serving when
// [node.Start] runs.
func open(ctx context.Context, env seam.ClusterEnv) (seam.Placement, store.Store, error) {
	c := env.Cluster
	if env.Memory {
		return nil, nil, errors.New("cluster: a cluster shares its store in JetStream; it cannot run on the memory store")
	}
	if !env.Keyed {
		return nil, nil, fmt.Errorf("cluster: every process seals and opens the same secrets, so they need the same key: set %s (32 bytes, base64) in each process's environment", env.KeyEnv)
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
		return nil, nil, fmt.Errorf("cluster: connect to %s: %w", redactURLs(urls), err)
	}
	fail := func(err error) (seam.Placement, store.Store, error) {
		nc.Close()
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(fmt.Errorf("cluster: %w", err))
	}
	leases, err := coord.Open(ctx, js, name+"_leases", self, ttl, c.Replicas)
	if err != nil {
		return fail(err)
	}
	members, err := coord.Open(ctx, js, name+"_nodes", self, ttl, c.Replicas)
	if err != nil {
		return fail(err)
	}
	waits, err := coord.OpenWaits(ctx, nc, js, name+"_waits")
	if err != nil {
		return fail(err)
	}
	budgets, err := coord.OpenCounters(ctx, nc, js, name+"_budgets", c.Replicas, budgetCountersAge)
	if err != nil {
		return fail(err)
	}
	n := &node{l: env.Local, env: env, log: env.Logger, store: env.Store, errs: env.Errors,
		nc: nc, leases: leases, members: members, waits: waits, budgets: budgets, name: self, prefix: name + ".node.", events: name + ".events.",
		held: map[seam.Held]*coord.Lease{}, running: map[string]context.CancelFunc{}}
	n.kinds = maps.Clone(env.Errors.Kinds)
	maps.Copy(n.kinds, remoteKinds)
	var st store.Store
	if n.store == nil {
		opts := []jsstore.Option{jsstore.WithReplicas(max(c.Replicas, 1))}
		if c.RequestTimeout != "" {
			d, _ := time.ParseDuration(c.RequestTimeout) // Validate checked it
			opts = append(opts, jsstore.WithRequestTimeout(d))
		}
		js, err := jsstore.Open(ctx, nc, name, opts...)
		if err != nil {
			return fail(fmt.Errorf("cluster: %w", err))
		}
		n.store, st = js, js
	}
	return n, st, nil
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
func (n *node) Start() error {
	for suffix, h := range map[string]nats.MsgHandler{".send": n.serve, ".cancel": n.cancel, ".report": n.serveReport, ".act": n.serveAct, ".calls": n.serveCalls} {
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
	n.unbus = n.env.Bus.Subscribe("*", n.publishEvent)
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
	watch, unwatch := context.WithCancel(context.Background())
	n.unwatch = unwatch
	if err := n.members.WatchHolders(watch, func(live []string) {
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

// refuse makes the node send back the requests other processes route
// here from now on (see handle): the runtime stops, and its instances will
// move once their turns have ended.
func (n *node) Refuse() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// stopping is the error of a request that reached this process while it
// stops, before it ran: the sender looks for the instance's owner again,
// which is another process once this one has given its leases up.
func (n *node) stopping() error {
	return fmt.Errorf("%w (%s, which stops)", errMoved, n.name)
}

// movedIfClosed is err, unless err says that the runtime refused a
// routed request at its door because it stops ([seam.Local.SendHere] and
// ActHere return Errors.Closed itself then, before anything ran):
// then it is [node.stopping]'s error.
func (n *node) movedIfClosed(err error) error {
	if err == n.errs.Closed {
		return n.stopping()
	}
	return err
}

// shutdown stops serving and renewing, and gives up every lease, so that
// other processes take the instances over at once; closed closes the
// connection, after the store. The runtime's turns
// have ended, or were cut (then the requests still answered are waited for
// at most the env's CutGrace).
func (n *node) Shutdown() (closed func(), err error) {
	n.Refuse()
	if n.unbus != nil {
		n.unbus()
	}
	var errs []error
	for _, s := range n.subs {
		if err := s.Unsubscribe(); err != nil {
			errs = append(errs, fmt.Errorf("cluster: unsubscribe: %w", err))
		}
	}
	if !waitAtMost(&n.handlers, n.env.Halt, n.env.CutGrace) {
		n.log.Warn("cluster: stop: requests routed here were still answered when the stop's time was up; leaving them")
	}
	if n.stop != nil {
		close(n.stop)
		<-n.done
	}
	if n.unwatch != nil {
		n.unwatch()
	}
	n.mu.Lock()
	held := make(map[seam.Held]*coord.Lease, len(n.held))
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
	n.adding.Wait()
	n.releasing.Wait()
	// The connection closes after the store, which uses it.
	return n.nc.Close, errors.Join(errs...)
}

// waitAtMost waits for wg, at most grace once halt has ended; it reports
// whether wg was done.
func waitAtMost(wg *sync.WaitGroup, halt context.Context, grace time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-halt.Done():
	}
	select {
	case <-done:
		return true
	case <-time.After(grace):
		return false
	}
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
			n.log.Info("cluster: a process left; taking over what it leaves", "process", p)
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
	name := []byte(leaseName(agent, key))
	h := fnv.New64a()
	for _, p := range n.live {
		h.Reset()
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(name)
		if s := mix(h.Sum64()); s > bestScore || s == bestScore && p < best {
			best, bestScore = p, s
		}
	}
	return best
}

// mix is splitmix64's finalizer: FNV's high bits barely change when
// only the end of its input does (names differing in a suffix), which
// would place most instances on one process.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// renewMembership renews this process's place among the live ones (taking
// it again if it expired while the process paused), and lists them.
func (n *node) renewMembership() {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	err := n.member.Renew(ctx)
	if errors.Is(err, coord.ErrLost) {
		var le *coord.Lease
		if le, err = n.members.Acquire(ctx, n.name); err == nil {
			n.member = le
		}
	}
	if err != nil {
		n.log.Warn("cluster: renewing this process's membership failed; trying again", "err", err)
	}
}

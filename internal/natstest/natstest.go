package natstest

import (
	"context"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readyTimeout bounds a server's start. Under -race on two cores, with
// every package's tests running at once, a start can take seconds.
const readyTimeout = 30 * time.Second

// freePorts returns n distinct loopback ports that are free now, for the
// servers' cluster listeners, whose ports the routes must name before the
// servers start. They are drawn below the kernel's ephemeral range: a port
// from that range (listen on port 0, then close) was now and then taken,
// before its server bound it, by an outgoing connection of a test running
// in parallel; the server then never listened, and the test failed after
// waiting for it.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	low := ephemeralLow()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			tb.Fatalf("no %d free loopback ports in %d – %d", n, minPort, low-1)
		}
		p := minPort + rand.IntN(low-minPort)
		if slices.Contains(ports, p) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // in use
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports
}

// minPort is the lowest port freePorts draws: above the well-known and
// most registered services' ports.
const minPort = 20000

// ephemeralLow is the lowest port of the kernel's ephemeral range: 32768,
// Linux's default (and below macOS's 49152), unless /proc says otherwise.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= minPort+1000 {
		return 32768 // no room below a range that low: the default bound is as good as any
	}
	return low
}

// Server starts a JetStream server on a free loopback port, its data in
// the test's temporary directory, and shuts it down, its goroutines with
// it, when the test ends.
func Server(tb testing.TB) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		tb.Fatalf("the NATS server did not start in %s", readyTimeout)
	}
	tb.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Cluster starts n JetStream servers on loopback, routed into one
// cluster, waits until their JetStream leader sees all of them online and
// a stream of n replicas can be placed, and shuts them down when the test
// ends. It returns the servers' client URLs, joined for nats.Connect.
func Cluster(tb testing.TB, n int) string { return NewCluster(tb, n).URLs() }

// TestCluster is a cluster of JetStream servers started by [NewCluster],
// whose servers a test can restart.
type TestCluster struct {
	tb      testing.TB
	opts    []*server.Options
	servers []*server.Server
	// stopped maps a server that Stop shut down to its client port, on
	// which Start starts it again.
	stopped map[int]int
}

// NewCluster is [Cluster], returning the cluster.
func NewCluster(tb testing.TB, n int) *TestCluster {
	tb.Helper()
	ports := freePorts(tb, n)
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: "127.0.0.1:" + strconv.Itoa(p)})
	}
	c := &TestCluster{tb: tb}
	for i, p := range ports {
		c.opts = append(c.opts, &server.Options{
			ServerName: "s" + strconv.Itoa(i+1), Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(),
			NoLog: true, NoSigs: true, Routes: routes,
			Cluster: server.ClusterOpts{Name: "ganglion-test", Host: "127.0.0.1", Port: p},
		})
	}
	// Registered after the data directories: cleanups run last first,
	// and a directory is removed once its server is down.
	tb.Cleanup(func() {
		for _, s := range c.servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	for i := range ports {
		c.servers = append(c.servers, c.start(i))
	}
	for i, s := range c.servers {
		if !s.ReadyForConnections(readyTimeout) {
			tb.Fatalf("NATS server s%d did not start in %s", i+1, readyTimeout)
		}
	}
	// Ready when the JetStream leader sees every server online, with
	// its stats: until then a replicated stream finds no place.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := false
		for _, s := range c.servers {
			ready = ready || s.JetStreamIsLeader() && len(s.JetStreamClusterPeers()) == n
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the NATS cluster of %d is not ready after 30 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	probe(tb, c.servers[0].ClientURL(), n, deadline)
	return c
}

// start starts server i with its options.
func (c *TestCluster) start(i int) *server.Server {
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		c.tb.Fatal(err)
	}
	go s.Start()
	return s
}

// URLs returns the servers' client URLs, joined for nats.Connect.
func (c *TestCluster) URLs() string {
	var urls []string
	for _, s := range c.servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

// URL returns server i's client URL.
func (c *TestCluster) URL(i int) string { return c.servers[i].ClientURL() }

// Restart shuts server i down and starts it again, with its name, data
// and cluster port, and returns once it takes connections: its routes to
// the others, and the leader's view of it, may not be back yet.
func (c *TestCluster) Restart(i int) {
	c.tb.Helper()
	c.servers[i].Shutdown()
	c.servers[i].WaitForShutdown()
	c.servers[i] = c.start(i)
	if !c.servers[i].ReadyForConnections(readyTimeout) {
		c.tb.Fatalf("NATS server s%d did not start again in %s", i+1, readyTimeout)
	}
}

// Stop shuts server i down and keeps it down until [TestCluster.Start]:
// a test sees how its clients fare while one server is gone. A server
// stopped already stays stopped.
func (c *TestCluster) Stop(i int) {
	c.tb.Helper()
	if _, ok := c.stopped[i]; ok {
		return
	}
	port := c.servers[i].Addr().(*net.TCPAddr).Port
	c.servers[i].Shutdown()
	c.servers[i].WaitForShutdown()
	if c.stopped == nil {
		c.stopped = map[int]int{}
	}
	c.stopped[i] = port
}

// Start starts server i, which [TestCluster.Stop] shut down, again with
// its name, data, cluster port and client port (so that clients given
// [TestCluster.URLs] before find it again), and returns once it takes
// connections: its routes to the others, and the leader's view of it,
// may not be back yet. A server that is not stopped is left alone.
func (c *TestCluster) Start(i int) {
	c.tb.Helper()
	port, ok := c.stopped[i]
	if !ok {
		return
	}
	o := *c.opts[i]
	o.Port = port
	s, err := server.NewServer(&o)
	if err != nil {
		c.tb.Fatalf("NATS server s%d: %v", i+1, err)
	}
	go s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		c.tb.Fatalf("NATS server s%d did not start again on port %d in %s", i+1, port, readyTimeout)
	}
	c.servers[i] = s
	delete(c.stopped, i)
}

// Connect connects to the NATS server(s) at url and returns the
// connection, closed when the test ends, and its JetStream context.
func Connect(tb testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	return nc, js
}

// probe creates and deletes a stream of n replicas through url, trying
// again until deadline. A cluster that has just elected its leader may
// still take a peer for offline, or take longer than a client's 5 s to
// place the first stream (seen under -race on two cores): a test's first
// bucket failed to open, 1 run in 45. The probe pays that wait here.
func probe(tb testing.TB, url string, n int, deadline time.Time) {
	tb.Helper()
	_, js := Connect(tb, url)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "natstest_probe", Subjects: []string{"natstest.probe"}, Replicas: n, Storage: jetstream.MemoryStorage})
		if err == nil {
			err = js.DeleteStream(ctx, "natstest_probe")
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the NATS cluster of %d cannot place a stream of %d replicas after 30 s: %v", n, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

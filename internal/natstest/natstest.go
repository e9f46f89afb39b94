package natstest

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("the NATS server did not start")
	}
	tb.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// Cluster starts n JetStream servers on loopback, routed into one
// cluster, waits until their JetStream leader sees all of them online and
// a stream of n replicas can be placed, and shuts them down when the test
// ends. It returns the servers' client URLs, joined for nats.Connect.
func Cluster(tb testing.TB, n int) string {
	tb.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: "127.0.0.1:" + strconv.Itoa(p)})
	}
	var urls []string
	var servers []*server.Server
	for i, p := range ports {
		s, err := server.NewServer(&server.Options{
			ServerName: "s" + strconv.Itoa(i+1), Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: tb.TempDir(),
			NoLog: true, NoSigs: true, Routes: routes,
			Cluster: server.ClusterOpts{Name: "ganglion-test", Host: "127.0.0.1", Port: p},
		})
		if err != nil {
			tb.Fatal(err)
		}
		go s.Start()
		tb.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			tb.Fatal("a NATS server did not start")
		}
		urls = append(urls, s.ClientURL())
	}
	// Ready when the JetStream leader sees every server online, with
	// its stats: until then a replicated stream finds no place.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ready := false
		for _, s := range servers {
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
	probe(tb, urls[0], n, deadline)
	return strings.Join(urls, ",")
}

// probe creates and deletes a stream of n replicas through url, trying
// again until deadline. A cluster that has just elected its leader may
// still take a peer for offline, or take longer than a client's 5 s to
// place the first stream (seen under -race on two cores): a test's first
// bucket failed to open, 1 run in 45. The probe pays that wait here.
func probe(tb testing.TB, url string, n int, deadline time.Time) {
	tb.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
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

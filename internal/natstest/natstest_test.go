package natstest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestFreePorts: the cluster ports are distinct, free, and below the
// range the kernel draws ports for outgoing connections from, where a
// connection of another test could take one before its server binds it.
func TestFreePorts(t *testing.T) {
	low := ephemeralLow()
	if low <= minPort {
		t.Fatalf("ephemeralLow() = %d, not above minPort %d", low, minPort)
	}
	for range 20 {
		ports := freePorts(t, 3)
		if len(ports) != 3 {
			t.Fatalf("freePorts(3) = %v", ports)
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if p < minPort || p >= low {
				t.Errorf("port %d outside [%d, %d)", p, minPort, low)
			}
			if seen[p] {
				t.Errorf("port %d twice in %v", p, ports)
			}
			seen[p] = true
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Errorf("port %d is not free: %v", p, err)
				continue
			}
			l.Close()
		}
	}
}

// TestStopStart: a stopped server refuses connections until Start, which
// brings it back on its client port, where a stream of three replicas
// can be placed again.
func TestStopStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of three")
	}
	c := NewCluster(t, 3)
	url := c.URL(1)
	c.Stop(1)
	c.Stop(1) // stopped already: nothing to do
	if nc, err := nats.Connect(url, nats.MaxReconnects(0), nats.Timeout(time.Second)); err == nil {
		nc.Close()
		t.Fatalf("connected to stopped server %s", url)
	}
	c.Start(1)
	c.Start(1) // started already: nothing to do
	if got := c.URL(1); got != url {
		t.Fatalf("after Start, URL(1) = %s, want %s", got, url)
	}
	// The stream's placement is refused until the leader sees the server
	// again: probe tries until it is placed.
	probe(t, url, 3, time.Now().Add(30*time.Second))
}

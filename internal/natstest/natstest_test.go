package natstest

import (
	"net"
	"strconv"
	"testing"
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

package natstest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/internal/natstest"
)

// TestProxy: through the proxy a client is served; once frozen, its
// requests reach the server and their replies are lost; once cut, the
// client reconnects to a server it learnt of, and is served again.
func TestProxy(t *testing.T) {
	c := natstest.NewCluster(t, 2)
	p := natstest.NewProxy(t, c.URL(0))
	nc, _ := natstest.Connect(t, p.URL())
	srv, _ := natstest.Connect(t, c.URL(1))
	got := make(chan string, 10)
	sub, err := srv.Subscribe("echo", func(m *nats.Msg) {
		got <- string(m.Data)
		m.Respond(m.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	srv.Flush()
	// The subscription reaches the proxied server over the cluster's
	// route a moment after the server it was made on has it: until then
	// a request there finds no responders.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := nc.Request("echo", []byte("before"), 5*time.Second)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(deadline) {
			t.Fatalf("request through the proxy: %v", err)
		}
	}
	<-got
	p.Freeze()
	if _, err := nc.Request("echo", []byte("frozen"), 500*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("request through the frozen proxy: got %v, want %v", err, nats.ErrTimeout)
	}
	if m := <-got; m != "frozen" {
		t.Fatalf("the server got %q, want the frozen request", m)
	}
	p.Cut()
	// A request sent before the client sees the cut is lost with the
	// connection: wait until it is on another server.
	proxied := strings.TrimPrefix(p.URL(), "nats://")
	for deadline := time.Now().Add(10 * time.Second); nc.Status() != nats.CONNECTED || strings.Contains(nc.ConnectedUrl(), proxied); {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not reconnect to another server within 10 s after the proxy was cut: %v", nc.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := nc.Request("echo", []byte("after"), 10*time.Second); err != nil {
		t.Fatalf("request after the proxy was cut: %v", err)
	}
}

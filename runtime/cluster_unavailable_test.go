package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/store"
)

// TestClusterSendWhileNATSIsDown: with its NATS server gone, a turn of an
// instance that no process owns fails with an error that matches
// store.ErrUnavailable (the lease could not be looked up: transient), not
// context.DeadlineExceeded (the caller's deadline did not end), and no
// turn started.
func TestClusterSendWhileNATSIsDown(t *testing.T) {
	s := natstest.Server(t)
	c := newClusterOn(t, s.ClientURL(), 1, 1, `
agents:
  - name: worker
`, agentsScript)
	c.mustSend(0, "worker", "k", "one")
	s.Shutdown()
	s.WaitForShutdown()
	res, err := c.send(0, "worker", "other", "two")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a turn while NATS is down: %+v, %v; want an error matching store.ErrUnavailable", res, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error %v matches context.DeadlineExceeded: the caller's deadline had not ended", err)
	}
	if !strings.Contains(err.Error(), `agent "worker" instance "other"`) {
		t.Errorf("the error %q does not name the instance", err)
	}
	if res != nil && res.TurnID != "" {
		t.Errorf("the result %+v has a turn ID: no turn started", res)
	}
}

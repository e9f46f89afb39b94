package cluster_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/natstest"
	"github.com/ganglion-dev/ganglion/runtime"
	_ "github.com/ganglion-dev/ganglion/runtime/cluster" // a program links the cluster by importing it
)

// TestClusterExample runs the example as two processes would: two
// runtimes on its config and one NATS server. The lead, asked through the
// first, gets the merged report of its two delegations, and the second's
// event bus sees the lead's turns, which ran on the first.
func TestClusterExample(t *testing.T) {
	srv := natstest.Server(t)
	t.Setenv("GANGLION_NATS_URL", srv.ClientURL())
	t.Setenv(runtime.SecretKeyEnv, base64.StdEncoding.EncodeToString(make([]byte, 32)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rts []*runtime.Runtime
	for range 2 {
		rt, err := runtime.New(ctx, runtime.WithConfigFile("ganglion.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		rts = append(rts, rt)
	}
	seen := make(chan events.Event, 64)
	unsub := rts[1].Events().Subscribe(events.TurnFinished, func(ev events.Event) {
		if ev.Agent == "lead" {
			seen <- ev
		}
	})
	defer unsub()
	rep, err := rts[0].Ask(ctx, "lead", "demo", "Plan the launch")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Response != "Launch plan ready: the research and the draft are in." {
		t.Errorf("answer = %q", rep.Response)
	}
	hist, err := rts[1].History(ctx, "lead", "demo")
	if err != nil {
		t.Fatal(err)
	}
	var report string
	for _, m := range hist {
		if strings.Contains(m.Content, "[Merged report of 2 parallel delegations]") {
			report = m.Content
		}
	}
	if !strings.Contains(report, "three segments") || !strings.Contains(report, "Ganglion 1.0") {
		t.Errorf("the lead's merged report:\n%s", report)
	}
	select {
	case ev := <-seen:
		if ev.Process == "" {
			t.Errorf("the second process saw the lead's turn as its own: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the second process saw none of the lead's turns")
	}
}

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/store"
)

// laterChannel is a channel whose requester may be away: then it asks for
// the answer later.
type laterChannel struct {
	mu   sync.Mutex
	away bool
	got  []runtime.Report
}

func (c *laterChannel) Deliver(_ context.Context, r runtime.Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.away {
		return fmt.Errorf("client %s is away: %w", r.ReplyTo, runtime.ErrDeliverLater)
	}
	c.got = append(c.got, r)
	return nil
}

func (c *laterChannel) delivered() []runtime.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]runtime.Report(nil), c.got...)
}

// TestDeliverLater: an answer whose requester is away stays stored,
// answered, and is delivered once when DeliverAnswers is called after the
// requester came back, or by the next runtime; any other refusal drops it.
func TestDeliverLater(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	e := newEffectTool()
	e.runs.Store(1) // never blocks
	ch := &laterChannel{away: true}
	rt, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem, runtime.WithTool(e.tool()), runtime.WithChannel("gui", ch))
	in := runtime.UserMessage("please delegate")
	in.Metadata = map[string]any{"channel": "gui", "replyTo": "tab-1"}
	if _, err := rt.Send(ctx, "lead", "k", in); err != nil {
		t.Fatal(err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	ts := mustTasks(t, rt, "", "")
	if len(ts) != 1 || ts[0].State != runtime.TaskAnswered || ts[0].ReplyTo != "tab-1" || len(ch.delivered()) != 0 {
		t.Fatalf("with the requester away: tasks %+v, delivered %+v", ts, ch.delivered())
	}
	// Asked again while still away: still kept.
	if err := rt.DeliverAnswers(ctx, "gui"); err != nil {
		t.Fatal(err)
	}
	rt.WaitTasks(ctx)
	if len(mustTasks(t, rt, "", "")) != 1 {
		t.Fatal("the answer was dropped while its requester was away")
	}

	ch.mu.Lock()
	ch.away = false
	ch.mu.Unlock()
	if err := rt.DeliverAnswers(ctx, "gui"); err != nil {
		t.Fatal(err)
	}
	rt.WaitTasks(ctx)
	waitNoTasks(t, rt)
	if got := ch.delivered(); len(got) != 1 || got[0].ReplyTo != "tab-1" || got[0].TaskID != ts[0].ID || got[0].Response != ts[0].Answer {
		t.Errorf("delivered %+v", got)
	}
	rt.DeliverAnswers(ctx, "gui") // nothing left: nothing more
	rt.WaitTasks(ctx)
	if n := len(ch.delivered()); n != 1 {
		t.Errorf("delivered %d times", n)
	}
	mustClose(t, rt)

	// Away when the answer came, back by the next start.
	ch2 := &laterChannel{away: true}
	mem2 := store.NewMemory()
	rt2, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem2, runtime.WithTool(e.tool()), runtime.WithChannel("gui", ch2))
	if _, err := rt2.Send(ctx, "lead", "k", in); err != nil {
		t.Fatal(err)
	}
	rt2.WaitTasks(ctx)
	mustClose(t, rt2)
	ch3 := &laterChannel{}
	rt3, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, mem2, runtime.WithTool(e.tool()), runtime.WithChannel("gui", ch3))
	waitNoTasks(t, rt3)
	if got := ch3.delivered(); len(got) != 1 || got[0].ReplyTo != "tab-1" {
		t.Errorf("after the restart: delivered %+v", got)
	}

	// Any other refusal is final: the answer is dropped, as before.
	failing := runtime.ChannelFunc(func(context.Context, runtime.Report) error { return errors.New("no such client") })
	rt4, _ := newCrashRuntime(t, crashDelegConfig, crashDelegScript, store.NewMemory(), runtime.WithTool(e.tool()), runtime.WithChannel("gui", failing))
	if _, err := rt4.Send(ctx, "lead", "k", in); err != nil {
		t.Fatal(err)
	}
	rt4.WaitTasks(ctx)
	waitNoTasks(t, rt4)
}

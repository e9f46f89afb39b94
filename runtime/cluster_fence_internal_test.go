package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/task"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	_ "github.com/ganglion-dev/ganglion/runtime/cluster" // the cluster, for the tests of a runtime in one
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
)

// TestOwnerWritesCarryTheFence: once another process has taken an owned
// instance's fence (as a takeover does), every write this process makes
// as its owner is refused: a turn's commit, a task's, an extension's
// state. The stall test shows the whole story on real processes; this
// one holds each write path to the fence.
func TestOwnerWritesCarryTheFence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(fmt.Sprintf(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\ncluster: {url: %q, lease_ttl: 2s}\n", natstest.Server(t).ClientURL())))
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(ctx, WithConfig(cfg), WithModel(summaryModel{}), WithSecretKey([]byte("0123456789abcdef0123456789abcdef")), WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Send(ctx, "a", "k", UserMessage("hello")); err != nil {
		t.Fatal(err)
	}
	if f := r.fence("a", "k"); f == 0 || f == math.MaxUint64 {
		t.Fatalf("the owner's fence is %d, want the one taken with the lease", f)
	}
	if err := r.place.State().SetState(ctx, "a", "k", "memo", []byte(`1`)); err != nil {
		t.Fatalf("state write by the owner: %v", err)
	}
	storeTasks(t, r.env.Store, &Task{ID: "task_x", Agent: "a", Instance: "k", State: TaskWaiting, Pending: 1})
	// Another process takes the instance over.
	if _, err := r.env.Store.Fence(ctx, "a", "k"); err != nil {
		t.Fatal(err)
	}
	writes := []struct {
		name  string
		write func() error
	}{
		{"extension state", func() error { return r.place.State().SetState(ctx, "a", "k", "memo", []byte(`2`)) }},
		{"a task", func() error {
			// A report's commit rewrites the parent task, of the instance.
			return r.tasks.ApplyReport(ctx, "task_x", task.Response{ChildTaskID: "task_c", Response: "done"})
		}},
	}
	for _, w := range writes {
		if err := w.write(); !errors.Is(err, store.ErrFenced) {
			t.Errorf("%s after the takeover: %v, want store.ErrFenced", w.name, err)
		}
	}
	if st, err := r.env.Store.GetState(ctx, "a", "k", "memo"); err != nil || string(st) != "1" {
		t.Errorf("state after the refused write: %s, %v; want 1", st, err)
	}
	if got, err := r.Task(ctx, "task_x"); err != nil || got.Pending != 1 || len(got.Context.Responses) != 0 {
		t.Errorf("the task after the refused write: %+v, %v; want it unchanged", got, err)
	}
}

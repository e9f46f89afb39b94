package runtime

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
)

// tasksDown is a store whose task commits fail.
type tasksDown struct{ store.Store }

var errTasksDown = errors.New("the disk is full")

func (s tasksDown) CommitTasks(context.Context, []store.TaskRecord, []string) error {
	return errTasksDown
}

// TestReportsShareTheirCommitsOutcome: two children's reports queued for
// one parent are committed together by one of them; when that commit
// fails, both reporters get its error, so that neither takes its report
// for delivered (the report is tried again, or the child found
// unreported at the next start).
func TestReportsShareTheirCommitsOutcome(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: lead\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	rt, err := New(ctx, WithConfig(cfg), WithStore(tasksDown{st}), WithModel(summaryModel{}), WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	parent := &Task{ID: "p", Agent: "lead", Instance: "k", State: TaskWaiting, Pending: 2}
	rec, err := encodeTask(parent)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CommitTasks(ctx, []store.TaskRecord{rec}, nil); err != nil {
		t.Fatal(err)
	}

	// Both reports queue while the tasks are locked, so that the first
	// to get the lock commits both.
	rt.tasks.mu.Lock()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, child := range []string{"c1", "c2"} {
		wg.Go(func() { errs[i] = rt.applyReport(ctx, "p", DelegationResponse{ChildTaskID: child, Response: "done"}) })
	}
	for queued := 0; queued < 2; time.Sleep(time.Millisecond) {
		rt.tasks.reportMu.Lock()
		queued = len(rt.tasks.reports["p"])
		rt.tasks.reportMu.Unlock()
	}
	rt.tasks.mu.Unlock()
	wg.Wait()
	want := regexp.MustCompile(`^tasks (c1, c2|c2, c1): reporting to task p: the disk is full$`)
	for i, err := range errs {
		if !errors.Is(err, errTasksDown) || !want.MatchString(err.Error()) {
			t.Errorf("reporter %d: %v, want an error matching %s", i+1, err, want)
		}
	}
	got, err := rt.Task(ctx, "p")
	if err != nil || got.Pending != 2 || len(got.Context.Responses) != 0 {
		t.Fatalf("parent after the failed commit: %+v, %v; want it unchanged", got, err)
	}
}

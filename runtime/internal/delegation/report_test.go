package delegation

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/task"
	"github.com/ganglion-dev/ganglion/store"
)

// tasksDown is a store whose task commits fail.
type tasksDown struct{ store.Store }

var errTasksDown = errors.New("the disk is full")

func (s tasksDown) CommitTasks(context.Context, []store.TaskRecord, []string) error {
	return errTasksDown
}

// newTasks returns the delegation of a runtime that runs alone on st and
// turns no task's turn: what reports and commits need.
func newTasks(t *testing.T, st store.Store) *Tasks {
	t.Helper()
	d := New(Env{
		Engine: &engine.Env{Store: st, Bus: events.NewBus(), Now: time.Now},
		Logger: slog.New(slog.DiscardHandler),
		Fence:  func(string, string) uint64 { return 0 },
	}, nil)
	t.Cleanup(d.Stop)
	return d
}

// storeTasks stores tasks in st as they are.
func storeTasks(t *testing.T, st store.Store, tasks ...*task.Task) {
	t.Helper()
	recs := make([]store.TaskRecord, len(tasks))
	for i, tk := range tasks {
		rec, err := encodeTask(tk)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	if err := st.CommitTasks(context.Background(), recs, nil); err != nil {
		t.Fatal(err)
	}
}

// TestReportsShareTheirCommitsOutcome: two children's reports queued for
// one parent are committed together by one of them; when that commit
// fails, both reporters get its error, so that neither takes its report
// for delivered (the report is tried again, or the child found
// unreported at the next start).
func TestReportsShareTheirCommitsOutcome(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	d := newTasks(t, tasksDown{st})
	parent := &task.Task{ID: "p", Agent: "lead", Instance: "k", State: task.Waiting, Pending: 2}
	storeTasks(t, st, parent)

	// Both reports queue while the tasks are locked, so that the first
	// to get the lock commits both.
	d.mu.Lock()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, child := range []string{"c1", "c2"} {
		wg.Go(func() { errs[i] = d.ApplyReport(ctx, "p", task.Response{ChildTaskID: child, Response: "done"}) })
	}
	for queued := 0; queued < 2; time.Sleep(time.Millisecond) {
		d.reportMu.Lock()
		queued = len(d.reports["p"])
		d.reportMu.Unlock()
	}
	d.mu.Unlock()
	wg.Wait()
	want := regexp.MustCompile(`^tasks (c1, c2|c2, c1): reporting to task p: the disk is full$`)
	for i, err := range errs {
		if !errors.Is(err, errTasksDown) || !want.MatchString(err.Error()) {
			t.Errorf("reporter %d: %v, want an error matching %s", i+1, err, want)
		}
	}
	got, err := d.Task(ctx, "p")
	if err != nil || got.Pending != 2 || len(got.Context.Responses) != 0 {
		t.Fatalf("parent after the failed commit: %+v, %v; want it unchanged", got, err)
	}
}

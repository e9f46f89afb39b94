package runtime

import (
	"context"
	"errors"
	"fmt"
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

// taskReadsDown is a store whose reads of tasks fail as a NATS server's
// restart makes them fail, while down is set.
type taskReadsDown struct {
	store.Store
	down bool
}

func (s *taskReadsDown) GetTask(ctx context.Context, id string) (store.TaskRecord, bool, error) {
	if s.down {
		return store.TaskRecord{}, false, fmt.Errorf("store: get task %q: the connection to the server was lost while the request waited, and its answer with it: %w", id, store.ErrUnavailable)
	}
	return s.Store.GetTask(ctx, id)
}

// TestReportKeptWhenItsParentCannotBeRead: a report whose parent cannot be
// read (the store does not answer) is not dropped as if the parent were
// gone: the reporter gets the outage, the child stays stored to report
// again, and the report lands once the store answers. Only a parent that
// does not exist drops its children's reports. The cluster soak lost a
// report so ("a child task's parent is gone; its reports are dropped", its
// error a lost connection), and the parent task stayed open.
func TestReportKeptWhenItsParentCannotBeRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: lead\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := &taskReadsDown{Store: store.NewMemory()}
	rt, err := New(ctx, WithConfig(cfg), WithStore(st), WithModel(summaryModel{}), WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var recs []store.TaskRecord
	for _, task := range []*Task{
		{ID: "p", Agent: "lead", Instance: "k", State: TaskWaiting, Pending: 2},
		{ID: "c", ParentID: "p", Agent: "lead", Instance: "c", State: TaskQueued},
	} {
		rec, err := encodeTask(task)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if err := st.CommitTasks(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}

	st.down = true
	err = rt.applyReport(ctx, "p", DelegationResponse{ChildTaskID: "c", Response: "done"})
	st.down = false
	const want = `tasks c: reporting to task p: store: get task "p": the connection to the server was lost while the request waited, and its answer with it: store: unavailable`
	if !errors.Is(err, store.ErrUnavailable) || err.Error() != want {
		t.Fatalf("report while the parent cannot be read: %v; want\n%s", err, want)
	}
	if _, found, err := st.GetTask(ctx, "c"); !found || err != nil {
		t.Fatalf("the child after the failed report: found %v, %v; want it kept, to report again", found, err)
	}

	if err := rt.applyReport(ctx, "p", DelegationResponse{ChildTaskID: "c", Response: "done"}); err != nil {
		t.Fatalf("the report once the store answers: %v", err)
	}
	got, err := rt.Task(ctx, "p")
	if err != nil || got.Pending != 1 || len(got.Context.Responses) != 1 {
		t.Fatalf("parent after the report: %+v, %v; want one response, one pending", got, err)
	}
	if _, found, _ := st.GetTask(ctx, "c"); found {
		t.Fatal("the reported child is still stored")
	}
	// A parent that does not exist drops its children's reports.
	if err := rt.applyReport(ctx, "gone", DelegationResponse{ChildTaskID: "c2", Response: "late"}); err != nil {
		t.Fatalf("a report to a parent that does not exist: %v, want it dropped", err)
	}
}

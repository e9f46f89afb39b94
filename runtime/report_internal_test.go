package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/task"

	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/store"
)

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
	st := &taskReadsDown{Store: store.NewMemory()}
	rt := newLead(t, st, summaryModel{})
	storeTasks(t, st,
		&Task{ID: "p", Agent: "lead", Instance: "k", State: TaskWaiting, Pending: 2},
		&Task{ID: "c", ParentID: "p", Agent: "lead", Instance: "c", State: TaskQueued},
	)

	st.down = true
	err := rt.tasks.ApplyReport(ctx, "p", task.Response{ChildTaskID: "c", Response: "done"})
	st.down = false
	const want = `tasks c: reporting to task p: store: get task "p": the connection to the server was lost while the request waited, and its answer with it: store: unavailable`
	if !errors.Is(err, store.ErrUnavailable) || err.Error() != want {
		t.Fatalf("report while the parent cannot be read: %v; want\n%s", err, want)
	}
	if _, found, err := st.GetTask(ctx, "c"); !found || err != nil {
		t.Fatalf("the child after the failed report: found %v, %v; want it kept, to report again", found, err)
	}

	if err := rt.tasks.ApplyReport(ctx, "p", task.Response{ChildTaskID: "c", Response: "done"}); err != nil {
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
	if err := rt.tasks.ApplyReport(ctx, "gone", task.Response{ChildTaskID: "c2", Response: "late"}); err != nil {
		t.Fatalf("a report to a parent that does not exist: %v, want it dropped", err)
	}
}

// landsUnknown is a store whose next task commit is stored but answered
// as a NATS server answers one it took just before it stopped: outcome
// unknown.
type landsUnknown struct {
	store.Store
	next bool
}

func (s *landsUnknown) CommitTasks(ctx context.Context, put []store.TaskRecord, del []string) error {
	if err := s.Store.CommitTasks(ctx, put, del); err != nil || !s.next {
		return err
	}
	s.next = false
	return fmt.Errorf("store: commit tasks: the server did not answer within 1s; the batch may or may not be stored: %w", store.ErrOutcomeUnknown)
}

// TestReportCountsOnce: a child's report that reaches its parent a second
// time (its first commit landed, but its reporter could not know it, and
// the child's end was settled again from its history) changes nothing:
// the parent still waits for its other child, and its merged report
// names each child once. The cluster soak ran a lead's report turn twice
// so: the second copy of one child's report started the merged report
// before the other child had reported, whose report then started another.
func TestReportCountsOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unknown bool // the first report's commit lands, answered "outcome unknown"
	}{
		{name: "after a commit that succeeded"},
		{name: "after a commit whose outcome was unknown", unknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := &landsUnknown{Store: store.NewMemory()}
			rt := newLead(t, st, summaryModel{})
			storeTasks(t, st,
				&Task{ID: "p", Agent: "lead", Instance: "k", State: TaskWaiting, Pending: 2, Context: task.DelegationContext{Delegations: []task.Delegation{
					{ChildTaskID: "c1", DelegatedTo: "lead"}, {ChildTaskID: "c2", DelegatedTo: "lead"}}}},
				&Task{ID: "c1", ParentID: "p", Agent: "lead", Instance: "c1", State: TaskQueued},
				&Task{ID: "c2", ParentID: "p", Agent: "lead", Instance: "c2", State: TaskQueued},
			)

			st.next = tc.unknown
			err := rt.tasks.ApplyReport(ctx, "p", task.Response{ChildTaskID: "c1", Response: "one"})
			if tc.unknown != errors.Is(err, store.ErrOutcomeUnknown) {
				t.Fatalf("the first report: %v", err)
			}
			if err := rt.tasks.ApplyReport(ctx, "p", task.Response{ChildTaskID: "c1", Response: "one, again"}); err != nil {
				t.Fatalf("the report again: %v", err)
			}
			got, err := rt.Task(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			if got.State != TaskWaiting || got.Pending != 1 || len(got.Context.Responses) != 1 || got.Context.Responses[0].Response != "one" {
				t.Fatalf("parent after c1 reported twice: state %s, %d pending, responses %+v; want waiting for c2, with c1's first report alone", got.State, got.Pending, got.Context.Responses)
			}

			if err := rt.tasks.ApplyReport(ctx, "p", task.Response{ChildTaskID: "c2", Response: "two"}); err != nil {
				t.Fatalf("c2's report: %v", err)
			}
			if err := rt.WaitTasks(ctx); err != nil {
				t.Fatal(err)
			}
			h, err := rt.History(ctx, "lead", "k")
			if err != nil {
				t.Fatal(err)
			}
			var reports []string
			for _, m := range h {
				if m.Role == "user" {
					reports = append(reports, m.Content)
				}
			}
			if len(reports) != 1 || strings.Count(reports[0], "task c1") != 1 || strings.Count(reports[0], "task c2") != 1 {
				t.Fatalf("the lead's report turns: %q; want one, naming c1 and c2 once each", reports)
			}
		})
	}
}

// readsDownOnce is a store whose next read of a task fails, as a NATS
// server's restart makes it fail, once armed.
type readsDownOnce struct {
	store.Store
	armed atomic.Bool
}

func (s *readsDownOnce) GetTask(ctx context.Context, id string) (store.TaskRecord, bool, error) {
	if s.armed.CompareAndSwap(true, false) {
		return store.TaskRecord{}, false, fmt.Errorf("store: get task %q: the connection to the server was lost while the request waited, and its answer with it: %w", id, store.ErrUnavailable)
	}
	return s.Store.GetTask(ctx, id)
}

// armingModel answers as summaryModel does, and arms the store's next
// read of a task failing: the read that settles the turn's task.
type armingModel struct{ st *readsDownOnce }

func (m armingModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	m.st.armed.Store(true)
	return summaryModel{}.Stream(ctx, req)
}

// TestReportTurnSettledWhenItsTaskCannotBeRead: a merged report turn that
// ran, whose task could not be read when the turn settled it (the store
// did not answer), is settled again from the history, not left waiting
// for its report turn: a later start of the task's turns (kickTasks, as
// when a process takes another's over) then finds nothing to run. The
// cluster soak ran a lead's report turn twice so ("turn's task is gone",
// its error a lost connection), and the root task was reported twice.
func TestReportTurnSettledWhenItsTaskCannotBeRead(t *testing.T) {
	ctx := context.Background()
	st := &readsDownOnce{Store: store.NewMemory()}
	rt := newLead(t, st, armingModel{st})
	p := &Task{ID: "p", Agent: "lead", Instance: "k", Requester: "user", State: TaskReporting, Context: task.DelegationContext{
		Delegations: []task.Delegation{{ChildTaskID: "c", DelegatedTo: "lead"}},
		Responses:   []task.Response{{ChildTaskID: "c", FromAgent: "lead", Response: "done"}}}}
	storeTasks(t, st, p)

	rt.tasks.Kick(ctx, "", "")
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	rt.tasks.Kick(ctx, "", "") // as a process taking the instance over does
	if err := rt.WaitTasks(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := rt.History(ctx, "lead", "k")
	if err != nil {
		t.Fatal(err)
	}
	reports := 0
	for _, m := range h {
		if m.Role == "user" && strings.Contains(m.Content, "task c") {
			reports++
		}
	}
	got, err := rt.Task(ctx, "p")
	if reports != 1 || err == nil && got.State == TaskReporting {
		t.Fatalf("after the report turn whose task could not be read: %d report turns, task %s (%v); want one, and the task settled", reports, got.State, err)
	}
}

// newLead returns a runtime with agent lead on store st and model m.
func newLead(t *testing.T, st store.Store, m model.Provider) *Runtime {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "ganglion.yaml"), []byte(
		"model: {provider: scripted, script: script.yaml}\nagents:\n  - name: lead\n"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(context.Background(), WithConfig(cfg), WithStore(st), WithModel(m), WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// storeTasks stores tasks in st as they are.
func storeTasks(t *testing.T, st store.Store, tasks ...*Task) {
	t.Helper()
	recs := make([]store.TaskRecord, len(tasks))
	for i, tk := range tasks {
		b, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = store.TaskRecord{ID: tk.ID, Agent: tk.Agent, Instance: tk.Instance, Data: b}
	}
	if err := st.CommitTasks(context.Background(), recs, nil); err != nil {
		t.Fatal(err)
	}
}

package delegation

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// TestSettleStartsChildren: a turn's delegations are stored by its step's
// commit (the root task, waiting for both, and one queued child each, in
// call order); its end turns its answer into the task's (FinishDelegated,
// with the task's ID), publishes task.delegated per child, and runs each
// child's turn with its request.
func TestSettleStartsChildren(t *testing.T) {
	f := delegationFixture(t)
	in := pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "audit the repo", Metadata: map[string]any{"channel": "mail", "replyTo": "r-1"}}
	ts := f.turn("lead", "k", "turn-1", in)
	for _, c := range []struct{ id, agent string }{{"call-2", "worker"}, {"call-1", "worker"}} {
		if _, err := f.call(ts, ToolCallAgent, c.id, callArgs{AgentID: c.agent, Message: "part " + c.id}, "call-1", "call-2"); err != nil {
			t.Fatal(err)
		}
	}
	f.commit(ts, nil)
	if got := f.deliveredTasks(); len(got) != 0 {
		t.Fatalf("children ran before the turn ended: %v", got)
	}
	root := f.task("task_3")
	if root.State != task.Waiting || root.Pending != 2 || root.Requester != "user" || root.Channel != "mail" || root.ReplyTo != "r-1" ||
		root.OriginalRequest != "audit the repo" || root.Spent.Delegations != 2 {
		t.Errorf("root task = %+v; want it waiting for 2, from the user on mail r-1, 2 delegations spent", root)
	}
	var order []string
	for _, dl := range root.Context.Delegations {
		order = append(order, dl.CallID+"→"+dl.ChildTaskID)
	}
	if want := []string{"call-1→task_2", "call-2→task_1"}; !reflect.DeepEqual(order, want) {
		t.Errorf("delegations in the context = %v, want call order %v", order, want)
	}
	child := f.task("task_2")
	if child.State != task.Queued || child.ParentID != "task_3" || child.Root != "task_3" || child.Requester != "lead/k" ||
		child.Channel != task.ChannelAgent || child.CallerTurn != "turn-1" || !reflect.DeepEqual(child.Chain, []string{"lead/k"}) {
		t.Errorf("child task = %+v", child)
	}

	res, err := f.d.End(ts, in, &pipeline.TurnResult{TurnID: "turn-1", FinishReason: pipeline.FinishText}, nil)
	if err != nil || res.FinishReason != pipeline.FinishDelegated || res.TaskID != "task_3" {
		t.Fatalf("End = %+v, %v; want FinishDelegated for task_3", res, err)
	}
	f.wait()
	got := f.deliveredTasks()
	if len(got) != 2 || !(got[0] == "task_1" && got[1] == "task_2" || got[0] == "task_2" && got[1] == "task_1") {
		t.Errorf("turns run for %v, want task_1 and task_2", got)
	}
	if evs := f.published(events.TaskDelegated); len(evs) != 2 {
		t.Errorf("%d task.delegated events, want 2", len(evs))
	} else if d := evs[0].Data.(events.TaskDelegatedData); d.TaskID != "task_3" || d.To != "worker" || d.Pending != 2 || !d.Root {
		t.Errorf("task.delegated = %+v", d)
	}
	if root := f.task("task_3"); root.Spent.Turns != 1 || root.State != task.Waiting {
		t.Errorf("root task after its turn = %+v; want one turn spent, waiting", root)
	}
	if e, l := f.gate.counts(); e != 2 || l != 2 {
		t.Errorf("gate entered %d times and left %d, want 2 and 2", e, l)
	}
}

// TestCommittedFailedTakesBack: a step commit that fails takes its
// delegations back: no child runs, the batch holds no task, and the tree's
// count of delegations is as before.
func TestCommittedFailedTakesBack(t *testing.T) {
	f := delegationFixture(t)
	in := pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"}
	ts := f.turn("lead", "k", "turn-1", in)
	if _, err := f.call(ts, ToolCallAgent, "call-1", callArgs{AgentID: "worker", Message: "do it"}, "call-1"); err != nil {
		t.Fatal(err)
	}
	f.commit(ts, errors.New("disk full"))
	if n := len(ts.Inst.Unsaved().Tasks); n != 0 {
		t.Errorf("the unsaved batch holds %d tasks after the failed commit, want 0", n)
	}
	x := turnOf(ts)
	if len(x.children) != 0 || x.id != "" {
		t.Errorf("turn after the failed commit: children %v, task %q; want none", x.children, x.id)
	}
	if tr := f.d.trees["task_2"]; tr == nil || tr.spent.Delegations != 0 {
		t.Errorf("tree after the failed commit = %+v, want 0 delegations spent", tr)
	}
	if _, err := f.d.End(ts, in, &pipeline.TurnResult{FinishReason: pipeline.FinishText}, nil); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if got := f.deliveredTasks(); len(got) != 0 {
		t.Errorf("turns run for %v, want none", got)
	}
	if ts, _ := f.d.List(context.Background(), "", ""); len(ts) != 0 {
		t.Errorf("stored tasks %+v, want none", ts)
	}
}

// TestCheckInput: a task's input is refused with ErrTaskMoved when the
// task completed or no longer waits for that turn, and passes when it
// does; an input that names no task, or is no task's kind, passes.
func TestCheckInput(t *testing.T) {
	f := newFixture(t, nil)
	f.store(&task.Task{ID: "q", Agent: "a", Instance: "k", State: task.Queued},
		&task.Task{ID: "r", Agent: "a", Instance: "k", State: task.Reporting},
		&task.Task{ID: "w", Agent: "a", Instance: "k", State: task.Waiting})
	req, rep := pipeline.InputAgentRequest, pipeline.InputDelegationReport
	tests := []struct {
		name string
		kind pipeline.InputKind
		id   string
		want string // "" passes
	}{
		{"queued task's request", req, "q", ""},
		{"reporting task's report", rep, "r", ""},
		{"completed task's request", req, "gone", "task gone: the task no longer waits for this turn: it completed"},
		{"completed task's report", rep, "gone", "task gone: the task no longer waits for this turn: it completed"},
		{"request of a task that moved on", req, "w", "task w: the task no longer waits for this turn: it is waiting"},
		{"request of a reporting task", req, "r", "task r: the task no longer waits for this turn: it is reporting"},
		{"report of a queued task", rep, "q", "task q: the task no longer waits for this turn: it is queued"},
		{"no task", req, "", ""},
		{"user message naming a task", pipeline.InputUserMessage, "gone", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pipeline.InputEvent{Kind: tt.kind, Text: "x"}
			if tt.id != "" {
				in.Metadata = map[string]any{"taskId": tt.id}
			}
			err := f.d.CheckInput(context.Background(), in)
			if errText(err) != tt.want {
				t.Fatalf("CheckInput = %v, want %q", err, tt.want)
			}
			if tt.want != "" && !errors.Is(err, ErrTaskMoved) {
				t.Errorf("%v does not match ErrTaskMoved", err)
			}
		})
	}
}

// TestTaskInput: a queued task's turn gets its request with the caller's
// metadata (and its team); a reporting task's gets the reports not yet
// handed over, merged in delegation order whatever order they came in;
// other states wait for no turn.
func TestTaskInput(t *testing.T) {
	ctx := task.DelegationContext{OriginalRequest: "audit", Requester: "user", Delegations: []task.Delegation{
		{ChildTaskID: "c1", DelegatedTo: "worker", Message: "part one"},
		{ChildTaskID: "c2", DelegatedTo: "dev", Message: "part two"},
		{ChildTaskID: "c3", DelegatedTo: "qa", Message: "part three"},
	}}
	resp := func(id, from, text string, failed bool) task.Response {
		return task.Response{ChildTaskID: id, FromAgent: from, Response: text, Failed: failed}
	}
	head := "[System notice: delegation context restored]\n" +
		"This is where you were when you delegated 3 task(s):\n" +
		"- Original requester: user\n" +
		"- Original request: audit\n" +
		"- Delegations:\n" +
		"  1. worker: part one\n" +
		"  2. dev: part two\n" +
		"  3. qa: part three\n" +
		"Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.\n\n---\n"

	t.Run("queued", func(t *testing.T) {
		for _, team := range []string{"", "eng"} {
			tk := &task.Task{ID: "c1", Agent: "worker", Instance: "k", State: task.Queued, OriginalRequest: "part one", ParentID: "p",
				Requester: "lead/k", CallerTurn: "turn-1", Chain: []string{"lead/k"}, Team: team}
			in, ok := taskInput(tk)
			want := map[string]any{"taskId": "c1", "parentTaskId": "p", "taskChain": []string{"lead/k"}, "callerAgent": "lead",
				"callerInstanceKey": "k", "callerTurnId": "turn-1", "callSource": "tool"}
			if team != "" {
				want["team"] = team
			}
			if !ok || in.Kind != pipeline.InputAgentRequest || in.Text != "part one" || !reflect.DeepEqual(in.Metadata, want) {
				t.Errorf("team %q: taskInput = %+v, %v\nwant metadata %v", team, in, ok, want)
			}
		}
	})
	tests := []struct {
		name      string
		responses []task.Response
		reported  int
		want      string
		caller    string // metadata callerAgent, "" if none
	}{
		{"merged, in delegation order", []task.Response{resp("c3", "qa", "all good", false), resp("c1", "worker", "12 files", false), resp("c2", "dev", "crashed", true)}, 0,
			head + "[Merged report of 3 parallel delegations]\n" +
				"\n## worker, task c1\n12 files\n" +
				"\n## dev, task c2 (failed)\ncrashed\n" +
				"\n## qa, task c3\nall good\n", ""},
		{"only the reports not handed over", []task.Response{resp("c1", "worker", "12 files", false), resp("c3", "qa", "all good", false), resp("c2", "dev", "fixed", false)}, 1,
			head + "[Merged report of 2 parallel delegations]\n" +
				"\n## dev, task c2\nfixed\n" +
				"\n## qa, task c3\nall good\n", ""},
		{"one report", []task.Response{resp("c1", "worker", "12 files", false), resp("c2", "dev", "fixed", false)}, 1,
			head + "[Delegation report]\n" +
				"\n## dev, task c2\nfixed\n", "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctx
			c.Responses, c.Reported = tt.responses, tt.reported
			tk := &task.Task{ID: "p", Agent: "lead", Instance: "k", State: task.Reporting, Chain: []string{"boss/k"}, Context: c}
			in, ok := taskInput(tk)
			if !ok || in.Kind != pipeline.InputDelegationReport {
				t.Fatalf("taskInput = %+v, %v; want a delegation report", in, ok)
			}
			if in.Text != tt.want {
				t.Errorf("report text:\n%s\nwant:\n%s", in.Text, tt.want)
			}
			want := map[string]any{"taskId": "p", "reported": len(tt.responses), "taskChain": []string{"boss/k"}, "callSource": "tool"}
			if tt.caller != "" {
				want["callerAgent"] = tt.caller
			}
			if !reflect.DeepEqual(in.Metadata, want) {
				t.Errorf("metadata = %v\nwant %v", in.Metadata, want)
			}
		})
	}
	for _, s := range []task.State{task.Waiting, task.Paused, task.Answered} {
		if in, ok := taskInput(&task.Task{ID: "p", State: s}); ok {
			t.Errorf("a %s task's input = %+v, want none", s, in)
		}
	}
}

package delegation

import (
	"context"
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/task"
	"github.com/ganglion-dev/ganglion/store"
)

// TestAsk: Ask sends the message with the API channel and a reply-to of
// its own; a turn that answers at once is the answer; a turn that
// delegated is answered when its root task ends (or fails); a paused turn
// and a caller that gives up are errors; no waiter is left behind.
func TestAsk(t *testing.T) {
	tests := []struct {
		name    string
		finish  pipeline.FinishReason
		failed  error // the root task's failure
		cancel  bool  // the caller gives up before the task ends
		want    string
		wantErr string
	}{
		{"answered at once", pipeline.FinishText, nil, false, "hello", ""},
		{"delegated", pipeline.FinishDelegated, nil, false, "all done", ""},
		{"delegated, failed", pipeline.FinishDelegated, errors.New("model down"), false, "", "task task_2: model down"},
		{"paused", pipeline.FinishPaused, nil, false, "", `agent "lead" instance "k" turn-1: instance paused: it waits for a human: answer its pending items (ganglion pending)`},
		{"caller gives up", pipeline.FinishDelegated, nil, true, "", `agent "lead" instance "k": waiting for task task_2: context canceled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var root *task.Task
			send := func(_ context.Context, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
				if in.Metadata["channel"] != task.ChannelAPI || in.Metadata["replyTo"] != "ask_1" {
					t.Errorf("sent metadata %v, want the API channel and reply-to ask_1", in.Metadata)
				}
				res := &pipeline.TurnResult{TurnID: "turn-1", FinishReason: tt.finish, Response: pipeline.Message{Content: "hello"}}
				if tt.finish == pipeline.FinishDelegated {
					root = &task.Task{ID: f.d.env.NewID("task_", ""), Agent: "lead", Instance: "k", Requester: "user", Channel: task.ChannelAPI,
						ReplyTo: in.Metadata["replyTo"].(string), OriginalRequest: in.Text, State: task.Waiting}
					f.store(root)
					res.TaskID = root.ID
					if tt.cancel {
						cancel()
					} else {
						go func() {
							if err := f.d.completeTask(context.Background(), root, "all done", tt.failed); err != nil {
								t.Error(err)
							}
						}()
					}
				}
				return res, nil
			}
			rep, err := f.d.Ask(ctx, "lead", "k", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"}, send)
			if errText(err) != tt.wantErr {
				t.Fatalf("Ask = %+v, %v\nwant error %q", rep, err, tt.wantErr)
			}
			if tt.wantErr == "" && (rep == nil || rep.Response != tt.want || rep.Agent != "lead" || rep.Instance != "k" ||
				rep.Channel != task.ChannelAPI || rep.ReplyTo != "ask_1" || rep.Request != "hi") {
				t.Errorf("Ask's report = %+v, want %q from lead/k for ask_1", rep, tt.want)
			}
			if tt.failed != nil && (rep == nil || rep.Error != tt.failed.Error()) {
				t.Errorf("Ask's report = %+v, want it to carry the failure", rep)
			}
			n := 0
			f.d.api.waiters.Range(func(any, any) bool { n++; return true })
			if n != 0 {
				t.Errorf("%d waiters left after Ask returned", n)
			}
			if tt.cancel {
				// The answer that comes after finds nobody waiting: the
				// placement says so, and the task is deleted.
				if err := f.d.completeTask(context.Background(), root, "late", nil); err != nil {
					t.Fatal(err)
				}
				f.gone(root.ID)
			}
		})
	}
}

// TestListAgents: list_agents shows the agents the caller may delegate
// to, marking those that failed to load, and the teams when it may
// call_team_agent; get_my_tools lists the step's tools.
func TestListAgents(t *testing.T) {
	f := delegationFixture(t)
	f.member("worker", Member{Description: "counts <files> & lines"})
	tests := []struct {
		agent, want string
	}{
		{"lead", `{"agents":[{"name":"worker","description":"counts <files> & lines"},{"name":"broken","unavailable":true}],` +
			`"teams":[{"team":"eng","agents":[{"name":"dev"},{"name":"qa"}]},{"team":"ops","agents":[{"name":"sre"}]}]}`},
		{"qa", `{"agents":[{"name":"dev"}]}`},
		{"loner", `{"agents":[]}`},
	}
	for _, tt := range tests {
		ts := f.turn(tt.agent, "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
		res, err := f.call(ts, "list_agents", "call-1", struct{}{}, "call-1")
		if err != nil || res.Content != tt.want {
			t.Errorf("list_agents of %s = %+v, %v\nwant %s", tt.agent, res, err, tt.want)
		}
	}
	ts := f.turn("ghost", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	if _, err := f.call(ts, "list_agents", "call-1", struct{}{}, "call-1"); errText(err) != `no agent "ghost"` {
		t.Errorf("list_agents of an unknown agent: %v", err)
	}

	ts = f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	ts.Step.Init(&ts.TurnCtx, 1, f.d.Tools()[2:])
	res, err := f.call(ts, "get_my_tools", "call-1", struct{}{}, "call-1")
	want := `[{"name":"call_agent","description":"` + f.d.Tools()[2].Description + `","category":"other"},` +
		`{"name":"call_team_agent","description":"` + f.d.Tools()[3].Description + `","category":"other"}]`
	if err != nil || res.Content != want {
		t.Errorf("get_my_tools = %+v, %v\nwant %s", res, err, want)
	}
}

// loadedInstance returns agent's instance key loaded from the store, with
// d as its hook, after storing history: what Loaded sees at a start.
func loadedInstance(t *testing.T, f *fixture, agent, key string, history ...*pipeline.Message) (*engine.Instance, error) {
	t.Helper()
	recs := make([]store.Record, len(history))
	for i, m := range history {
		recs[i] = store.Record{Seq: uint64(i + 1), Message: m}
	}
	if err := f.st.Commit(context.Background(), agent, key, store.Batch{Put: recs}); err != nil {
		t.Fatal(err)
	}
	a := &engine.Agent{Name: agent, Logger: f.d.env.Logger, Env: &engine.Env{Store: f.st, Bus: f.bus, Hooks: []engine.Hook{f.d}, Now: f.d.eng.Now}}
	inst := engine.NewInstance(a, key, &Turn{})
	return inst, inst.Load(context.Background())
}

// TestLoadedSettlesTask: an instance loaded after its task's turn
// answered, before the task recorded it, settles the task from the
// history: the child reports its answer and is deleted, and its turn does
// not run again. A task that does not wait for that turn any more, or a
// turn cut short before its answer, is left.
func TestLoadedSettlesTask(t *testing.T) {
	input := func(id string) *pipeline.Message {
		return &pipeline.Message{ID: "m1", Role: pipeline.RoleUser, Content: "count", Source: pipeline.Source{Type: pipeline.SourceAgent},
			Metadata: map[string]any{"taskId": id, "turn_id": "turn-1"}}
	}
	answer := &pipeline.Message{ID: "m2", Role: pipeline.RoleAssistant, Content: "12 files", Source: pipeline.Source{Type: pipeline.SourceModel},
		Metadata: map[string]any{"turn_id": "turn-1"}}
	tests := []struct {
		name    string
		state   task.State
		history []*pipeline.Message
		settled bool
	}{
		{"answered, task queued", task.Queued, []*pipeline.Message{input("c"), answer}, true},
		{"answered, task moved on", task.Waiting, []*pipeline.Message{input("c"), answer}, false},
		{"cut short", task.Queued, []*pipeline.Message{input("c")}, false},
	}
	pending := func(s task.State) int {
		if s == task.Waiting {
			return 1 // it delegated
		}
		return 0
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.member("lead", Member{})
			f.store(&task.Task{ID: "p", Agent: "lead", Instance: "k", State: task.Waiting, Pending: 1,
				Context: task.DelegationContext{Delegations: []task.Delegation{{ChildTaskID: "c", DelegatedTo: "worker"}}}},
				&task.Task{ID: "c", Agent: "worker", Instance: "k", ParentID: "p", Root: "p", State: tt.state, Pending: pending(tt.state)})
			if _, err := loadedInstance(t, f, "worker", "k", tt.history...); err != nil {
				t.Fatal(err)
			}
			f.wait()
			p := f.task("p")
			if !tt.settled {
				f.task("c")
				if len(p.Context.Responses) != 0 {
					t.Errorf("parent = %+v, want no report", p)
				}
				return
			}
			f.gone("c")
			if len(p.Context.Responses) != 1 || p.Context.Responses[0].Response != "12 files" || p.State != task.Reporting {
				t.Errorf("parent = %+v; want the child's answer reported", p)
			}
			for _, dl := range f.delivered() {
				if dl.taskID() == "c" {
					t.Errorf("the settled task's turn ran again: %+v", dl)
				}
			}
		})
	}
}

package delegation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/task"
)

// mailbox is a channel that records the reports it is handed and answers
// each with err.
type mailbox struct {
	mu   sync.Mutex
	got  []task.Report
	fail error
}

func (m *mailbox) Deliver(_ context.Context, r task.Report) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, r)
	return m.fail
}

// TestCompleteRootTask: a root task's end hands its answer (or its
// failure) to its requester's channel and deletes the task; a channel
// that defers the answer keeps the task answered; without the channel in
// this process, the task stays answered and task.answered carries the
// answer.
func TestCompleteRootTask(t *testing.T) {
	later := fmt.Errorf("the user is offline: %w", task.ErrDeliverLater)
	tests := []struct {
		name      string
		channel   string
		fail      error // the channel's answer
		failed    error // the task's failure
		delivered bool  // the channel got the answer
		kept      bool  // the task stays stored, answered
		event     events.TaskAnsweredData
	}{
		{"delivered", "mail", nil, nil, true, false,
			events.TaskAnsweredData{TaskID: "root", Requester: "user", Channel: "mail", Response: "42", Delivered: true}},
		{"failed task", "mail", nil, errors.New("model down"), true, false,
			events.TaskAnsweredData{TaskID: "root", Requester: "user", Channel: "mail", Delivered: true, Error: "model down"}},
		{"deliver later", "mail", later, nil, true, true,
			events.TaskAnsweredData{TaskID: "root", Requester: "user", Channel: "mail", Response: "42"}},
		{"channel fails", "mail", errors.New("smtp down"), nil, true, false,
			events.TaskAnsweredData{TaskID: "root", Requester: "user", Channel: "mail", Response: "42"}},
		{"no such channel here", "sms", nil, nil, false, true,
			events.TaskAnsweredData{TaskID: "root", Requester: "user", Channel: "sms", Response: "42"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box := &mailbox{fail: tt.fail}
			f := newFixture(t, nil, func(e *Env) { e.Channels = map[string]task.Channel{"mail": box} })
			root := &task.Task{ID: "root", Agent: "lead", Instance: "k", Requester: "user", Channel: tt.channel, ReplyTo: "r-1",
				OriginalRequest: "what is six times seven", State: task.Waiting}
			f.store(root)
			f.d.trees["root"] = &tree{root: "root"}
			if err := f.d.completeTask(context.Background(), root, "42", tt.failed); err != nil {
				t.Fatal(err)
			}
			answer, answerErr := "42", ""
			if tt.failed != nil {
				answer, answerErr = "", tt.failed.Error()
			}
			if tt.delivered {
				want := []task.Report{{TaskID: "root", Agent: "lead", Instance: "k", Requester: "user", Channel: "mail", ReplyTo: "r-1",
					Request: "what is six times seven", Response: answer, Error: answerErr, CompletedAt: fixedNow}}
				if !reflect.DeepEqual(box.got, want) {
					t.Errorf("channel got %+v\nwant %+v", box.got, want)
				}
			} else if len(box.got) != 0 {
				t.Errorf("channel got %+v, want nothing", box.got)
			}
			if tt.kept {
				got := f.task("root")
				if got.State != task.Answered || got.Answer != answer || got.AnswerError != answerErr || !got.AnsweredAt.Equal(fixedNow) {
					t.Errorf("kept task = %+v; want it answered %q at the clock's time", got, answer)
				}
			} else {
				f.gone("root")
			}
			if _, ok := f.d.trees["root"]; ok {
				t.Error("the ended tree's budget is still kept")
			}
			evs := f.published(events.TaskAnswered)
			if len(evs) != 1 || evs[0].Data != tt.event {
				t.Errorf("task.answered = %+v\nwant one with %+v", evs, tt.event)
			}
			done := f.published(events.TaskCompleted)
			wantDone := events.TaskCompletedData{TaskID: "root", Failed: tt.failed != nil, Response: "42"}
			if tt.failed != nil {
				wantDone.Response = "Task failed: agent lead could not finish it: model down"
			}
			if len(done) != 1 || done[0].Data != wantDone {
				t.Errorf("task.completed = %+v\nwant one with %+v", done, wantDone)
			}
		})
	}
}

// TestDeliverAnswers: answers a channel deferred are handed to it again
// in the background, and deleted once it takes them; other channels'
// answers and open tasks are left.
func TestDeliverAnswers(t *testing.T) {
	box := &mailbox{}
	f := newFixture(t, nil, func(e *Env) { e.Channels = map[string]task.Channel{"mail": box, "sms": &mailbox{}} })
	f.member("lead", Member{})
	f.store(&task.Task{ID: "a1", Agent: "lead", Instance: "k", State: task.Answered, Channel: "mail", Answer: "one"},
		&task.Task{ID: "a2", Agent: "lead", Instance: "k2", State: task.Answered, Channel: "sms", Answer: "two"},
		&task.Task{ID: "w", Agent: "lead", Instance: "k", State: task.Waiting, Channel: "mail"})
	if err := f.d.DeliverAnswers(context.Background(), "mail"); err != nil {
		t.Fatal(err)
	}
	f.wait()
	if len(box.got) != 1 || box.got[0].TaskID != "a1" || box.got[0].Response != "one" {
		t.Errorf("mail got %+v, want a1's answer", box.got)
	}
	f.gone("a1")
	f.task("a2")
	f.task("w")
}

// TestChildReport: a child's end reports to its parent: a response of up
// to 2000 characters whole, a longer one saved under Env.Outputs and
// reported as the file's path and its first 500 characters; the child is
// deleted, and the parent, with every report in, runs its merged report.
func TestChildReport(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		saved  bool
	}{
		{"short", strings.Repeat("é", 2000), false},
		{"long", strings.Repeat("é", 1990) + strings.Repeat("ü", 11), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.member("lead", Member{})
			parent := &task.Task{ID: "p", Agent: "lead", Instance: "k", State: task.Waiting, Pending: 1, Context: task.DelegationContext{
				Delegations: []task.Delegation{{ChildTaskID: "c", DelegatedTo: "worker", Message: "write it"}}}}
			child := &task.Task{ID: "c", Agent: "worker", Instance: "k", ParentID: "p", Root: "p", State: task.Queued, Spent: task.Spend{Turns: 2}}
			f.store(parent, child)
			if err := f.d.completeTask(context.Background(), child, tt.answer, nil); err != nil {
				t.Fatal(err)
			}
			f.wait()
			f.gone("c")
			got := f.task("p")
			if len(got.Context.Responses) != 1 || got.Pending != 0 || got.State != task.Reporting || got.Spent.Turns != 2 {
				t.Fatalf("parent = %+v; want one report in, reporting, the child's 2 turns moved up", got)
			}
			resp := got.Context.Responses[0]
			path := filepath.Join(f.d.env.Outputs, "result_c.txt")
			if !tt.saved {
				if resp.Response != tt.answer || resp.File != "" {
					t.Errorf("report = %q, file %q; want the response whole", resp.Response, resp.File)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a short response was saved: %v", err)
				}
			} else {
				want := "[Task complete] Full result: " + path + "\n\nSummary:\n" + strings.Repeat("é", 500) + "..."
				if resp.Response != want || resp.File != path {
					t.Errorf("report = %q, file %q\nwant %q, file %q", resp.Response, resp.File, want, path)
				}
				b, err := os.ReadFile(path)
				if err != nil || string(b) != tt.answer {
					t.Errorf("saved file = %d bytes, %v; want the whole response", len(b), err)
				}
				if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the temporary file is left: %v", err)
				}
			}
			dls := f.delivered()
			if len(dls) != 1 || dls[0].taskID() != "p" || dls[0].in.Kind != pipeline.InputDelegationReport ||
				!strings.HasSuffix(dls[0].in.Text, "\n## worker, task c\n"+resp.Response+"\n") {
				t.Errorf("turns run = %+v; want p's merged report with the child's", dls)
			}
		})
	}
}

// TestReportOutputsUnwritable: a long response that cannot be saved is
// not reported: the child stays, for its end to be settled again.
func TestReportOutputsUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil, func(e *Env) { e.Outputs = filepath.Join(file, "outputs") })
	parent := &task.Task{ID: "p", Agent: "lead", Instance: "k", State: task.Waiting, Pending: 1}
	child := &task.Task{ID: "c", Agent: "worker", Instance: "k", ParentID: "p", Root: "p", State: task.Queued}
	f.store(parent, child)
	err := f.d.completeTask(context.Background(), child, strings.Repeat("x", 2001), nil)
	if want := "task c: saving its long response: mkdir " + file + ": not a directory"; errText(err) != want {
		t.Errorf("completeTask = %v\nwant %s", err, want)
	}
	f.task("c")
	if got := f.task("p"); got.Pending != 1 || len(got.Context.Responses) != 0 {
		t.Errorf("parent = %+v, want it unchanged", got)
	}
}

package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/store"
)

// Task is a delegation task, as stored: the input of a turn that called
// call_agent, or one such call. It is deleted once its agent answers
// without delegating and the answer reached its parent or channel.
type Task struct {
	ID string `json:"task_id"`
	// Agent and Instance work on the task.
	Agent    string `json:"delegated_to"`
	Instance string `json:"instance"`
	// Requester is "user", a caller's name, or the parent's "agent/instance".
	Requester string `json:"requester"`
	// Channel and ReplyTo are where the answer goes; [ChannelAgent]: the parent.
	Channel string `json:"requester_channel"`
	ReplyTo string `json:"reply_to,omitempty"`
	// OriginalRequest started the task.
	OriginalRequest string `json:"original_request"`
	ParentID        string `json:"parent_task_id,omitempty"`
	// Root is the tree's root task, whose budget it spends; "" for a root.
	Root string `json:"root_task_id,omitempty"`
	// CallerTurn is the parent's delegating turn.
	CallerTurn string `json:"caller_turn,omitempty"`
	// Trace is the W3C traceparent the task's turns join, if traced.
	Trace string `json:"trace,omitempty"`
	// Team is set by call_team_agent.
	Team    string            `json:"team,omitempty"`
	Context DelegationContext `json:"delegation_context"`
	// Pending counts the delegations not reported yet.
	Pending int       `json:"pending_delegations"`
	State   TaskState `json:"state"`
	// Turn is the paused turn, in TaskPaused.
	Turn string `json:"turn,omitempty"`
	// Chain lists the "agent/instance" above, root first: the depth.
	Chain     []string  `json:"chain,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Spent counts its turns and the reported tasks under it.
	Spent Spend `json:"spent,omitzero"`
	// Answer, AnswerError and AnsweredAt are kept in TaskAnswered.
	Answer      string    `json:"answer,omitempty"`
	AnswerError string    `json:"answer_error,omitempty"`
	AnsweredAt  time.Time `json:"answered_at,omitzero"`
}

// TaskState says what a task waits for.
type TaskState string

const (
	// TaskQueued: its turn is to run, or runs (again, after a restart).
	TaskQueued TaskState = "queued"
	// TaskWaiting: it waits for Pending reports.
	TaskWaiting TaskState = "waiting"
	// TaskReporting: its merged report goes to its agent.
	TaskReporting TaskState = "reporting"
	// TaskPaused: its turn waits for a human.
	TaskPaused TaskState = "paused"
	// TaskAnswered: a root task's answer waits for its channel.
	TaskAnswered TaskState = "answered"
)

// DelegationContext is what a task remembers of its delegations.
type DelegationContext struct {
	OriginalRequest string               `json:"original_request"`
	Requester       string               `json:"requester"`
	Delegations     []Delegation         `json:"delegations"`
	Responses       []DelegationResponse `json:"responses"`
	// Reported counts the Responses handed to the agent.
	Reported int `json:"reported"`
}

// Delegation is one call_agent of a task.
type Delegation struct {
	ChildTaskID string `json:"child_task_id"`
	// CallID is the call_agent call that made it.
	CallID      string    `json:"call_id,omitempty"`
	DelegatedTo string    `json:"delegated_to"`
	Instance    string    `json:"instance"`
	Team        string    `json:"team,omitempty"`
	Message     string    `json:"delegation_message"`
	Time        time.Time `json:"delegation_time"`
}

// DelegationResponse is a child task's report.
type DelegationResponse struct {
	ChildTaskID string `json:"child_task_id"`
	FromAgent   string `json:"from_agent"`
	// Response is the answer; one over 2,000 characters is saved in File.
	Response    string    `json:"response"`
	File        string    `json:"file,omitempty"`
	Failed      bool      `json:"failed,omitempty"`
	CompletedAt time.Time `json:"completed_at"`
	// Spent is what the child's tree used.
	Spent Spend `json:"spent,omitzero"`
}

// Channels the runtime names; apps add theirs with [WithChannel].
const (
	// ChannelAPI answers [Runtime.Ask]; after Send, it only publishes.
	ChannelAPI = "api"
	// ChannelAgent marks a child task, which reports to its parent.
	ChannelAgent = "agent"
)

// Report is a root task's final answer, handed to its requester's channel.
type Report struct {
	TaskID    string `json:"task_id"`
	Agent     string `json:"agent"`
	Instance  string `json:"instance"`
	Requester string `json:"requester"`
	Channel   string `json:"channel"`
	ReplyTo   string `json:"reply_to,omitempty"`
	// Request is the original request; Response the whole answer.
	Request  string `json:"request"`
	Response string `json:"response"`
	// Error is set when the task's turn failed.
	Error       string    `json:"error,omitempty"`
	CompletedAt time.Time `json:"completed_at"`
}

// A Channel takes root tasks' answers to their requesters. Deliver is
// called from the goroutine that completed the task: it should not block
// for long. Unless its error wraps [ErrDeliverLater], the task is then
// deleted.
type Channel interface {
	Deliver(ctx context.Context, r Report) error
}

// ErrDeliverLater keeps an answer for [Runtime.DeliverAnswers] or the
// next start.
var ErrDeliverLater = errors.New("deliver later")

// ChannelFunc makes a function a [Channel].
type ChannelFunc func(ctx context.Context, r Report) error

// Deliver calls f.
func (f ChannelFunc) Deliver(ctx context.Context, r Report) error { return f(ctx, r) }

// WithChannel makes ch the channel of tasks whose input metadata says
// channel: name. "agent" and "api" are the runtime's.
func WithChannel(name string, ch Channel) Option {
	return optionFunc(func(o *options) {
		if o.channels == nil {
			o.channels = map[string]Channel{}
		}
		o.channels[name] = ch
	})
}

// WithOutputsDir saves long delegation reports under dir, not outputs.
func WithOutputsDir(dir string) Option { return optionFunc(func(o *options) { o.outputs = dir }) }

// apiChannel is ChannelAPI: it hands a report to the Ask that waits for it.
type apiChannel struct {
	waiters sync.Map // reply-to → chan Report
	// remote hands an answer to the process whose Ask waits for it, when
	// none of this process's does (seam.Placement.Answer).
	remote func(context.Context, seam.Answer) error
}

func (c *apiChannel) Deliver(ctx context.Context, r Report) error {
	if r.ReplyTo == "" {
		return nil // a Send, not an Ask: nobody waits; the task.answered event carries it
	}
	v, ok := c.waiters.LoadAndDelete(r.ReplyTo)
	if !ok {
		return c.remote(ctx, seam.Answer{ReplyTo: r.ReplyTo, Task: r.TaskID, Agent: r.Agent, Instance: r.Instance, Body: r})
	}
	v.(chan Report) <- r // buffered: never blocks
	return nil
}

// Ask sends text as a user's message and returns the final answer, after
// every delegation reported (Report.TaskID "" if none). A pause returns
// [ErrPaused]; the resumed task's answer is then published as an event.
// Cancelling ctx stops the wait; the task goes on.
func (r *Runtime) Ask(ctx context.Context, agentName, instanceKey, text string) (*Report, error) {
	if err := checkInput(agentName, instanceKey, nil); err != nil {
		return nil, err
	}
	if r.tape != nil {
		r.tape.Input(tape.Input{Op: "ask", Agent: agentName, Instance: instanceKey, Text: text})
	}
	replyTo := r.newID("ask_", "ask/"+agentName+"/"+instanceKey)
	wait := make(chan Report, 1)
	r.tasks.api.waiters.Store(replyTo, wait)
	defer r.tasks.api.waiters.Delete(replyTo)
	// The task may end on another process: it sends the answer here.
	stop, err := r.place.AwaitAnswer(replyTo, func(data json.RawMessage) error {
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("malformed answer: %w", err)
		}
		if _, ok := r.tasks.api.waiters.LoadAndDelete(replyTo); !ok {
			return errors.New("no caller waits for it any more")
		}
		wait <- rep // buffered, and the waiter was taken: never blocks
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	in := UserMessage(text)
	in.Metadata = map[string]any{"channel": ChannelAPI, "replyTo": replyTo}
	res, err := r.sendAsked(ctx, agentName, instanceKey, in)
	if err != nil {
		return nil, err
	}
	switch res.FinishReason {
	case pipeline.FinishDelegated:
	case pipeline.FinishPaused:
		return nil, fmt.Errorf("agent %q instance %q %s: %w: answer its pending items (ganglion pending)", agentName, instanceKey, res.TurnID, ErrPaused)
	default:
		return &Report{Agent: agentName, Instance: instanceKey, Requester: "user", Channel: ChannelAPI, ReplyTo: replyTo,
			Request: text, Response: res.Response.Content, CompletedAt: r.env.Now()}, nil
	}
	select {
	case rep := <-wait:
		if rep.Error != "" {
			return &rep, fmt.Errorf("task %s: %s", rep.TaskID, rep.Error)
		}
		return &rep, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("agent %q instance %q: waiting for task %s: %w", agentName, instanceKey, res.TaskID, ctx.Err())
	}
}

// Tasks returns the open tasks by ID, of agentName and instanceKey if set.
func (r *Runtime) Tasks(ctx context.Context, agentName, instanceKey string) ([]Task, error) {
	recs, err := r.env.Store.ListTasks(ctx, agentName, instanceKey)
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(recs))
	for _, rec := range recs {
		t, err := decodeTask(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ErrNoTask is returned for a task ID not stored: unknown, or completed.
var ErrNoTask = errors.New("no such task")

// Task returns the open task with id, or an error wrapping [ErrNoTask].
func (r *Runtime) Task(ctx context.Context, id string) (Task, error) {
	rec, found, err := r.env.Store.GetTask(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if !found {
		return Task{}, fmt.Errorf("task %q: %w (tasks are deleted when they complete)", id, ErrNoTask)
	}
	return decodeTask(rec)
}

func decodeTask(rec store.TaskRecord) (Task, error) {
	var t Task
	if err := json.Unmarshal(rec.Data, &t); err != nil {
		return Task{}, fmt.Errorf("task %q: corrupt record: %w", rec.ID, err)
	}
	if t.ID != rec.ID || t.Agent != rec.Agent || t.Instance != rec.Instance {
		return Task{}, fmt.Errorf("task %q: corrupt record: it says task %q of %s/%s", rec.ID, t.ID, t.Agent, t.Instance)
	}
	return t, nil
}

func encodeTask(t *Task) (store.TaskRecord, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return store.TaskRecord{}, fmt.Errorf("task %q: %w", t.ID, err)
	}
	return store.TaskRecord{ID: t.ID, Agent: t.Agent, Instance: t.Instance, Data: b}, nil
}

// commitTasks stores put and deletes del, atomically, and keeps the cache
// of parents waiting for reports (completeTask) in step. The caller holds
// r.tasks.mu.
func (r *Runtime) commitTasks(ctx context.Context, put []*Task, del ...string) error {
	recs := make([]store.TaskRecord, len(put))
	for i, t := range put {
		rec, err := encodeTask(t)
		if err != nil {
			return err
		}
		recs[i] = rec
	}
	var err error
	if f := r.taskFence(put); f != 0 {
		// The owner of the tasks' instance writes them, under its fence.
		err = r.env.Store.Commit(ctx, put[0].Agent, put[0].Instance, store.Batch{Tasks: recs, DeleteTasks: del, Fence: f})
	} else {
		err = r.env.Store.CommitTasks(ctx, recs, del)
	}
	for _, t := range put {
		if _, ok := r.tasks.cache[t.ID]; ok {
			if err != nil {
				delete(r.tasks.cache, t.ID)
			} else {
				r.tasks.cache[t.ID] = t
			}
		}
	}
	for _, id := range del {
		delete(r.tasks.cache, id)
	}
	return err
}

// newID returns a new ID for what key names (see tape.Tape.ID): prefix
// and 12 random hex digits, or, replaying, the recorded ID.
func (r *Runtime) newID(prefix, key string) string {
	if r.tape == nil {
		return newID(prefix)
	}
	return r.tape.ID(key, func() string { return newID(prefix) })
}

// newID returns prefix and 12 random hex digits.
func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b[:])
}

// truncateRunes returns s's first n characters.
func truncateRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// oneLine shortens s to one line of at most n characters, for events and
// errors.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if t := truncateRunes(s, n); t != s {
		return t + "…"
	}
	return s
}

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
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/store"
)

// Task is a delegation task, as the store keeps it. A turn that
// calls call_agent (or call_team_agent) makes its input a task if it was
// not one already, and makes one child task per call. A task lives until
// its agent answers it without delegating any more; its answer then goes
// to its parent task, or, for a root task, to its requester's channel, and
// the task is deleted with its delegation context.
type Task struct {
	ID string `json:"task_id"`
	// Agent and Instance are the instance that works on the task (the
	// delegated_to field).
	Agent    string `json:"delegated_to"`
	Instance string `json:"instance"`
	// Requester says who asked: "user", a CLI or API caller's name, or the
	// parent's "agent/instance".
	Requester string `json:"requester"`
	// Channel is where a root task's answer goes ([Channel]); a child's is
	// ChannelAgent, its parent. ReplyTo is the address on the channel.
	Channel string `json:"requester_channel"`
	ReplyTo string `json:"reply_to,omitempty"`
	// OriginalRequest is the input that started the task.
	OriginalRequest string `json:"original_request"`
	ParentID        string `json:"parent_task_id,omitempty"`
	// Root is the root task of the tree the task belongs to, whose
	// agent's budget it spends; "" for a root task.
	Root string `json:"root_task_id,omitempty"`
	// CallerTurn is the parent's turn that delegated the task.
	CallerTurn string `json:"caller_turn,omitempty"`
	// Trace is the W3C traceparent of what started the task when it was
	// traced (the call_agent call of a child, the turn of a root task):
	// the task's turns join that trace, also after a restart.
	Trace string `json:"trace,omitempty"`
	// Team is set on a task delegated into a team with call_team_agent.
	Team    string            `json:"team,omitempty"`
	Context DelegationContext `json:"delegation_context"`
	// Pending counts the delegations that have not reported yet.
	Pending int       `json:"pending_delegations"`
	State   TaskState `json:"state"`
	// Turn is the paused turn, when State is TaskPaused.
	Turn string `json:"turn,omitempty"`
	// Chain lists the "agent/instance" of the tasks above, root first; its
	// length is the task's depth.
	Chain     []string  `json:"chain,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Spent is what the task's own turns used, and the tasks under it
	// that have reported (see [Spend]).
	Spent Spend `json:"spent,omitzero"`
	// Answer, AnswerError and AnsweredAt are a root task's answer, kept
	// while State is TaskAnswered.
	Answer      string    `json:"answer,omitempty"`
	AnswerError string    `json:"answer_error,omitempty"`
	AnsweredAt  time.Time `json:"answered_at,omitzero"`
}

// TaskState says what a task waits for.
type TaskState string

const (
	// TaskQueued: its agent has not answered it yet (its turn is to run,
	// or runs). After a restart, a queued task's turn runs again.
	TaskQueued TaskState = "queued"
	// TaskWaiting: it delegated, and waits for Pending reports.
	TaskWaiting TaskState = "waiting"
	// TaskReporting: every delegation reported; the merged report is to be
	// handed to its agent (or is being handed).
	TaskReporting TaskState = "reporting"
	// TaskPaused: its turn waits for a human (a pending item).
	TaskPaused TaskState = "paused"
	// TaskAnswered: a root task's answer waits to be delivered to its
	// requester's channel. The answer is stored before it is delivered
	// and the task deleted after, so a stop in between delivers it again
	// rather than never; while no process has a channel of that name
	// (WithChannel), the task keeps it.
	TaskAnswered TaskState = "answered"
)

// DelegationContext is what a task remembers of its delegations, to
// restore the agent's context when their reports arrive.
type DelegationContext struct {
	OriginalRequest string               `json:"original_request"`
	Requester       string               `json:"requester"`
	Delegations     []Delegation         `json:"delegations"`
	Responses       []DelegationResponse `json:"responses"`
	// Reported counts the Responses already handed to the agent.
	Reported int `json:"reported"`
}

// Delegation is one call_agent of a task.
type Delegation struct {
	ChildTaskID string `json:"child_task_id"`
	// CallID is the call_agent tool call that made the delegation: its
	// result stays in the context until the child reports.
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
	// Response is the child's answer; one over 2,000 characters is
	// in File, and Response holds its path and first characters.
	Response    string    `json:"response"`
	File        string    `json:"file,omitempty"`
	Failed      bool      `json:"failed,omitempty"`
	CompletedAt time.Time `json:"completed_at"`
	// Spent is what the child task and the tasks under it used.
	Spent Spend `json:"spent,omitzero"`
}

// Channels a root task's requester may be reached on. Apps add their own
// with [WithChannel].
const (
	// ChannelAPI answers the Go caller waiting in [Runtime.Ask]. A root
	// task started by [Runtime.Send] without a channel uses it too, and
	// its answer is only published (events.TaskAnswered).
	ChannelAPI = "api"
	// ChannelAgent marks a child task: it reports to its parent.
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
	// Request is the task's original request; Response the answer, whole.
	Request  string `json:"request"`
	Response string `json:"response"`
	// Error is set when the task failed: its agent's turn failed.
	Error       string    `json:"error,omitempty"`
	CompletedAt time.Time `json:"completed_at"`
}

// A Channel takes root tasks' answers to their requesters: the CLI prints
// them, [Runtime.Ask] hands them to its caller; an HTTP/SSE server would
// push them. Deliver should not block for long: the runtime calls it when
// the task completes, from the goroutine that completed it.
//
// An answer Deliver takes (nil) or refuses (an error) is done with: the
// task is deleted. One whose requester is away for now (a browser tab
// closed) is refused with an error wrapping [ErrDeliverLater]: the task
// stays stored, answered, until [Runtime.DeliverAnswers] or the next
// start hands it to Deliver again.
type Channel interface {
	Deliver(ctx context.Context, r Report) error
}

// ErrDeliverLater is wrapped by a Channel's refusal of an answer whose
// requester cannot take it now but will: the answer is kept for later.
var ErrDeliverLater = errors.New("deliver later")

// ChannelFunc makes a function a [Channel].
type ChannelFunc func(ctx context.Context, r Report) error

// Deliver calls f.
func (f ChannelFunc) Deliver(ctx context.Context, r Report) error { return f(ctx, r) }

// WithChannel makes ch the channel named name: a task whose input metadata
// says channel: name answers through it. The names "agent" and "api" are
// the runtime's.
func WithChannel(name string, ch Channel) Option {
	return optionFunc(func(o *options) {
		if o.channels == nil {
			o.channels = map[string]Channel{}
		}
		o.channels[name] = ch
	})
}

// WithOutputsDir saves long delegation reports under dir, overriding the
// config's outputs.
func WithOutputsDir(dir string) Option { return optionFunc(func(o *options) { o.outputs = dir }) }

// apiChannel is ChannelAPI: it hands a report to the Ask that waits for it.
type apiChannel struct {
	waiters sync.Map // reply-to → chan Report
	// remote hands an answer to the process whose Ask waits for it, in a
	// cluster; nil otherwise.
	remote func(context.Context, Report) error
}

func (c *apiChannel) Deliver(ctx context.Context, r Report) error {
	if r.ReplyTo == "" {
		return nil // a Send, not an Ask: nobody waits; the task.answered event carries it
	}
	v, ok := c.waiters.LoadAndDelete(r.ReplyTo)
	if !ok && c.remote != nil {
		return c.remote(ctx, r)
	}
	if !ok {
		return fmt.Errorf("no caller waits for task %s any more (it gave up, or the runtime restarted); the answer is in %s/%s's history", r.TaskID, r.Agent, r.Instance)
	}
	v.(chan Report) <- r // buffered: never blocks
	return nil
}

// Ask sends text to agent's instance key as a user's message and returns
// the final answer. When the turn delegates (call_agent), that is the
// answer the agent gives once every delegation reported back, however
// deep the chain; otherwise it is the turn's response. Report.TaskID is
// empty when there was no task.
//
// A turn that pauses for a human returns an error wrapping [ErrPaused]
// naming its pending items; answer them, and the answer of the resumed
// task is delivered as an event (see the task topics of package events).
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
	stop, err := r.place.awaitAnswer(replyTo, wait)
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
			Request: text, Response: res.Response.Content, CompletedAt: r.now()}, nil
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

// Tasks returns the open delegation tasks, sorted by ID; agentName and
// instanceKey filter them when not empty.
func (r *Runtime) Tasks(ctx context.Context, agentName, instanceKey string) ([]Task, error) {
	recs, err := r.store.ListTasks(ctx, agentName, instanceKey)
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

// ErrNoTask is returned for a task ID the store does not hold: it never
// existed, or it completed.
var ErrNoTask = errors.New("no such task")

// Task returns the open task with id.
func (r *Runtime) Task(ctx context.Context, id string) (Task, error) {
	rec, found, err := r.store.GetTask(ctx, id)
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
		err = r.store.Commit(ctx, put[0].Agent, put[0].Instance, store.Batch{Tasks: recs, DeleteTasks: del, Fence: f})
	} else {
		err = r.store.CommitTasks(ctx, recs, del)
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

package task

import (
	"context"
	"errors"
	"time"
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
	Pending int   `json:"pending_delegations"`
	State   State `json:"state"`
	// Turn is the paused turn, in Paused.
	Turn string `json:"turn,omitempty"`
	// Chain lists the "agent/instance" above, root first: the depth.
	Chain     []string  `json:"chain,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Spent counts its turns and the reported tasks under it.
	Spent Spend `json:"spent,omitzero"`
	// Answer, AnswerError and AnsweredAt are kept in Answered.
	Answer      string    `json:"answer,omitempty"`
	AnswerError string    `json:"answer_error,omitempty"`
	AnsweredAt  time.Time `json:"answered_at,omitzero"`
}

// State says what a task waits for.
type State string

const (
	// Queued: its turn is to run, or runs (again, after a restart).
	Queued State = "queued"
	// Waiting: it waits for Pending reports.
	Waiting State = "waiting"
	// Reporting: its merged report goes to its agent.
	Reporting State = "reporting"
	// Paused: its turn waits for a human.
	Paused State = "paused"
	// Answered: a root task's answer waits for its channel.
	Answered State = "answered"
)

// DelegationContext is what a task remembers of its delegations.
type DelegationContext struct {
	OriginalRequest string       `json:"original_request"`
	Requester       string       `json:"requester"`
	Delegations     []Delegation `json:"delegations"`
	Responses       []Response   `json:"responses"`
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

// Response is a child task's report.
type Response struct {
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

// Channels the runtime names; apps add theirs with the runtime's WithChannel option.
const (
	// ChannelAPI answers the runtime's Ask; after Send, it only publishes.
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

// ErrDeliverLater keeps an answer for the runtime's DeliverAnswers or the
// next start.
var ErrDeliverLater = errors.New("deliver later")

// ChannelFunc makes a function a [Channel].
type ChannelFunc func(ctx context.Context, r Report) error

// Deliver calls f.
func (f ChannelFunc) Deliver(ctx context.Context, r Report) error { return f(ctx, r) }

// Spend is what a task, or a tree of tasks, has used.
type Spend struct {
	// Delegations counts the calls that made a child task.
	Delegations int `json:"delegations,omitempty"`
	// Turns counts requests, merged reports and resumes.
	Turns int `json:"turns,omitempty"`
	// Tokens adds up input and output tokens.
	Tokens int64 `json:"tokens,omitempty"`
}

// Add adds o to s.
func (s *Spend) Add(o Spend) {
	s.Delegations += o.Delegations
	s.Turns += o.Turns
	s.Tokens += o.Tokens
}

// ErrNotFound is the error of a task ID not stored: unknown, or completed.
var ErrNotFound = errors.New("no such task")

package pipeline

import (
	"context"
	"errors"
)

// Window is the context window of a turn: the effective messages the
// model is sent at its next call (the conversation less what was left out
// or summarised), counted with the runtime's tokenizer, and the two ways to
// make it smaller. Middleware that manages the context (summarising old
// messages, dropping stale tool output) reads it on the step context before
// calling Next; [StepContext.Window] returns it.
//
// A Window belongs to the turn that handed it out and is used from that
// turn's goroutine only.
type Window interface {
	// Size is the model's context window in tokens, and ReservedOutput what
	// of it is kept for the answer (the model's max_output_tokens); 0 when
	// the agent's config does not say.
	Size() int
	ReservedOutput() int
	// Messages returns the effective messages, oldest first, each with its
	// token count and marks. The first call in an instance turns counting
	// on for it; each message is counted once. It fails when what must
	// stay cannot be read (the store failed).
	Messages() ([]WindowMessage, error)
	// Tokens is what the next model call is sent, counted: the effective
	// messages and the system prompt.
	Tokens() int
	// Sent is Tokens as it was at the turn's latest model call, 0 before
	// the first: what a provider's reported input usage is compared with.
	Sent() int
	// Truncate leaves the messages ids out of what the model is sent,
	// marking them [MetaTruncated] (they stay in the conversation), and
	// publishes context.truncated with reason. It refuses, changing
	// nothing, a message that is not in the window, one marked Keep, and a
	// set that splits a Unit.
	Truncate(ids []string, reason string) error
	// Reduce truncates the oldest units until at most the share keep
	// (0 < keep < 1) of the effective messages remain, skipping those that
	// must stay: the reduction the runtime itself makes when a provider
	// says the context is too long. It returns the message counts before
	// and after.
	Reduce(keep float64, reason string) (before, after int, err error)
	// Condense appends summary to the conversation and shows it in place
	// of the messages ids, which are marked [MetaCondensedBy] and leave the
	// window; summary is marked [MetaSummary] (its value, if the caller set
	// none, records how many messages it stands for) and must stay for the
	// rest of the turn. It returns the summary's ID. It refuses the same
	// sets Truncate refuses, and a summary whose metadata holds a reserved
	// key but MetaSummary and MetaPinned ([CheckMetadata]).
	Condense(ids []string, summary Message) (string, error)
}

// WindowMessage is one effective message of a [Window].
type WindowMessage struct {
	Message Message
	// Tokens is the message's count with the runtime's tokenizer.
	Tokens int
	// Unit numbers the runs of messages that stay or go together: an
	// assistant message and the results of its tool calls share one.
	Unit int
	// Keep says the message must stay in the window: the first user
	// message (the task), the turn's input, the newest message, pinned
	// messages ([MetaPinned]), and what an open pending item or delegation
	// needs.
	Keep bool
	// Summary says the message summarises earlier ones ([MetaSummary]).
	Summary bool
}

// Models lets turn and step middleware call a model outside the
// conversation: what it is sent and answers is not in the history, and
// its usage is charged to the turn. TurnInfo.Models provides it.
type Models interface {
	// Complete sends req and returns the model's text answer.
	Complete(ctx context.Context, req CompletionRequest) (Completion, error)
}

// CompletionRequest is a model call of a middleware.
type CompletionRequest struct {
	// Model is the model to call: "" for the agent's own, or the name an
	// extension got when it opened one of its own.
	Model    string
	System   string
	Messages []Message
	// MaxOutputTokens bounds the answer; 0: the model's setting.
	MaxOutputTokens int
}

// Completion is the answer to a [CompletionRequest].
type Completion struct {
	Text  string
	Usage Usage
}

// ErrNoWindow is returned by the Window and Models of a context whose
// runtime offers none.
var ErrNoWindow = errors.New("this context has no model window")

type noWindow struct{}

func (noWindow) Size() int                          { return 0 }
func (noWindow) ReservedOutput() int                { return 0 }
func (noWindow) Messages() ([]WindowMessage, error) { return nil, ErrNoWindow }
func (noWindow) Tokens() int                        { return 0 }
func (noWindow) Sent() int                          { return 0 }
func (noWindow) Truncate([]string, string) error {
	return ErrNoWindow
}
func (noWindow) Reduce(float64, string) (int, int, error) { return 0, 0, ErrNoWindow }
func (noWindow) Condense([]string, Message) (string, error) {
	return "", ErrNoWindow
}
func (noWindow) Complete(context.Context, CompletionRequest) (Completion, error) {
	return Completion{}, ErrNoWindow
}

// Window returns the context window of the step's turn.
func (s *StepContext) Window() Window {
	if s.turn.info.Window == nil {
		return noWindow{}
	}
	return s.turn.info.Window
}

// Models returns what calls models for the step's middleware.
func (s *StepContext) Models() Models { return s.turn.Models() }

// Models returns what calls models for the turn's middleware.
func (t *TurnContext) Models() Models {
	if t.info.Models == nil {
		return noWindow{}
	}
	return t.info.Models
}

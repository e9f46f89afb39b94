package pipeline

import (
	"context"
	"errors"
)

// Window is a turn's context window, for its goroutine: docs/extensions.md,
// "The context window".
type Window interface {
	Size() int
	ReservedOutput() int
	Messages() ([]WindowMessage, error)
	Tokens() int
	Sent() int
	// Truncate refuses, changing nothing, a message outside the window or to
	// Keep, or a split Unit.
	Truncate(ids []string, reason string) error
	Reduce(keep float64, reason string) (before, after int, err error)
	// Condense refuses what Truncate refuses.
	Condense(ids []string, summary Message) (string, error)
}

// WindowMessage is one effective message: its Tokens, its Unit (messages
// that stay or go together), and whether it must stay (Keep) or is a Summary.
type WindowMessage struct {
	Message Message
	Tokens  int
	Unit    int
	Keep    bool
	Summary bool
}

// Models lets turn and step middleware call a model outside the
// conversation, its usage charged to the turn.
type Models interface {
	Complete(ctx context.Context, req CompletionRequest) (Completion, error)
}

// CompletionRequest is a model call of a middleware: Model "" is the agent's,
// MaxOutputTokens 0 the model's setting.
type CompletionRequest struct {
	Model           string
	System          string
	Messages        []Message
	MaxOutputTokens int
}

// Completion is the answer to a [CompletionRequest].
type Completion struct {
	Text  string
	Usage Usage
}

// ErrNoWindow is returned when the runtime offers no window or models.
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

// Models returns what calls models for the step.
func (s *StepContext) Models() Models { return s.turn.Models() }

// Models returns what calls models for the turn.
func (t *TurnContext) Models() Models {
	if t.info.Models == nil {
		return noWindow{}
	}
	return t.info.Models
}

package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// ActionKind is what a human does with a pending item.
type ActionKind string

// The actions on a pending item.
const (
	ActionAnswer  ActionKind = "answer"  // answer a question (or an approval)
	ActionSkip    ActionKind = "skip"    // take a question's default
	ActionProvide ActionKind = "provide" // give a dependency's value
	ActionReject  ActionKind = "reject"  // refuse a dependency (or an approval)
	// ActionEdit approves a paused call with other arguments (Value); see
	// [ResumeCall.RunWith].
	ActionEdit ActionKind = "edit"
)

// Action is a human's action on a pending item. Value (an answer, a
// provided value, an edit's JSON arguments) may be secret: never put it in
// an error or a resolution.
type Action struct {
	Kind   ActionKind
	Value  string
	Reason string
}

// Outcome is what a [PendingKind] makes of an action or a timeout. A
// Secret is kept encrypted for the instance; Resolution.Message never holds one.
type Outcome struct {
	Resolution ledger.Resolution
	Secret     *Secret
}

// Secret is a named secret value. Name is an environment variable name.
type Secret struct {
	Name, Value string
}

// PendingKind is a kind of pending item and what its resolutions mean.
type PendingKind struct {
	Name string
	// Resolve's error changes nothing; it matches [ErrInvalidAction] when the
	// action is at fault.
	Resolve func(ctx context.Context, it ledger.Item, act Action) (Outcome, error)
	// Expire may be nil: status timeout.
	Expire func(it ledger.Item) Outcome
	// Resume, if set, decides the result of a paused call in the resume turn.
	Resume func(ctx context.Context, it ledger.Item, rc ResumeCall) error
}

// ResumeCall is a paused tool call in its resume turn.
type ResumeCall interface {
	Run(ctx context.Context) (*pipeline.ToolResult, error)
	// RunWith runs it with args, a human's edit.
	RunWith(ctx context.Context, args json.RawMessage) (*pipeline.ToolResult, error)
	Result(content string, isError bool) error
}

// ErrInvalidAction is matched by refusals of an action (not an option, a
// required skip, a bad value, the wrong kind).
var ErrInvalidAction = errors.New("invalid action")

// PendingHost is the runtime's side of [Pending].
type PendingHost interface {
	HandlePending(ext string, kind PendingKind) error
	CreatePending(ctx context.Context, ext string, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error)
	CreatePendingCall(ctx context.Context, ext string, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error)
}

// Pending pauses a turn on what a human must answer; the item is stored with
// the instance and survives a restart.
type Pending struct {
	host PendingHost
	ext  string
}

// Handle registers a kind of item the extension creates. Call it from
// Register.
func (p *Pending) Handle(kind PendingKind) error {
	if p.host == nil {
		return fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	if kind.Name == "" || kind.Resolve == nil {
		return fmt.Errorf("extension %q: a pending kind needs a name and a Resolve function", p.ext)
	}
	return p.host.HandlePending(p.ext, kind)
}

// Pause stores it as an open item of the step's turn (the runtime fills in
// where; timeout > 0 sets a deadline); the middleware then returns a result
// whose Stop is [pipeline.FinishPaused].
func (p *Pending) Pause(ctx context.Context, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	if p.host == nil {
		return ledger.Item{}, fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	return p.host.CreatePending(ctx, p.ext, s, it, timeout)
}

// PauseCall stores it as an open item of the call's turn, which ends paused
// after the step; the middleware returns a placeholder result, and the
// kind's Resume decides the real one.
func (p *Pending) PauseCall(ctx context.Context, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	if p.host == nil {
		return ledger.Item{}, fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	return p.host.CreatePendingCall(ctx, p.ext, c, it, timeout)
}

// SecretsHost is the runtime's side of [Secrets].
type SecretsHost interface {
	Secret(ctx context.Context, agent, instanceKey, name string) (value string, found bool, err error)
}

// Secrets reads the instance's secrets that the config grants under secrets:.
type Secrets struct {
	host   SecretsHost
	agent  string
	ext    string
	grants []string
}

// ErrNotGranted is returned for a secret the extension's config does not grant.
var ErrNotGranted = errors.New("not granted")

// Get returns secret name of the instance and whether it was provided;
// never log, publish, store or show it.
func (s *Secrets) Get(ctx context.Context, instanceKey, name string) (string, bool, error) {
	if !slices.Contains(s.grants, name) {
		return "", false, fmt.Errorf("extension %q: secret %q is %w (list it under the extension's secrets: in the config)", s.ext, name, ErrNotGranted)
	}
	if s.host == nil {
		return "", false, fmt.Errorf("extension %q: secrets are not supported here", s.ext)
	}
	v, ok, err := s.host.Secret(ctx, s.agent, instanceKey, name)
	if err != nil {
		return "", false, fmt.Errorf("extension %q: secret %q: %w", s.ext, name, err)
	}
	return v, ok, nil
}

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
	// ActionEdit approves the tool call an item paused with other
	// arguments: Value holds them, a JSON object. The runtime refuses an
	// edit of an item that paused no call (or whose kind has no Resume to
	// run it), and checks the arguments against the call's tool schema,
	// before the kind's Resolve sees the action; see [ResumeCall.RunWith].
	ActionEdit ActionKind = "edit"
)

// Action is a human's action on a pending item.
type Action struct {
	Kind ActionKind
	// Value is the answer, the provided value, or an edit's arguments (a
	// JSON object). A provided value may be a secret: a kind's Resolve
	// never puts it in an error or in the resolution.
	Value string
	// Reason says why, for a rejection.
	Reason string
}

// Outcome is what a [PendingKind] makes of an action or a timeout.
type Outcome struct {
	// Resolution is how the item ends in the ledger. Its Message is what the
	// model reads when the turn resumes, and never holds a secret; its Fails
	// fails the task: the resume turn ends with finish reason error, with
	// Reason as the cause.
	Resolution ledger.Resolution
	// Secret, if set, is a value the runtime keeps encrypted for the
	// instance: execute_command receives it as the environment variable
	// Secret.Name, and extensions granted it read it with [Secrets.Get].
	Secret *Secret
}

// Secret is a named secret value. Name is an environment variable name.
type Secret struct {
	Name, Value string
}

// PendingKind is a kind of pending item and what its resolutions mean.
// The extension that creates items of the kind registers it; the runtime
// calls it when a human acts on an item (through the Go API, the CLI) or
// when the item times out, also after a restart.
type PendingKind struct {
	// Name is the ledger kind of the items ("question", "dependency").
	Name string
	// Resolve checks act against the item and returns its outcome. An
	// error refuses the action and changes nothing; it must match
	// [ErrInvalidAction] when the action, not the system, is at fault.
	// An [ActionEdit] reaches it only for an item that paused a tool call,
	// with arguments that match the tool's schema: a kind that takes
	// edits records them in the resolution's Answer, and its Resume runs
	// the call with them ([ResumeCall.RunWith]).
	Resolve func(ctx context.Context, it ledger.Item, act Action) (Outcome, error)
	// Expire returns the outcome of a timeout. Nil: the item ends as
	// timeout and the turn resumes with a message saying so.
	Expire func(it ledger.Item) Outcome
	// Resume, if set, runs in the resume turn, before the model is
	// called, for each closed item of the kind that paused a tool call
	// (see [Pending.PauseCall]): it decides the call's result, running the
	// call with rc.Run if the answer says so. What it sets with rc.Result
	// replaces the call's placeholder result in the history.
	Resume func(ctx context.Context, it ledger.Item, rc ResumeCall) error
}

// ResumeCall is a tool call paused by [Pending.PauseCall], in its resume
// turn.
type ResumeCall interface {
	// Run runs the call through the toolCall chain and the tool, with ctx.
	Run(ctx context.Context) (*pipeline.ToolResult, error)
	// RunWith runs the call as Run does, with args (a JSON object a human
	// wrote: see [ActionEdit]) in place of the model's arguments. The
	// middleware and the tool see args; they are checked against the
	// tool's schema as every call's arguments are (a mismatch is the
	// call's error result, not an error). The model's call stays in the
	// history as it asked for it, and Result records args with the
	// call's result: in its metadata (under "edited_arguments", the JSON
	// text) and in a first line of its content, so that the model reads
	// which arguments the result is for.
	RunWith(ctx context.Context, args json.RawMessage) (*pipeline.ToolResult, error)
	// Result sets the call's result, which replaces its placeholder.
	Result(content string, isError bool) error
}

// ErrInvalidAction is matched by refusals of an action: an answer that is
// not one of the options, a skip of a required question, a value that is
// not a URL, an action that does not apply to the kind.
var ErrInvalidAction = errors.New("invalid action")

// PendingHost is the runtime's side of [Pending]. Extension authors do not
// implement it.
type PendingHost interface {
	// HandlePending registers kind for extension ext of the agent.
	HandlePending(ext string, kind PendingKind) error
	// CreatePending stores it as an open item of the step's turn; see
	// [Pending.Pause].
	CreatePending(ctx context.Context, ext string, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error)
	// CreatePendingCall stores it as an open item of the call's turn; see
	// [Pending.PauseCall].
	CreatePendingCall(ctx context.Context, ext string, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error)
}

// Pending lets an extension pause a turn on what a human must answer, and
// say what the answers mean. The pause is durable: the item is stored with
// the instance, and answering it, even after a restart, starts a resume
// turn.
type Pending struct {
	host PendingHost
	ext  string
}

// Handle registers a kind of item the extension creates. Call it from
// Register: items stored by an earlier process are answered through it.
func (p *Pending) Handle(kind PendingKind) error {
	if p.host == nil {
		return fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	if kind.Name == "" || kind.Resolve == nil {
		return fmt.Errorf("extension %q: a pending kind needs a name and a Resolve function", p.ext)
	}
	return p.host.HandlePending(p.ext, kind)
}

// Pause stores it as an open item of the running step's turn, for a kind
// the extension handles. The runtime fills in the agent, instance, turn,
// step and checkpoint; a timeout above zero sets the item's deadline. The
// step middleware that pauses then returns a result whose Stop is
// [pipeline.FinishPaused]; the turn resumes once all its open items are
// resolved.
func (p *Pending) Pause(ctx context.Context, s *pipeline.StepContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	if p.host == nil {
		return ledger.Item{}, fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	return p.host.CreatePending(ctx, p.ext, s, it, timeout)
}

// PauseCall stores it as an open item of the running tool call's turn,
// for a kind the extension handles, and makes the turn end paused after
// the call's step. The toolCall middleware returns a placeholder result
// (the model reads it only if nothing replaces it); when the turn resumes,
// the kind's Resume decides the call's real result.
func (p *Pending) PauseCall(ctx context.Context, c *pipeline.ToolCallContext, it ledger.Item, timeout time.Duration) (ledger.Item, error) {
	if p.host == nil {
		return ledger.Item{}, fmt.Errorf("extension %q: pending items are not supported here", p.ext)
	}
	return p.host.CreatePendingCall(ctx, p.ext, c, it, timeout)
}

// SecretsHost is the runtime's side of [Secrets]. Extension authors do not
// implement it.
type SecretsHost interface {
	// Secret returns the named secret of the agent's instance.
	Secret(ctx context.Context, agent, instanceKey, name string) (value string, found bool, err error)
}

// Secrets gives an extension read access to the secrets provided to an
// instance (a dependency's API key), only for the names its config grants
// under secrets:.
type Secrets struct {
	host   SecretsHost
	agent  string
	ext    string
	grants []string
}

// ErrNotGranted is returned for a secret the extension's config does not grant.
var ErrNotGranted = errors.New("not granted")

// Get returns the value of secret name for the instance, and whether it
// was provided. The extension must not log it, publish it, keep it in its
// state or give it to the model.
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

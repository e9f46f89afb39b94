package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tokens"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/store"
)

// Agent is what the engine needs of an agent to run its turns: its
// model, tools and pipeline. Immutable once its first turn runs.
type Agent struct {
	Name      string
	System    string // the system prompt
	Model     model.Provider
	ModelName string
	Provider  string // the model's provider, as the config names it
	MaxOutput int
	// ContextWindow is the model's context size in tokens, 0 if unknown.
	ContextWindow int
	MaxSteps      int
	// Tokens is the model's encoding, which counts the tokens of its
	// messages (Counter: CountTokens over it, made once, so that handing
	// it to the history allocates nothing).
	Tokens  *tokens.Encoding
	Counter func(*pipeline.Message) int
	// Models are the models its extensions opened (extensions.Models),
	// by the name Open returned.
	Models map[string]Opened
	Tools  []pipeline.Tool
	// StepTools, if set, returns the tools a step of in offers: Tools
	// and those the agent's tool sources list now.
	StepTools func(ctx context.Context, in *Instance) []pipeline.Tool
	// Live are the tools that are code under test when a session is
	// replayed (an extension's, the runtime's own): ToolRunner runs
	// them, where it answers for the others.
	Live map[string]bool
	// Pipe is the agent's pipeline; its innermost handlers are the
	// agent's TurnHandler, StepHandler and ToolHandler.
	Pipe   *pipeline.Pipeline
	Logger *slog.Logger
	Env    *Env
	// Host is the embedding runtime's own agent, for its hooks.
	Host any

	sysTokens atomic.Int64 // the system prompt's count plus one; 0 until counted
}

// Opened is a model an extension opened (extensions.Models.Open).
type Opened struct {
	Provider  model.Provider
	Name      string // the provider's model name
	MaxOutput int
}

// CountTokens counts m in the agent's model's encoding.
func (a *Agent) CountTokens(m *pipeline.Message) int { return CountTokens(a.Tokens, m) }

// Env is what the engine is given by the runtime that embeds it, the same
// for every agent.
type Env struct {
	Store store.Store
	Bus   *events.Bus
	// Hooks are the features that take part in every turn, called in
	// order.
	Hooks []Hook
	Place Placement
	Now   func() time.Time
	// Halt ends when the runtime's stop cuts its turns, with Cut its
	// cause; Bound gives a turn's context that ends with it.
	Halt  context.Context
	Cut   error
	Bound func(context.Context) (context.Context, func())
	// Tracer traces the turns, nil when tracing is off; ToolRunner runs
	// the tools (the tape, recording or replaying the session), nil to
	// run them directly.
	Tracer     Tracer
	ToolRunner ToolRunner
	// Secrets reads the provided secrets of agent's instance key.
	Secrets func(ctx context.Context, agent, key string) (map[string]string, error)
}

// Placement is what the engine asks of wherever its instances live: the
// fence of a commit of in, and what follows a commit that failed.
type Placement interface {
	Fence(in *Instance) uint64
	Failed(in *Instance, err error)
}

// A Hook is a feature of the runtime that takes part in every turn at
// fixed points; the turn loop calls each in Env.Hooks' order and knows
// none of them by name. A hook keeps its per-turn state in Turn.Ext.
type Hook interface {
	// Load runs when the instance is read from the store, before the
	// calls a stop of the process cut short get their results: it marks
	// the turns that wait for something outside the turn
	// (Instance.Paused), and returns the tool calls that wait, by call
	// ID, with what each waits for.
	Load(ctx context.Context, in *Instance) (waits map[string]string, err error)
	// Loaded runs once the loaded history is repaired.
	Loaded(ctx context.Context, in *Instance) error
	// Begin runs before the turn chain, with the turn's input.
	Begin(ts *Turn, in pipeline.InputEvent)
	// Resumed runs when the input of a resume turn, in, is stored,
	// before the turn's first step.
	Resumed(ctx context.Context, ts *Turn, t *pipeline.TurnContext, in pipeline.InputEvent) error
	// Stage adds to the instance's unsaved batch what must commit with
	// the step's tool results; Committed then says whether the commit
	// succeeded (err is nil), for the hook to finish or take it back. A
	// hook whose Stage was called, even if it failed, gets Committed.
	Stage(ts *Turn) error
	Committed(ts *Turn, err error)
	// Keep adds to keep the IDs of the messages a reduction of the
	// context must keep for the feature's sake.
	Keep(ts *Turn, keep map[string]bool) error
	// End runs after the turn chain and may change its outcome.
	End(ts *Turn, in pipeline.InputEvent, res *pipeline.TurnResult, err error) (*pipeline.TurnResult, error)
}

// ID names an instance: its agent and key.
type ID struct{ Agent, Key string }

// secrets are an instance's provided secrets, read from the store once
// per load (and again after a new one is provided), for the environment
// of its commands, model.Request.Secret and the redaction of its tool
// results. Only the turn holding the instance's slot uses them.
type secrets struct {
	loaded   bool
	values   map[string]string
	redactor *secret.Redactor // nil until loaded: masks nothing
}

// LoadSecrets reads the instance's secrets unless they are read already.
// The caller holds the instance's slot.
func (in *Instance) LoadSecrets(ctx context.Context) error {
	if in.secrets.loaded {
		return nil
	}
	s, err := in.agent.Env.Secrets(ctx, in.agent.Name, in.key)
	if err != nil {
		return err
	}
	in.secrets = secrets{loaded: true, values: s, redactor: secret.NewRedactor(s)}
	return nil
}

// SecretValues are the secrets LoadSecrets read, by name. The caller holds
// the instance's slot.
func (in *Instance) SecretValues() map[string]string { return in.secrets.values }

// Redact masks the instance's loaded secrets in s.
func (in *Instance) Redact(s string) string { return in.secrets.redactor.Redact(s) }

// DropSecrets makes the next use read the secrets again.
func (in *Instance) DropSecrets() { in.secrets = secrets{} }

// secret is model.Request.Secret for the instance's turns: a provided
// secret by name, read once per load. Only the turn holding the slot calls
// it.
func (ts *Turn) secret(name string) (string, bool) {
	if err := ts.Inst.LoadSecrets(ts.StoreCtx); err != nil {
		ts.Agent.Logger.Error("reading the instance's secrets failed", "instance", ts.Inst.key, "err", err)
		return "", false
	}
	v, ok := ts.Inst.secrets.values[name]
	return v, ok
}

// ToolsOf returns the tools a step of in offers. The caller holds the
// instance's slot.
func (a *Agent) ToolsOf(ctx context.Context, in *Instance) []pipeline.Tool {
	if a.StepTools == nil {
		return a.Tools
	}
	return a.StepTools(ctx, in)
}

// Secrets returns the instance's provided secrets, reading them unless
// they are read already. The caller holds the instance's slot.
func (in *Instance) Secrets(ctx context.Context) (map[string]string, error) {
	if err := in.LoadSecrets(ctx); err != nil {
		return nil, err
	}
	return in.secrets.values, nil
}

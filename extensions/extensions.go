package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// Extension is what an agent loads, native or WebAssembly. Register is called
// once per agent that lists it, with an [API] bound to that agent.
type Extension interface {
	Register(api *API) error
}

// Func adapts a function to [Extension].
type Func func(api *API) error

// Register calls f(api).
func (f Func) Register(api *API) error { return f(api) }

// Closer is an extension that holds resources; the runtime calls Close once
// at shutdown.
type Closer interface {
	Close() error
}

// Config is an extension's own settings from the agent's config.
type Config interface {
	// Decode decodes into v (a pointer to a struct), refusing unknown fields;
	// errors carry the line and column.
	Decode(v any) error
}

// Factory makes an extension from its settings, once per agent.
type Factory func(cfg Config) (Extension, error)

// Registry maps extension names to factories; an app builds the one it
// wants. The zero Registry is ready to use; it is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Factory{}} }

// Register adds a factory under name ([a-zA-Z0-9_.-]{1,64}), once.
func (r *Registry) Register(name string, f Factory) error {
	if err := store.ValidateName("extension name", name); err != nil {
		return err
	}
	if f == nil {
		return fmt.Errorf("extension %q: nil factory", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]Factory{}
	}
	if _, ok := r.m[name]; ok {
		return fmt.Errorf("extension %q is already registered", name)
	}
	r.m[name] = f
	return nil
}

// Lookup returns the factory registered under name.
func (r *Registry) Lookup(name string) (Factory, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	return f, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Merge adds every factory of other that r does not have yet.
func (r *Registry) Merge(other *Registry) {
	if other == nil || other == r {
		return
	}
	// Copy first: holding both locks at once would deadlock a.Merge(b)
	// against b.Merge(a).
	other.mu.RLock()
	add := maps.Clone(other.m)
	other.mu.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]Factory{}
	}
	for n, f := range add {
		if _, ok := r.m[n]; !ok {
			r.m[n] = f
		}
	}
}

// API is what an extension registers through, bound to one agent and one
// extension; safe for concurrent use once Register has returned.
type API struct {
	Name     string
	Agent    string
	Pipeline *Pipeline
	Tools    *Tools
	State    *State
	Events   *Events
	Logger   *slog.Logger
	Pending  *Pending
	Secrets  *Secrets
	// Workspace confines the agent's file tools; "" if none.
	Workspace string
	Models    *Models
	// AgentNames are the runtime's agents, in config order.
	AgentNames []string
	HTTP       *HTTP

	peer func(agent, extension string) (Extension, bool)
}

// Peer returns the extension another agent loaded under name, for built-ins
// that cooperate across agents; false if there is none or it is WebAssembly.
func (a *API) Peer(agent, name string) (Extension, bool) {
	if a.peer == nil {
		return nil, false
	}
	return a.peer(agent, name)
}

// Host is what the runtime provides to build an [API]; nil Pending,
// Secrets, Peer or OpenModel refuse every call.
type Host struct {
	Agent      string
	Builder    *pipeline.Builder
	Store      StateStore
	Bus        *events.Bus
	Logger     *slog.Logger
	AddTool    func(pipeline.Tool) error
	Priority   int
	OnError    pipeline.OnError
	Pending    PendingHost
	Secrets    SecretsHost
	Grants     []string
	Workspace  string
	Peer       func(agent, extension string) (Extension, bool)
	OpenModel  func(key string) (string, error)
	AgentNames []string
	HTTP       http.RoundTripper
}

// NewAPI returns the API of extension name on h, for the runtime and tests.
func NewAPI(name string, h Host) *API {
	logger := h.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("agent", h.Agent, "extension", name)
	evs := &Events{bus: h.Bus, agent: h.Agent, ext: name}
	return &API{
		Name:     name,
		Agent:    h.Agent,
		Pipeline: &Pipeline{b: h.Builder, owner: pipeline.Owner{Extension: name, OnError: h.OnError}, priority: h.Priority},
		Tools:    &Tools{add: h.AddTool, ext: name},
		State:    &State{store: h.Store, agent: h.Agent, ext: name},
		Events:   evs,
		Logger:   logger,
		Pending:  &Pending{host: h.Pending, ext: name},
		Secrets:  &Secrets{host: h.Secrets, agent: h.Agent, ext: name, grants: slices.Clone(h.Grants)},

		Workspace:  h.Workspace,
		Models:     &Models{open: h.OpenModel, ext: name},
		AgentNames: slices.Clone(h.AgentNames),
		peer:       h.Peer,
		HTTP:       &HTTP{transport: h.HTTP, events: evs},
	}
}

// Pipeline registers middleware of one extension.
type Pipeline struct {
	b        *pipeline.Builder
	owner    pipeline.Owner
	priority int
}

func (p *Pipeline) opts(opts []pipeline.LayerOption) []pipeline.LayerOption {
	// The extension's configured priority comes first, so that an explicit
	// pipeline.Priority from the code overrides it.
	return append([]pipeline.LayerOption{pipeline.Priority(p.priority)}, opts...)
}

// Turn registers a turn middleware.
func (p *Pipeline) Turn(fn pipeline.TurnFunc, opts ...pipeline.LayerOption) {
	p.b.Turn(p.owner, fn, p.opts(opts)...)
}

// Step registers a step middleware.
func (p *Pipeline) Step(fn pipeline.StepFunc, opts ...pipeline.LayerOption) {
	p.b.Step(p.owner, fn, p.opts(opts)...)
}

// ToolCall registers a toolCall middleware.
func (p *Pipeline) ToolCall(fn pipeline.ToolCallFunc, opts ...pipeline.LayerOption) {
	p.b.ToolCall(p.owner, fn, p.opts(opts)...)
}

// Models opens models an extension calls on its own, beside the agent's.
type Models struct {
	open func(key string) (string, error)
	ext  string
}

// Open opens the model under key of the extension's config (an agent's model
// fields) and returns its name for [pipeline.CompletionRequest]. Call it
// from Register.
func (m *Models) Open(key string) (string, error) {
	if m.open == nil {
		return "", fmt.Errorf("extension %q: open model: this runtime opens no models for extensions", m.ext)
	}
	return m.open(key)
}

// Tools registers the agent's tools.
type Tools struct {
	add func(pipeline.Tool) error
	ext string
}

// Register adds t to the agent's tools.
func (t *Tools) Register(tool pipeline.Tool) error {
	if t.add == nil {
		return fmt.Errorf("extension %q: tools cannot be registered here", t.ext)
	}
	if err := t.add(tool); err != nil {
		return fmt.Errorf("extension %q: register tool: %w", t.ext, err)
	}
	return nil
}

// maxStateSize bounds one extension's state per instance.
const maxStateSize = 1 << 20

// StateStore keeps one value per agent, instance and extension.
type StateStore interface {
	// GetState returns nil if there is none; SetState(nil) deletes.
	GetState(ctx context.Context, agent, instanceKey, extension string) ([]byte, error)
	SetState(ctx context.Context, agent, instanceKey, extension string, value []byte) error
}

// State is an extension's JSON state per instance, persisted in the store.
type State struct {
	store StateStore
	agent string
	ext   string
}

// Get returns the state of the instance, or nil if none was set.
func (s *State) Get(ctx context.Context, instanceKey string) (json.RawMessage, error) {
	b, err := s.store.GetState(ctx, s.agent, instanceKey, s.ext)
	if err != nil {
		return nil, fmt.Errorf("extension %q: get state: %w", s.ext, err)
	}
	return b, nil
}

// Set replaces the state: valid JSON of at most 1 MiB; nil deletes it.
func (s *State) Set(ctx context.Context, instanceKey string, v json.RawMessage) error {
	if v != nil {
		if len(v) > maxStateSize {
			return fmt.Errorf("extension %q: set state: %d bytes is over the limit of %d", s.ext, len(v), maxStateSize)
		}
		if !json.Valid(v) || !utf8.Valid(v) {
			return fmt.Errorf("extension %q: set state: value is not valid JSON", s.ext)
		}
	}
	if err := s.store.SetState(ctx, s.agent, instanceKey, s.ext, v); err != nil {
		return fmt.Errorf("extension %q: set state: %w", s.ext, err)
	}
	return nil
}

// Load decodes the state into v and reports whether there was any.
func (s *State) Load(ctx context.Context, instanceKey string, v any) (bool, error) {
	b, err := s.Get(ctx, instanceKey)
	if err != nil || b == nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return true, fmt.Errorf("extension %q: decode state: %w", s.ext, err)
	}
	return true, nil
}

// Save encodes v as the state of the instance.
func (s *State) Save(ctx context.Context, instanceKey string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("extension %q: encode state: %w", s.ext, err)
	}
	return s.Set(ctx, instanceKey, b)
}

// Events publishes and subscribes for one extension, as Source.
type Events struct {
	bus   *events.Bus
	agent string
	ext   string
	mu    sync.Mutex
	subs  []func()
}

// errNoBus is returned when the runtime gave the extension no event bus.
var errNoBus = errors.New("no event bus")

// Publish publishes data under topic for instance (may be empty).
func (e *Events) Publish(topic, instance string, data any) {
	if e.bus == nil {
		return
	}
	e.bus.Publish(events.Event{Topic: topic, Agent: e.agent, Instance: instance, Source: e.ext, Data: data})
}

// PublishTurn is Publish with the event's TurnID.
func (e *Events) PublishTurn(topic, instance, turnID string, data any) {
	if e.bus == nil {
		return
	}
	e.bus.Publish(events.Event{Topic: topic, Agent: e.agent, Instance: instance, TurnID: turnID, Source: e.ext, Data: data})
}

// Subscribe calls fn for events matching pattern ([events.Bus.Subscribe])
// until shutdown or unsubscribe.
func (e *Events) Subscribe(pattern string, fn events.Handler) (unsubscribe func(), err error) {
	if e.bus == nil {
		return nil, fmt.Errorf("extension %q: subscribe: %w", e.ext, errNoBus)
	}
	un := e.bus.Subscribe(pattern, fn)
	e.mu.Lock()
	e.subs = append(e.subs, un)
	e.mu.Unlock()
	return un, nil
}

// Close ends the extension's subscriptions; the runtime calls it.
func (e *Events) Close() {
	e.mu.Lock()
	subs := slices.Clone(e.subs)
	e.subs = nil
	e.mu.Unlock()
	for _, un := range subs {
		un()
	}
}

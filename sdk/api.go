package ganglion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
)

// TurnFunc is a turn middleware. It acts before and after [Turn.Next], may
// change what Next sees, or answer without calling it ([Turn.SetResult]).
// Returning an error fails the hook (see the package doc's # Errors).
type TurnFunc func(t *Turn) error

// StepFunc is a step middleware.
type StepFunc func(s *Step) error

// ToolCallFunc is a toolCall middleware: it wraps every tool call of the
// agent, whoever implements the tool.
type ToolCallFunc func(c *ToolCall) error

// ToolFunc runs a tool the extension registered. Returning an error makes
// an error result the model reads, `tool "name" failed: <the error>`, as
// for a native tool, and the turn goes on.
type ToolFunc func(c *ToolCall) (ToolResult, error)

// EventFunc handles an event. The host logs its error; nothing else sees it.
type EventFunc func(e *Event) error

// API is what an extension registers through, mirroring the host's
// extensions.API: middleware, tools, event subscriptions and a logger.
// [Register]'s setup function receives it; registrations are allowed only
// while setup runs.
type API struct {
	// Pipeline registers middleware.
	Pipeline *Pipeline
	// Tools registers tools the agent offers its model.
	Tools *Tools
	// Events subscribes to the runtime's event bus and publishes on it.
	Events *Events
	// Logger writes to the host's logger, which adds the agent and the
	// extension's name. Usable anywhere, also outside hooks.
	Logger *slog.Logger
	// Pending registers the kinds of pending item the extension opens to
	// pause its turn for a human.
	Pending *Pending

	r *registry
}

// Pipeline registers middleware. Lower priority runs outer; without
// [Priority] a layer takes the extension's configured priority.
type Pipeline struct{ r *registry }

// Turn registers a turn middleware.
func (p *Pipeline) Turn(fn TurnFunc, opts ...LayerOption) {
	p.r.add(handler{kind: kindTurn, turn: fn}, fn == nil, opts)
}

// Step registers a step middleware.
func (p *Pipeline) Step(fn StepFunc, opts ...LayerOption) {
	p.r.add(handler{kind: kindStep, step: fn}, fn == nil, opts)
}

// ToolCall registers a toolCall middleware.
func (p *Pipeline) ToolCall(fn ToolCallFunc, opts ...LayerOption) {
	p.r.add(handler{kind: kindToolCall, call: fn}, fn == nil, opts)
}

// LayerOption configures a middleware layer. Create one with [Priority].
type LayerOption interface {
	apply(*layerSpec)
}

type layerSpec struct {
	Priority *int `json:"priority,omitempty"`
}

type priorityOption int

func (p priorityOption) apply(s *layerSpec) { n := int(p); s.Priority = &n }

// Priority orders the layer among all the agent's middleware (lower runs
// outer), overriding the extension's configured priority.
func Priority(n int) LayerOption { return priorityOption(n) }

// Tools registers tools.
type Tools struct{ r *registry }

// Register registers a tool implemented by fn. The tool's name must be
// unique within the extension.
func (t *Tools) Register(spec ToolSpec, fn ToolFunc) error {
	err := t.check(spec, fn)
	if err != nil {
		err = fmt.Errorf("register tool %q: %w", spec.Name, err)
		t.r.fail(err)
		return err
	}
	t.r.add(handler{kind: kindTool, tool: fn, spec: spec}, false, nil)
	return nil
}

func (t *Tools) check(spec ToolSpec, fn ToolFunc) error {
	if err := validToolName(spec.Name); err != nil {
		return err
	}
	if fn == nil {
		return errors.New("nil ToolFunc")
	}
	if len(spec.Parameters) > 0 && !json.Valid(spec.Parameters) {
		return errors.New("parameters is not valid JSON")
	}
	if t.r.has(kindTool, spec.Name) {
		return errors.New("already registered")
	}
	return nil
}

// Events subscribes to the runtime's event bus and publishes on it.
type Events struct{ r *registry }

// Subscribe calls fn for every event whose topic matches pattern ("tool.*").
// Events are delivered synchronously, in an instance of the module of their
// own.
func (e *Events) Subscribe(pattern string, fn EventFunc) error {
	var err error
	switch {
	case pattern == "":
		err = errors.New("subscribe: empty pattern")
	case fn == nil:
		err = fmt.Errorf("subscribe %q: nil EventFunc", pattern)
	case e.r.has(kindEvent, pattern):
		err = fmt.Errorf("subscribe %q: already subscribed", pattern)
	}
	if err != nil {
		e.r.fail(err)
		return err
	}
	e.r.add(handler{kind: kindEvent, event: fn, pattern: pattern}, false, nil)
	return nil
}

// Publish publishes data, encoded as JSON, under topic, for the instance
// of c. The manifest's Publish patterns must match the topic.
func (e *Events) Publish(c Context, topic string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("ganglion: publish %q: %w", topic, err)
	}
	if code := host.publish(c.handle(), topic, b); code < 0 {
		return hostError("publish", code)
	}
	return nil
}

// handler is one registration: a hook of some kind and what it runs.
type handler struct {
	kind    int32
	turn    TurnFunc
	step    StepFunc
	call    ToolCallFunc
	tool    ToolFunc
	event   EventFunc
	spec    ToolSpec // a tool's
	pattern string   // a subscription's
	layer   layerSpec
	pending *PendingKind
	reply   ReplyFunc
}

// registry collects the registrations of setup.
type registry struct {
	pending []handler
	errs    []error
	sealed  bool
}

func (r *registry) add(h handler, nilFunc bool, opts []LayerOption) {
	if r.sealed {
		panic("ganglion: " + kindName(h.kind) + " registered after setup returned: register in the setup function given to Register")
	}
	if nilFunc {
		r.fail(fmt.Errorf("register %s middleware: nil function", kindName(h.kind)))
		return
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&h.layer)
		}
	}
	r.pending = append(r.pending, h)
}

func (r *registry) fail(err error) {
	if r.sealed {
		panic("ganglion: registration after setup returned: " + err.Error())
	}
	r.errs = append(r.errs, err)
}

func (r *registry) has(kind int32, name string) bool {
	return slices.ContainsFunc(r.pending, func(h handler) bool {
		return h.kind == kind && (h.spec.Name == name && kind == kindTool || h.pattern == name && kind == kindEvent ||
			kind == kindPending && h.pending.Name == name)
	})
}

// The extension this module is: what Register recorded, and the hooks init
// registered, by the IDs the host gave them.
var ext struct {
	manifest *Manifest
	setup    func(api *API) error
	hooks    []*handler // by the ID the host gave; IDs are small
}

// Register declares the extension: its manifest, and the setup function
// that registers its middleware, tools and subscriptions. Call it once,
// from an init function of the module's main package (a c-shared module
// does not run main):
//
//	func init() {
//		ganglion.Register(ganglion.Manifest{Name: "guard", Version: "1.0.0"}, setup)
//	}
//
// setup runs when the host instantiates the module, once per instance,
// and must register the same things every time. The manifest sent to the
// host lists what setup registered (hook kinds, tools, subscriptions) on
// top of m. Register panics if called twice or with a nil setup.
func Register(m Manifest, setup func(api *API) error) {
	if setup == nil {
		panic("ganglion: Register with a nil setup function")
	}
	if ext.setup != nil {
		panic("ganglion: Register called twice: a module is one extension")
	}
	ext.manifest, ext.setup = &m, setup
}

// Config decodes the extension's config: section from the agent's config
// into v (JSON rules: YAML maps become objects). It reports false when the
// config gives none. An unknown key, or a value v cannot hold, is a
// [*ConfigError] that names its place ("$.rules[1].name"): returned from
// setup, the host reports it with the config file's line and column. Call
// it from setup, to fail the load on a bad config:
//
//	var cfg struct{ Pattern string `json:"pattern"` }
//	if _, err := api.Config(&cfg); err != nil {
//		return err
//	}
func (a *API) Config(v any) (bool, error) {
	b, err := read("field CONFIG", func(b []byte) int32 { return host.field(0, fieldConfig, b) })
	if err != nil {
		return false, err
	}
	if string(b) == "null" {
		return false, nil
	}
	// Unknown settings are refused, as a native extension's Decode does,
	// and a problem is reported where it is: a *ConfigError.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if p := configProblem(b, v); p != nil {
			return true, p
		}
		return true, fmt.Errorf("config: %w", err)
	}
	return true, nil
}

// newAPI returns the API setup registers through.
func newAPI(r *registry) *API {
	return &API{Pipeline: &Pipeline{r}, Tools: &Tools{r}, Events: &Events{r}, Pending: &Pending{r}, Logger: Logger(), r: r}
}

// runInit is ganglion_init: declare the manifest, run setup, register
// what it registered.
func runInit() (code int32) {
	defer func() {
		if p := recover(); p != nil {
			code = hookPanicked(0, p)
		}
	}()
	if err := doInit(); err != nil {
		host.setError(err.Error())
		return 1
	}
	return 0
}

func doInit() error {
	if ext.setup == nil {
		return errors.New("the module calls no ganglion.Register: call it from an init function of package main (a c-shared module does not run main)")
	}
	r := &registry{}
	err := ext.setup(newAPI(r))
	r.sealed = true
	if err != nil {
		// Say what the module is all the same, without what setup
		// registered, so that a host can still show it (ganglion ext
		// inspect of a guest given no config).
		if mb, merr := json.Marshal(manifestFor(*ext.manifest, nil)); merr == nil {
			host.manifest(mb)
		}
		return fmt.Errorf("setup: %w", err)
	}
	if err := errors.Join(r.errs...); err != nil {
		return err
	}
	mb, err := json.Marshal(manifestFor(*ext.manifest, r.pending))
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if code := host.manifest(mb); code < 0 {
		return hostError("manifest", code)
	}
	ext.hooks = ext.hooks[:0]
	for i := range r.pending {
		h := &r.pending[i]
		var spec any = h.layer
		switch h.kind {
		case kindTool:
			spec = h.spec
		case kindEvent:
			spec = map[string]string{"pattern": h.pattern}
		case kindPending:
			spec = pendingSpec{Name: h.pending.Name, Resume: h.pending.Resume != nil}
		}
		sb, err := json.Marshal(spec)
		if err != nil {
			return fmt.Errorf("register %s: %w", kindName(h.kind), err)
		}
		id := host.register(h.kind, sb)
		if id < 0 {
			return hostError("register "+kindName(h.kind), id)
		}
		for int(id) >= len(ext.hooks) {
			ext.hooks = append(ext.hooks, nil)
		}
		ext.hooks[id] = h
	}
	return nil
}

// manifestFor is m with what the registrations need added.
func manifestFor(m Manifest, regs []handler) manifestJSON {
	j := manifestJSON{Name: m.Name, Version: m.Version, ABI: abiVersion, Hooks: []string{}, Tools: []string{},
		Topics: topicsJSON{Publish: slices.Clone(m.Publish), Subscribe: []string{}}, Secrets: slices.Clone(m.Secrets), State: m.State,
		Agents: slices.Clone(m.Agents), Models: m.Models, HTTP: slices.Clone(m.HTTP)}
	if j.Topics.Publish == nil {
		j.Topics.Publish = []string{}
	}
	if j.Secrets == nil {
		j.Secrets = []string{}
	}
	if len(m.Files.Read)+len(m.Files.Write) > 0 {
		j.Files = &filesJSON{Read: slices.Clone(m.Files.Read), Write: slices.Clone(m.Files.Write)}
	}
	addOnce := func(s []string, v string) []string {
		if slices.Contains(s, v) {
			return s
		}
		return append(s, v)
	}
	for _, h := range regs {
		switch h.kind {
		case kindTurn, kindStep, kindToolCall, kindReply:
			j.Hooks = addOnce(j.Hooks, kindName(h.kind))
		case kindTool:
			j.Tools = addOnce(j.Tools, h.spec.Name)
		case kindEvent:
			j.Topics.Subscribe = addOnce(j.Topics.Subscribe, h.pattern)
		case kindPending:
			j.Pending = addOnce(j.Pending, h.pending.Name)
		}
	}
	return j
}

// runHook runs the hook id of kind for the context handle h: the body of
// the ganglion_tool and ganglion_event exports, and a test's way into any
// hook. The three middleware kinds have exports of their own that run
// their hook themselves (turnHook, stepHook, toolCallHook): in a Go guest
// every function call costs a prologue of its own, and a middleware hook
// runs several times a turn.
func runHook(kind, h, id int32) (code int32) {
	switch kind {
	case kindTurn:
		return turnHook(h, id)
	case kindStep:
		return stepHook(h, id)
	case kindToolCall:
		return toolCallHook(h, id)
	}
	hd := hookOf(kind, id)
	if hd == nil {
		return noHook(kind, id)
	}
	defer func() {
		if p := recover(); p != nil {
			code = hookPanicked(kind, p)
		}
	}()
	var err error
	if kind == kindTool {
		c := toolCalls.next()
		c.h = h
		err = runTool(hd.tool, c)
	} else if kind == kindPending {
		err = runPending(hd.pending, h)
	} else if kind == kindReply {
		r := replies.next()
		r.h = h
		err = hd.reply(r)
	} else {
		e := events.next()
		e.h = h
		err = hd.event(e)
	}
	if err != nil {
		return hookFailed(err)
	}
	return 0
}

// The middleware exports. Each call has a context of its own, so that a
// context kept past its call is refused by the host (ErrStale) rather
// than reading another call's. They come from slabs: a heap allocation
// per call was half of a hook's cost in a Go guest. The deferred closure
// calls recover itself (deferring a call with arguments would go through
// a wrapper, one more Go call per hook), and only when the hook did not
// return: recover is a call into Go's runtime. The //go:wasmexport directives
// are on these functions themselves (a build for another platform ignores
// them), so that the export runs the hook without one more call.

// turnHook is ganglion_turn: it runs turn hook id for context handle h.
//
//go:wasmexport ganglion_turn
func turnHook(h, id int32) (code int32) {
	hd := hookOf(kindTurn, id)
	if hd == nil {
		return noHook(kindTurn, id)
	}
	returned := false
	defer func() {
		if !returned {
			delete(nextFailures, h)
			code = hookPanicked(kindTurn, recover())
		}
	}()
	t := turns.next()
	t.h = h
	code = result(h, hd.turn(t))
	returned = true
	return code
}

// stepHook is ganglion_step: it runs step hook id for context handle h.
//
//go:wasmexport ganglion_step
func stepHook(h, id int32) (code int32) {
	hd := hookOf(kindStep, id)
	if hd == nil {
		return noHook(kindStep, id)
	}
	returned := false
	defer func() {
		if !returned {
			delete(nextFailures, h)
			code = hookPanicked(kindStep, recover())
		}
	}()
	s := steps.next()
	s.h = h
	code = result(h, hd.step(s))
	returned = true
	return code
}

// toolCallHook is ganglion_tool_call: it runs toolCall hook id for
// context handle h.
//
//go:wasmexport ganglion_tool_call
func toolCallHook(h, id int32) (code int32) {
	hd := hookOf(kindToolCall, id)
	if hd == nil {
		return noHook(kindToolCall, id)
	}
	returned := false
	defer func() {
		if !returned {
			delete(nextFailures, h)
			code = hookPanicked(kindToolCall, recover())
		}
	}()
	c := toolCalls.next()
	c.h = h
	code = result(h, hd.call(c))
	returned = true
	return code
}

// hookOf returns hook id if it is of kind, else nil.
func hookOf(kind, id int32) *handler {
	if id >= 0 && int(id) < len(ext.hooks) {
		if hd := ext.hooks[id]; hd != nil && hd.kind == kind {
			return hd
		}
	}
	return nil
}

// noHook fails a call of a hook that setup did not register.
func noHook(kind, id int32) int32 {
	host.setError(fmt.Sprintf("ganglion: no %s hook with id %d", kindName(kind), id))
	return 1
}

// hookFailed is a hook's failure err: its text for set_error, and 1.
func hookFailed(err error) int32 {
	host.setError(err.Error())
	return 1
}

// slab hands out new values of T, allocated 256 at a time: one allocation
// for 256 hook calls. A value is never handed out twice, so a context kept
// past its call keeps its own (stale) handle. next is inlined into each
// export, so it only bumps an index and leaves the allocation to a call of
// its own (refill): that made a hook about 15 ns faster than reslicing
// free with the allocation inlined.
type slab[T any] struct {
	free []T
	n    int // values of free handed out
}

func (s *slab[T]) next() *T {
	if s.n == len(s.free) {
		s.refill()
	}
	v := &s.free[s.n]
	s.n++
	return v
}

// refill starts a new slab. It is never inlined: see slab.
//
//go:noinline
func (s *slab[T]) refill() { s.free, s.n = make([]T, 256), 0 }

// The slabs of the hooks' contexts. A guest runs one call at a time, so
// they need no lock.
var (
	turns     slab[Turn]
	steps     slab[Step]
	toolCalls slab[ToolCall]
	events    slab[Event]
)

// runTool runs a tool and sets its result; an error becomes an error
// result.
func runTool(fn ToolFunc, c *ToolCall) error {
	res, err := fn(c)
	if err != nil {
		// The hook fails, and the runtime makes the error the model's
		// result, as for a native tool: `tool "name" failed: <err>`.
		return err
	}
	return c.SetResult(res)
}

// hookPanicked turns p, a panic of the running hook (kind 0: of
// ganglion_init), into its result: the panic's value for set_error, the
// stack to the host's log, and 2 (the hook panicked: the host handles it
// as a native middleware's panic). A context accessor the host refused
// panics with an *Error: a failure (1), not a panic. p is nil for a hook
// that neither returned nor panicked (runtime.Goexit): a panic too.
func hookPanicked(kind int32, p any) int32 {
	if err, ok := p.(*Error); ok {
		host.setError(err.Error())
		return 1
	}
	what := "ganglion_init"
	if kind != 0 {
		what = kindName(kind) + " hook"
	}
	host.log(int32(slog.LevelError), fmt.Sprintf("panic in %s: %v\n%s", what, p, debug.Stack()))
	if kind == 0 {
		host.setError(fmt.Sprintf("panic in %s: %v", what, p))
		return 1
	}
	host.setError(fmt.Sprint(p))
	return 2
}

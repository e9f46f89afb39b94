package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/standard"
	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/delegation"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/pause"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/internal/telemetry"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// defaultDataDir is where the data lives when neither an option nor the
// config says otherwise: relative to the config file's directory (a config
// read from a file always says), else to the working directory.
const defaultDataDir = ".ganglion/data"

// Sentinel errors that callers branch on.
var (
	// ErrClosed is returned by the calls that run turns or act on pending
	// items once the runtime stops, and for a turn a stop cut.
	ErrClosed = errors.New("runtime: closed")
	// ErrUnknownAgent is returned for an agent name the config does not define.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrAgentUnavailable is returned for an agent that failed to load
	// ([WithPartialLoad]).
	ErrAgentUnavailable = errors.New("agent unavailable")
)

// Runtime hosts agents and runs their turns. It is safe for concurrent use.
type Runtime struct {
	ownsStore bool // Close closes it
	logger    *slog.Logger
	agents    roster          // the agents and teams; fixed once New returns
	keyring   *secret.Keyring // seals provided secrets
	kit       toolkit         // where the agents' tools and extensions come from
	obs       observers       // the tape and telemetry, if on
	place     seam.Placement  // where instances live: here, or a cluster's process

	// env is what the turn engine is given: the store, the bus, the
	// clock, the context a stop ends, the hooks and the seams.
	env    engine.Env
	cache  *engine.Cache[instanceID, *instance] // the instances in memory
	tasks  *delegation.Tasks                    // delegation tasks and agent calls (task.go)
	pauses *pause.Pauses                        // the pending items of paused turns (pending.go)
	life   life                                 // the turns running, until a stop (stop.go)
}

// toolkit is where the agents' tools and extensions come from, besides
// the built-ins and the options: the workspace, the WASM host, the tool
// sources.
type toolkit struct {
	workspace *tool.Workspace   // nil when no agent uses the workspace tools
	wasm      wasmHost          // loads the WASM extensions
	sources   []seam.ToolSource // offer tools besides the agents' own: MCP servers
}

// observers are what watch the runtime besides the bus's subscribers:
// they record nothing when off.
type observers struct {
	tape   tape.Tape    // records or replays the session, if set
	untape func()       // ends the tape's subscription to the bus
	tel    *telemetry.T // spans and metrics; nil when both are off
}

// New builds a runtime from a config ([WithConfig], [WithConfigFile]),
// opening the store, the model providers and every agent's extensions, and
// finishes what a stopped process left undone ([WithoutRecovery]).
func New(ctx context.Context, opts ...Option) (*Runtime, error) {
	o := &options{exts: standard.Registry(), providers: builtinProviders(), maxInstances: defaultInstanceCache}
	for _, opt := range opts {
		opt.apply(o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.tape != nil {
		o.now = o.tape.Clock(o.now)
	}
	if o.bus == nil {
		o.bus = events.NewBus(events.WithLogger(o.logger), events.WithClock(o.now))
	}
	cfg := o.cfg
	if cfg == nil {
		if o.cfgPath == "" {
			return nil, errors.New("runtime: no config: use WithConfig or WithConfigFile")
		}
		var err error
		if cfg, err = config.Load(o.cfgPath); err != nil {
			return nil, err
		}
	}
	toolNames := append(append([]string{}, tool.WorkspaceToolNames...), delegation.ToolNames...)
	for _, t := range o.tools {
		toolNames = append(toolNames, t.Name)
	}
	slices.Sort(toolNames)
	known := config.Known{
		Tool:           func(n string) bool { _, ok := slices.BinarySearch(toolNames, n); return ok },
		ToolNames:      func() []string { return toolNames },
		Extension:      func(n string) bool { _, ok := o.exts.Lookup(n); return ok },
		ExtensionNames: o.exts.Names,
		Provider: func(n string) bool {
			_, ok := o.providers[n]
			return ok || o.model != nil
		},
		ProviderNames:  func() []string { return slices.Sorted(maps.Keys(o.providers)) },
		ProviderImport: model.ImportPath,
		ModelSupplied:  o.model != nil,
		Import: func(key string) string {
			if key == "telemetry" {
				return telemetry.Unlinked(telemetryOptions(o, cfg))
			}
			return linked(key)
		},
	}
	if err := cfg.Validate(known); err != nil {
		return nil, err
	}

	r := &Runtime{env: engine.Env{Bus: o.bus, Now: o.now}, logger: o.logger, obs: observers{tape: o.tape}, agents: newRoster(cfg)}
	r.cache = engine.NewCache(o.maxInstances, r.evicted)
	r.place = here{r} // a cluster replaces it (openCluster)
	ok := false
	defer func() {
		if !ok {
			r.release() // what New opened before it failed
		}
	}()
	if r.obs.tape != nil {
		r.obs.untape = r.env.Bus.Subscribe("*", func(ev events.Event) {
			if ev.Process == "" { // another process's events are its session's
				r.obs.tape.Event(ev)
			}
		})
	}
	topts := telemetryOptions(o, cfg)
	topts.Bus, topts.Logger = r.env.Bus, r.logger
	var err error
	if r.obs.tel, err = telemetry.Open(ctx, topts); err != nil {
		return nil, err
	}
	r.env.Halt, r.life.cut = context.WithCancelCause(context.Background())
	if r.tasks, err = r.newTasks(o, cfg, dataDirOf(o, cfg)); err != nil {
		return nil, err
	}
	if cfg.Cluster != nil {
		if err := r.openCluster(ctx, o, cfg); err != nil {
			return nil, err
		}
	}
	dataDir := dataDirOf(o, cfg)
	if err := r.openStore(o, cfg, dataDir); err != nil {
		return nil, err
	}
	r.kit.wasm.cacheDir = o.wasmCache
	if r.kit.wasm.cacheDir == "" && dataDir != "" {
		r.kit.wasm.cacheDir = filepath.Join(dataDir, "wasm-cache")
	}
	if err := r.openKeyring(o, dataDir); err != nil {
		return nil, err
	}
	r.pauses = r.newPauses()
	if r.obs.tel != nil {
		if err := r.obs.tel.ObservePending(r.openPending); err != nil {
			return nil, fmt.Errorf("runtime: telemetry: %w", err)
		}
	}
	toolReg, err := r.openTools(o, cfg, dataDir)
	if err != nil {
		return nil, err
	}
	if len(cfg.MCPServers) > 0 {
		src, err := seam.MCP(ctx, seam.Env{Config: cfg, Logger: r.logger, Tape: r.obs.tape})
		if err != nil {
			return nil, fmt.Errorf("runtime: MCP servers: %w", err)
		}
		r.kit.sources = append(r.kit.sources, src)
	}
	r.env.Hooks, r.env.Place, r.env.Cut, r.env.Bound, r.env.Secrets = []engine.Hook{r.pauses, r.tasks}, enginePlace{r.place}, errCut, r.bound, r.secrets
	r.env.Tracer, r.env.ToolRunner = r.obs.tel.Tracer(), r.obs.tape
	providers := map[string]model.Provider{}
	for _, ac := range cfg.Agents {
		a, err := r.buildAgent(ctx, o, ac, toolReg, providers)
		if err != nil {
			if !o.partialLoad {
				return nil, err
			}
			a = r.unavailableAgent(ac, err)
		}
		r.agents.byName[a.Name] = a
	}
	if err := r.place.Start(); err != nil {
		return nil, err
	}
	ok = true
	if !o.noRecovery {
		r.recover(ctx, true)
	}
	if !o.noExpiryTimer {
		r.pauses.Start()
	}
	return r, nil
}

// openCluster makes the runtime a process of the cluster cfg's cluster
// block names: its placement, and the store the processes share unless o
// gives one.
func (r *Runtime) openCluster(ctx context.Context, o *options, cfg *config.File) error {
	p, st, err := seam.Cluster(ctx, seam.ClusterEnv{
		Env:     seam.Env{Config: cfg, Logger: r.logger, Tape: r.obs.tape},
		Cluster: cfg.Cluster, Local: local{r}, Bus: r.env.Bus,
		Halt: r.env.Halt, Tasks: r.tasks.Bg(), CutGrace: cutGrace, CallTimeout: callTimeout(cfg),
		Store: o.store, Memory: o.memory,
		Keyed: o.secretKey != nil || o.secretKeyFile != "" || os.Getenv(SecretKeyEnv) != "", KeyEnv: SecretKeyEnv,
		Errors: seam.Errors{Closed: ErrClosed, Cycle: ErrCycle, NoTask: ErrNoTask, Cut: errCut, Kinds: errorKinds},
	})
	if err != nil {
		return err
	}
	r.place = p
	if st != nil {
		r.env.Store, r.ownsStore = st, true
	}
	return nil
}

// recover finishes what a stopped process left undone, and logs what
// fails: see [Runtime.Recover].
func (r *Runtime) recover(ctx context.Context, tasks bool) error {
	var errs []error
	// Pending items outlive processes: finish the resumes a stopped process
	// left undone, and handle the deadlines that passed meanwhile.
	if err := r.pauses.Recover(ctx); err != nil {
		errs = append(errs, err)
	}
	// Delegations outlive processes too: continue the task turns that did
	// not finish, and hand over the reports that were not.
	if tasks {
		r.tasks.Kick(ctx, "", "") // every stored task
	}
	return errors.Join(errs...)
}

// Recover finishes what a stopped process left undone, as New does, and
// also marks the interrupted tool calls of every stored instance now. Task
// turns continue in the background ([Runtime.WaitTasks]). It runs nothing
// twice, and returns what failed.
func (r *Runtime) Recover(ctx context.Context) error {
	if !r.life.gate.Enter() {
		return ErrClosed
	}
	defer r.life.gate.Leave()
	var errs []error
	for _, name := range r.agents.names {
		keys, err := r.env.Store.Instances(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range keys {
			_, _, done, err := r.holdInstance(ctx, "instance "+strconv.Quote(k), name, k)
			if errors.Is(err, errMoved) {
				continue // another process owns it, and recovers it
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			done()
		}
	}
	return errors.Join(append(errs, r.recover(ctx, true))...)
}

// dataDirOf is the directory of the store on disk, "" when the store is
// not on disk: given (WithStore), in memory, or a cluster's.
func dataDirOf(o *options, cfg *config.File) string {
	if o.store != nil || o.memory || cfg.Cluster != nil {
		return ""
	}
	for _, dir := range []string{o.dataDir, cfg.Data} {
		if dir != "" {
			return dir
		}
	}
	return defaultDataDir
}

// openStore opens the store: the one given, the cluster's, the memory
// store, or badger in dir.
func (r *Runtime) openStore(o *options, cfg *config.File, dir string) error {
	switch {
	case o.store != nil:
		r.env.Store = o.store
		return nil
	case r.env.Store != nil: // the cluster's
		return nil
	case o.memory:
		r.env.Store, r.ownsStore = store.NewMemory(), true
		return nil
	}
	opts := []badger.Option{badger.WithLogger(r.logger), badger.WithSyncWrites(o.syncWrites)}
	memtable, blockCache := cfg.Store.Sizes()
	if memtable > 0 {
		opts = append(opts, badger.WithMemTableSize(memtable))
	}
	if blockCache > 0 {
		opts = append(opts, badger.WithBlockCacheSize(blockCache))
	}
	st, err := badger.Open(dir, append(opts, o.storeOpts...)...)
	if err != nil {
		return err
	}
	r.env.Store, r.ownsStore = st, true
	return nil
}

// openTools opens the workspace and returns the registry of every tool an
// agent may list: the workspace tools and the tools given with [WithTool].
func (r *Runtime) openTools(o *options, cfg *config.File, dataDir string) (*tool.Registry, error) {
	reg := tool.NewRegistry()
	dir := cfg.Workspace
	// Touch the workspace (creating it if needed) only if an agent uses it.
	if !usesWorkspace(cfg) {
		dir = ""
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		wopts := []tool.WorkspaceOption{tool.WithCallEnv(r.callEnv)}
		if dataDir != "" {
			// Beside the store, not in it, as the key file is.
			wopts = append(wopts, tool.WithProcessDir(filepath.Clean(dataDir)+".procs"))
		}
		ws, err := tool.OpenWorkspace(dir, wopts...)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		r.kit.workspace = ws
		for _, t := range ws.Tools() {
			if err := reg.Add(t); err != nil {
				return nil, err
			}
		}
	} else {
		for _, n := range tool.WorkspaceToolNames {
			err := reg.Add(pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: n, Description: "workspace tool (no workspace configured)", Category: pipeline.CategoryOther},
				Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
					return nil, errors.New("no workspace is configured (set workspace: in the config)")
				}})
			if err != nil {
				return nil, err
			}
		}
	}
	for _, t := range r.tasks.Tools() {
		if err := reg.Add(t); err != nil {
			return nil, err
		}
	}
	for _, t := range o.tools {
		if err := reg.Add(t); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
	}
	return reg, nil
}

// usesWorkspace reports whether an agent uses the workspace: a workspace
// tool, or an extension granted files of it.
func usesWorkspace(cfg *config.File) bool {
	for _, a := range cfg.Agents {
		for _, t := range a.Tools {
			if slices.Contains(tool.WorkspaceToolNames, t) {
				return true
			}
		}
		for _, e := range a.Extensions {
			if len(e.Files.Read)+len(e.Files.Write) > 0 {
				return true
			}
		}
	}
	return false
}

// Agents returns the agents' names in config order, unavailable ones too.
func (r *Runtime) Agents() []string { return slices.Clone(r.agents.names) }

// Events returns the event bus the runtime publishes on.
func (r *Runtime) Events() *events.Bus { return r.env.Bus }

// Workspace returns the directory the built-in tools are confined to, or "".
func (r *Runtime) Workspace() string {
	if r.kit.workspace == nil {
		return ""
	}
	return r.kit.workspace.Dir()
}

// UserMessage returns the input event of a user's message.
func UserMessage(text string) pipeline.InputEvent {
	return pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: text}
}

func (r *Runtime) agent(name string) (*agent, error) {
	a, ok := r.agents.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (agents: %s)", ErrUnknownAgent, name, strings.Join(r.agents.names, ", "))
	}
	return a, nil
}

// runnable returns the agent called name if it can run turns: it is
// defined and loaded ([WithPartialLoad]).
func (r *Runtime) runnable(name string) (*agent, error) {
	a, err := r.agent(name)
	if err == nil {
		err = a.available()
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// instance returns the instance, loaded or not, and holds it in the cache
// until [Runtime.unhold].
func (r *Runtime) instance(a *agent, key string) *instance {
	return r.cache.Hold(instanceID{Agent: a.Name, Key: key}, func() *instance {
		in := engine.NewInstance(a.Agent, key, &delegation.Turn{})
		r.place.Adopt(in)
		return in
	})
}

// unhold lets the cache drop the instance again once nobody uses it.
func (r *Runtime) unhold(in *instance) { r.cache.Unhold(in) }

// evicted tells the features that keep something per instance that in
// left memory; the cache's lock is held.
func (r *Runtime) evicted(in *instance) {
	for _, src := range r.kit.sources {
		src.Evicted(in)
	}
	r.place.Evicted(in)
}

// Send runs one turn of agent in instance instanceKey (created on first
// use), after the instance's earlier turns, and returns its result.
// Cancelling ctx aborts the turn: finish reason aborted, the error wrapping
// ctx's. A failed turn returns finish reason error and the error, naming
// the agent, instance and turn.
//
// Before anything runs, Send refuses with a nil result an invalid key
// ([store.ErrInvalidName]), metadata that sets a reserved key
// ([pipeline.ErrReservedMetadata]), an unknown or unavailable agent
// ([ErrUnknownAgent], [ErrAgentUnavailable]) and a closed runtime
// ([ErrClosed]); a paused instance with finish reason paused and
// [ErrPaused]. Runtime input goes to [Runtime.Deliver].
func (r *Runtime) Send(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	if err := checkInput(agentName, instanceKey, in.Metadata); err != nil {
		return nil, err
	}
	if r.obs.tape != nil {
		cp := in // a copy of its own: &in would move in to the heap on every Send
		r.obs.tape.Input(tape.Input{Op: "send", Agent: agentName, Instance: instanceKey, Input: &cp})
	}
	return r.sendAsked(ctx, agentName, instanceKey, in)
}

// checkInput refuses what no caller outside the runtime may send, before
// anything runs: an instance key the rule for new keys refuses
// ([store.ValidateInstanceKey]), or metadata with a key the runtime
// reserves ([pipeline.CheckMetadata]). The runtime's own turns (agent
// calls, delegated tasks, resumes: [Runtime.Deliver]) skip it: their keys
// may be older than the rule, and their metadata is the runtime's.
func checkInput(agentName, key string, md map[string]any) error {
	if err := store.ValidateInstanceKey(key); err != nil {
		return err
	}
	if err := pipeline.CheckMetadata("the input's metadata", nil, md); err != nil {
		return fmt.Errorf("agent %q instance %q: %w", agentName, key, err)
	}
	return nil
}

// sendAsked is Send without the tape, for Ask too: a turn a user of this
// process asked for. In a cluster, it runs here unless another process
// owns its instance.
func (r *Runtime) sendAsked(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	return r.place.Route(ctx, agentName, instanceKey, in, false)
}

// send is a turn the runtime starts itself: an agent call, a delegated
// task's turn. In a cluster, one of an instance nobody owns runs on the
// process the instance's name hashes to, so that delegations spread
// (placement.route's spread).
func (r *Runtime) send(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	return r.place.Route(ctx, agentName, instanceKey, in, true)
}

// sendHere runs the turn in this process.
func (r *Runtime) sendHere(ctx context.Context, agentName, instanceKey string, in pipeline.InputEvent) (*pipeline.TurnResult, error) {
	if !r.life.gate.Enter() {
		return nil, ErrClosed
	}
	defer r.life.gate.Leave()
	a, err := r.runnable(agentName)
	if err != nil {
		return nil, err
	}
	inst := r.instance(a, instanceKey)
	defer r.unhold(inst)
	if err := inst.Acquire(ctx); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishAborted}, fmt.Errorf("agent %q instance %q: waiting for the running turn: %w", a.Name, instanceKey, err)
	}
	defer inst.Release()
	if err := r.place.Own(ctx, inst); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, err
	}
	if err := inst.Load(ctx); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishError}, err
	}
	if len(inst.Paused) > 0 {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishPaused}, pause.PausedError(inst)
	}
	if err := r.tasks.CheckInput(ctx, in); err != nil {
		return &pipeline.TurnResult{FinishReason: pipeline.FinishAborted}, err
	}
	return a.runTurn(ctx, inst, in)
}

// Usage returns the model usage of an instance's turns over its life; it
// reads no history.
func (r *Runtime) Usage(ctx context.Context, agentName, instanceKey string) (pipeline.Usage, error) {
	if _, err := r.agent(agentName); err != nil {
		return pipeline.Usage{}, err
	}
	meta, _, err := r.env.Store.LoadMeta(ctx, agentName, instanceKey)
	return meta.Usage, err
}

// History returns the stored conversation of an instance, oldest first.
func (r *Runtime) History(ctx context.Context, agentName, instanceKey string) ([]pipeline.Message, error) {
	if _, err := r.agent(agentName); err != nil {
		return nil, err
	}
	_, recs, _, err := r.env.Store.LoadInstance(ctx, agentName, instanceKey)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Message, len(recs))
	for i, rec := range recs {
		out[i] = *rec.Message
	}
	return out, nil
}

// EffectiveHistory returns the history an instance's model sees: without
// the messages marked truncated, summaries in place of what they condense.
func (r *Runtime) EffectiveHistory(ctx context.Context, agentName, instanceKey string) ([]pipeline.Message, error) {
	if _, err := r.agent(agentName); err != nil {
		return nil, err
	}
	_, recs, _, err := r.env.Store.LoadInstance(ctx, agentName, instanceKey)
	if err != nil {
		return nil, err
	}
	var h engine.History
	for _, rec := range recs {
		h.Append(engine.Entry{Msg: rec.Message, Seq: rec.Seq})
	}
	pos := h.Positions()
	out := make([]pipeline.Message, len(pos))
	for i, p := range pos {
		out[i] = *h.At(p).Msg
	}
	return out, nil
}

// Instances lists the instance keys of an agent that have anything stored.
func (r *Runtime) Instances(ctx context.Context, agentName string) ([]string, error) {
	if _, err := r.agent(agentName); err != nil {
		return nil, err
	}
	return r.env.Store.Instances(ctx, agentName)
}

// ExtensionState returns the state extension keeps for an instance, or nil.
func (r *Runtime) ExtensionState(ctx context.Context, agentName, instanceKey, extension string) (json.RawMessage, error) {
	if _, err := r.agent(agentName); err != nil {
		return nil, err
	}
	return r.env.Store.GetState(ctx, agentName, instanceKey, extension)
}

func (r *Runtime) release() error {
	if r.obs.untape != nil {
		r.obs.untape()
	}
	var errs []error
	closed, err := r.place.Shutdown()
	errs = append(errs, err)
	defer closed()  // after the store, which may use what it closes
	r.cache.Clear() // no turn runs any more; let the histories go
	for _, name := range r.agents.names {
		if a := r.agents.byName[name]; a != nil { // nil: New failed before building it
			errs = append(errs, a.close())
		}
	}
	if r.kit.wasm.engine != nil {
		errs = append(errs, r.kit.wasm.engine.Close())
	}
	for _, src := range r.kit.sources {
		errs = append(errs, src.Close())
	}
	if r.kit.workspace != nil {
		errs = append(errs, r.kit.workspace.Close())
	}
	r.obs.tel.Close() // its last collection reads the ledger: before the store closes
	if r.ownsStore && r.env.Store != nil {
		errs = append(errs, r.env.Store.Close())
	}
	return errors.Join(errs...)
}

// telemetryOptions are the options' and cfg's telemetry settings.
func telemetryOptions(o *options, cfg *config.File) telemetry.Options {
	return telemetry.Options{Tracer: o.tracer, Meter: o.meter, Config: cfg.Telemetry, Getenv: os.Getenv}
}

// openPending counts the open pending items by agent, for the metrics.
func (r *Runtime) openPending(ctx context.Context) (map[string]int64, error) {
	items, err := r.pauses.Ledger().List(ctx, ledger.Filter{Open: true})
	if err != nil {
		return nil, err
	}
	n := map[string]int64{}
	for _, name := range r.agents.names {
		n[name] = 0 // an agent with nothing open reads 0, not nothing
	}
	for _, it := range items {
		n[it.Agent]++
	}
	return n, nil
}

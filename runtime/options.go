package runtime

import (
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// Option configures [New].
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// ProviderFactory makes a model provider from an agent's model settings.
type ProviderFactory func(m config.Model) (model.Provider, error)

type options struct {
	cfg          *config.File
	cfgPath      string
	dataDir      string
	store        store.Store
	memory       bool
	logger       *slog.Logger
	bus          *events.Bus
	exts         *extensions.Registry
	tools        []pipeline.Tool
	model        model.Provider
	providers    map[string]ProviderFactory
	now          func() time.Time
	syncWrites   bool
	storeOpts    []badger.Option
	maxInstances int

	wasmCache     string
	transport     Transport
	channels      map[string]Channel
	outputs       string
	noRecovery    bool
	secretKey     []byte
	secretKeyFile string
	noExpiryTimer bool
	partialLoad   bool
	tape          tape.Tape
	tracer        trace.TracerProvider
	meter         metric.MeterProvider
}

// WithTransport carries agent calls with t instead of in process.
func WithTransport(t Transport) Option { return optionFunc(func(o *options) { o.transport = t }) }

// WithWasmCache keeps compiled WebAssembly modules in dir, so that the
// next runtime on the same dir does not compile them again. Default: the
// data directory's wasm-cache; none for a runtime without a data directory.
func WithWasmCache(dir string) Option {
	return optionFunc(func(o *options) { o.wasmCache = dir })
}

// WithSecretKey seals provided secrets with key (32 bytes, AES-256-GCM)
// instead of the key from the environment ([SecretKeyEnv]) or the key file.
func WithSecretKey(key []byte) Option {
	key = slices.Clone(key)
	return optionFunc(func(o *options) { o.secretKey = key })
}

// WithSecretKeyFile reads the key that seals provided secrets from path,
// creating it (mode 0600) if it does not exist. Default: the data
// directory's path with ".key" added (.ganglion/data.key). [SecretKeyEnv], when set, wins over the file.
func WithSecretKeyFile(path string) Option {
	return optionFunc(func(o *options) { o.secretKeyFile = path })
}

// WithoutRecovery stops New from finishing what a stopped process left
// undone (see [Runtime.Recover]): it resumes no answered turn, expires no
// pending item and starts no task turn, and the runtime runs no turn unless
// asked to. With [WithoutExpiryTimer] too, opening and reading a data
// directory runs nothing: the CLI's history, pending and tasks commands
// open it so.
func WithoutRecovery() Option { return optionFunc(func(o *options) { o.noRecovery = true }) }

// WithPartialLoad lets New succeed when some agents fail to load (an
// extension's module or settings are refused, its Register fails, its
// model cannot be opened): such an agent is unavailable, and
// [Runtime.Unavailable] says why. The other agents run as usual, and the
// unavailable one's stored history, tasks and pending items stay readable;
// its turns, the answers to its pending items and delegations to it fail
// with an error wrapping [ErrAgentUnavailable], and its stored tasks,
// resumes and deadlines wait for a runtime that loads it. Without the
// option, New fails with the first agent that does not load. A config that
// is itself invalid fails New either way.
func WithPartialLoad() Option { return optionFunc(func(o *options) { o.partialLoad = true }) }

// WithoutExpiryTimer stops the runtime from expiring pending items on its
// own while it runs; [Runtime.ExpirePending] still does, and New still
// expires the items whose deadline passed while no process ran. Tests that
// drive deadlines with an injected clock use it.
func WithoutExpiryTimer() Option {
	return optionFunc(func(o *options) { o.noExpiryTimer = true })
}

// defaultInstanceCache is how many instances a runtime keeps in memory by default.
const defaultInstanceCache = 1024

// WithInstanceCache keeps at most n instances' histories in memory (at least
// 1; default 1024). The least recently used idle ones are
// dropped and loaded again from the store when next used; an instance with a
// running or queued turn is always kept, so the cache may briefly exceed n.
// A dropped instance's own MCP servers (those that take a provided secret)
// end with it, so n also bounds how many of them run.
func WithInstanceCache(n int) Option {
	return optionFunc(func(o *options) { o.maxInstances = max(1, n) })
}

// WithConfig uses cfg, already loaded (and, for its positions, parsed by
// [config.Load] or [config.Parse]).
func WithConfig(cfg *config.File) Option { return optionFunc(func(o *options) { o.cfg = cfg }) }

// WithConfigFile loads the config from path (a ganglion.yaml).
func WithConfigFile(path string) Option { return optionFunc(func(o *options) { o.cfgPath = path }) }

// WithDataDir keeps the data in a badger database under dir, overriding the
// config's data setting. Default: the config's data, which defaults to
// .ganglion/data next to the config file.
func WithDataDir(dir string) Option { return optionFunc(func(o *options) { o.dataDir = dir }) }

// WithStoreOptions adds opts to those the runtime opens its badger store
// in the data directory with, after the config's store sizes: to size it
// ([badger.WithMemTableSize], [badger.WithBlockCacheSize]). They do not
// apply to a store given with [WithStore], [WithMemoryStore] or a cluster's.
func WithStoreOptions(opts ...badger.Option) Option {
	return optionFunc(func(o *options) { o.storeOpts = append(o.storeOpts, opts...) })
}

// WithStore uses st for persistence. The runtime does not close it.
func WithStore(st store.Store) Option { return optionFunc(func(o *options) { o.store = st }) }

// WithMemoryStore keeps everything in memory, for tests and throw-away runs.
func WithMemoryStore() Option { return optionFunc(func(o *options) { o.memory = true }) }

// WithSyncWrites makes the badger store sync every commit to disk: slower, and
// safe against a machine crash, not only a process crash.
func WithSyncWrites(on bool) Option { return optionFunc(func(o *options) { o.syncWrites = on }) }

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(o *options) { o.logger = l }) }

// WithEvents uses bus as the event bus. Default: a new bus, see [Runtime.Events].
func WithEvents(bus *events.Bus) Option { return optionFunc(func(o *options) { o.bus = bus }) }

// WithExtensions adds the factories of reg to the built-in extensions.
func WithExtensions(reg *extensions.Registry) Option {
	return optionFunc(func(o *options) { o.exts.Merge(reg) })
}

// WithExtension registers one native extension factory under name, so that
// an agent's config can list it.
func WithExtension(name string, f extensions.Factory) Option {
	return optionFunc(func(o *options) {
		r := extensions.NewRegistry()
		if err := r.Register(name, f); err != nil {
			panic("runtime.WithExtension: " + err.Error()) // a programmer's error, at construction
		}
		o.exts.Merge(r)
	})
}

// WithTool makes t available to agents that list its name in their tools.
func WithTool(t pipeline.Tool) Option {
	return optionFunc(func(o *options) { o.tools = append(o.tools, t) })
}

// WithModel makes every agent use p, whatever its config says. Tests and
// benchmarks use it; apps choose providers in the config.
func WithModel(p model.Provider) Option { return optionFunc(func(o *options) { o.model = p }) }

// WithProvider makes a model provider available to configs as provider: name.
func WithProvider(name string, f ProviderFactory) Option {
	return optionFunc(func(o *options) { o.providers[name] = f })
}

// WithClock sets the clock used for timestamps. Default: time.Now.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithTracerProvider traces the runtime's turns on tp: a span for each
// turn, step, model call, tool call and extension layer, after the
// OpenTelemetry GenAI semantic conventions (see the package doc, "Tracing").
// Given a provider, the runtime opens no OTLP export of its own.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) { o.tracer = tp })
}

// WithMeterProvider records the runtime's metrics on mp: turn and model
// call durations, token usage, tool calls, extension layer failures and
// the pending items open. [Runtime.Close] flushes mp (when it has a
// ForceFlush method, as the SDK's MeterProvider does) while the store is
// still open, then stops the pending items gauge, which reads the store;
// mp stays open, for its owner to shut down.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.meter = mp })
}

// WithTape records the runtime's session to a cassette ([cassette.Recorder])
// or replays one ([cassette.Player]): the inputs given through the API,
// every model call and its streamed response, the results of the tools,
// the clock, the IDs the runtime makes, and the events. Replaying, the
// runtime makes no model calls (the config's providers are not even
// opened), and only the tools that are code under test run: an
// extension's tools and the delegation tools. See package cassette.
func WithTape(t cassette.Tape) Option { return optionFunc(func(o *options) { o.tape = tape.Open(t) }) }

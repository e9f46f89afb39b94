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

// WithWasmCache keeps compiled WebAssembly modules in dir for the next
// runtime. Default: the data directory's wasm-cache; none without one.
func WithWasmCache(dir string) Option {
	return optionFunc(func(o *options) { o.wasmCache = dir })
}

// WithSecretKey seals provided secrets with key (32 bytes, AES-256-GCM)
// instead of [SecretKeyEnv] or the key file.
func WithSecretKey(key []byte) Option {
	key = slices.Clone(key)
	return optionFunc(func(o *options) { o.secretKey = key })
}

// WithSecretKeyFile reads the secrets' key from path, created (mode 0600)
// if absent. Default: the data directory's path with ".key" added.
// [SecretKeyEnv], when set, wins.
func WithSecretKeyFile(path string) Option {
	return optionFunc(func(o *options) { o.secretKeyFile = path })
}

// WithoutRecovery stops New from finishing what a stopped process left
// undone ([Runtime.Recover]): no turn runs unless asked for. With
// [WithoutExpiryTimer] too, opening a data directory runs nothing.
func WithoutRecovery() Option { return optionFunc(func(o *options) { o.noRecovery = true }) }

// WithPartialLoad lets New succeed when some agents fail to load: their
// stored data stays readable, and what would run them fails with
// [ErrAgentUnavailable] ([Runtime.Unavailable] says why). Without it, New
// fails with the first such agent. An invalid config fails New either way.
func WithPartialLoad() Option { return optionFunc(func(o *options) { o.partialLoad = true }) }

// WithoutExpiryTimer stops the timer that expires pending items while the
// runtime runs; New and [Runtime.ExpirePending] still expire them. For
// tests with an injected clock.
func WithoutExpiryTimer() Option {
	return optionFunc(func(o *options) { o.noExpiryTimer = true })
}

// defaultInstanceCache is how many instances a runtime keeps in memory by default.
const defaultInstanceCache = 1024

// WithInstanceCache keeps at most n idle instances in memory (at least 1;
// default 1024), dropping the least recently used; a busy instance is
// always kept, so the cache may briefly exceed n.
func WithInstanceCache(n int) Option {
	return optionFunc(func(o *options) { o.maxInstances = max(1, n) })
}

// WithConfig uses cfg; errors are positioned if [config.Load] or
// [config.Parse] read it.
func WithConfig(cfg *config.File) Option { return optionFunc(func(o *options) { o.cfg = cfg }) }

// WithConfigFile loads the config from path (a ganglion.yaml).
func WithConfigFile(path string) Option { return optionFunc(func(o *options) { o.cfgPath = path }) }

// WithDataDir keeps the badger data under dir instead of the config's data
// (default .ganglion/data next to the config file).
func WithDataDir(dir string) Option { return optionFunc(func(o *options) { o.dataDir = dir }) }

// WithStoreOptions adds opts, after the config's sizes, to the badger store
// of the data directory ([badger.WithMemTableSize], ...); not to
// [WithStore], [WithMemoryStore] or a cluster's store.
func WithStoreOptions(opts ...badger.Option) Option {
	return optionFunc(func(o *options) { o.storeOpts = append(o.storeOpts, opts...) })
}

// WithStore uses st for persistence. The runtime does not close it.
func WithStore(st store.Store) Option { return optionFunc(func(o *options) { o.store = st }) }

// WithMemoryStore keeps everything in memory, for tests and throw-away runs.
func WithMemoryStore() Option { return optionFunc(func(o *options) { o.memory = true }) }

// WithSyncWrites syncs every badger commit to disk: slower, and safe
// against a machine crash too.
func WithSyncWrites(on bool) Option { return optionFunc(func(o *options) { o.syncWrites = on }) }

// WithLogger sets the logger. Default: discard.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(o *options) { o.logger = l }) }

// WithEvents uses bus as the event bus. Default: a new bus.
func WithEvents(bus *events.Bus) Option { return optionFunc(func(o *options) { o.bus = bus }) }

// WithExtensions adds the factories of reg to the built-in extensions.
func WithExtensions(reg *extensions.Registry) Option {
	return optionFunc(func(o *options) { o.exts.Merge(reg) })
}

// WithExtension registers a native extension factory under name. It
// panics if the name is invalid or taken: a programmer's error.
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

// WithModel makes every agent use p, whatever its config says (for tests).
func WithModel(p model.Provider) Option { return optionFunc(func(o *options) { o.model = p }) }

// WithProvider makes a model provider available to configs as provider:
// name. It wins over a provider of that name the program registered
// ([model.Register]) and over the scripted model.
func WithProvider(name string, f ProviderFactory) Option {
	return optionFunc(func(o *options) { o.providers[name] = f })
}

// WithClock sets the clock used for timestamps. Default: time.Now.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithTracerProvider traces turns, steps, model and tool calls and
// extension layers on tp; the runtime then opens no OTLP export of its own.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) { o.tracer = tp })
}

// WithMeterProvider records the runtime's metrics on mp. [Runtime.Close]
// flushes mp if it has ForceFlush, but does not shut it down.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.meter = mp })
}

// WithTape records the session to t ([cassette.Recorder]) or replays it
// ([cassette.Player]); replaying, no model is called and only extensions'
// and delegation tools run.
func WithTape(t cassette.Tape) Option { return optionFunc(func(o *options) { o.tape = tape.Open(t) }) }

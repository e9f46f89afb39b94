package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Defaults of [Limits].
const (
	defaultTimeout      = 2 * time.Second
	defaultMemoryLimit  = 64 << 20
	defaultMaxPayload   = 1 << 20
	defaultMaxDepth     = 64
	defaultMaxInstances = 16
)

// Limits bound a WASM extension. Zero fields take the defaults.
type Limits struct {
	// Timeout bounds the guest time of one hook call: the time spent in the
	// guest and in its host calls, not in next. Default 2 s.
	Timeout time.Duration
	// MemoryLimit caps an instance's linear memory, in bytes (rounded down
	// to 64 KiB pages). Default 64 MiB.
	MemoryLimit int
	// MaxPayload caps one value passed through the ABI, in bytes. Default
	// 1 MiB.
	MaxPayload int
	// MaxDepth caps how deeply next may re-enter one instance. Default 64.
	MaxDepth int
	// MaxInstances caps the instances that run hooks at once; more calls
	// wait for one. Default 16.
	MaxInstances int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = defaultTimeout
	}
	if l.MemoryLimit <= 0 {
		l.MemoryLimit = defaultMemoryLimit
	}
	if l.MaxPayload <= 0 {
		l.MaxPayload = defaultMaxPayload
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = defaultMaxDepth
	}
	if l.MaxInstances <= 0 {
		l.MaxInstances = defaultMaxInstances
	}
	return l
}

// Grants are what the agent's config allows an extension.
type Grants struct {
	// Secrets the extension may read.
	Secrets []string
	// Agents the extension may call.
	Agents []string
	// Pending are the kinds of pending item the extension may open.
	Pending []string
	// Files of the agent's workspace the extension may read and write.
	Files Files
	// All grants whatever the manifest asks, to inspect a module; nothing
	// is provided to it.
	All bool
	// Clock gives the guest the real clock (wall and monotonic); without
	// it the guest's clock is a fake one that starts at 0 and ticks per
	// read.
	Clock bool
	// HTTP are the origins the extension may call.
	HTTP []HTTPGrant
	// Config is the extension's config: section as JSON ("null" or empty
	// when there is none); the guest reads it as the CONFIG field.
	Config json.RawMessage
}

// Engine compiles and loads WASM extensions. A runtime has one; its
// compilation cache (a directory) makes the second start of a process fast.
// An Engine is safe for concurrent use.
type Engine struct {
	cache     wazero.CompilationCache
	cacheDir  string
	logger    *slog.Logger
	validator wazero.Runtime // validates modules (validate.go)
	valid     sync.Map       // [sha256.Size]byte: modules validated
	// noMeter loads modules without metering them: a test seam, to check
	// that the backstop stops what metering does not (see instance.backstop).
	noMeter bool

	mu     sync.Mutex
	exts   []*Extension
	closed bool
}

// NewEngine returns an engine whose compilation cache is the directory
// cacheDir ("" for an in-memory cache), created if needed.
func NewEngine(cacheDir string, logger *slog.Logger) (*Engine, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{logger: logger, cacheDir: cacheDir}
	if cacheDir == "" {
		e.cache = wazero.NewCompilationCache()
		e.validator = wazero.NewRuntime(context.Background())
		return e, nil
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("wasm compilation cache: %w", err)
	}
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("wasm compilation cache %s: %w", cacheDir, err)
	}
	e.cache = c
	e.validator = wazero.NewRuntime(context.Background())
	return e, nil
}

// Close closes every extension the engine loaded and its cache.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	exts := e.exts
	e.exts = nil
	e.mu.Unlock()
	var errs []error
	for _, x := range exts {
		errs = append(errs, x.Close())
	}
	errs = append(errs, e.validator.Close(context.Background()), e.cache.Close(context.Background()))
	return errors.Join(errs...)
}

// Compile compiles code into the engine's compilation cache without
// loading it, so that a later Load (in this process or, with a cache
// directory, another) does not compile it again.
func (e *Engine) Compile(ctx context.Context, code []byte) error {
	if err := e.validate(ctx, code); err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	code, err := meter(code)
	if err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, e.runtimeConfig(Limits{}.withDefaults()))
	defer rt.Close(context.Background())
	if _, err := compile(ctx, rt, code); err != nil {
		return fmt.Errorf("wasm: compile: %w", err)
	}
	return nil
}

// compile is rt.CompileModule, with a panic turned into an error: wazero
// 1.12's validation panics on some malformed modules (found by FuzzMeter),
// and a module is untrusted input.
func compile(ctx context.Context, rt wazero.Runtime, code []byte) (m wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("invalid module (the compiler failed: %v)", p)
		}
	}()
	return rt.CompileModule(ctx, code)
}

// runtimeConfig is the wazero configuration of an extension with limits.
// Compiled code is cached under the parts that change it.
func (e *Engine) runtimeConfig(limits Limits) wazero.RuntimeConfig {
	pages := uint32(limits.MemoryLimit / 65536)
	if pages < 1 {
		pages = 1
	}
	// No WithCloseOnContextDone: the host meters guests itself (meter.go),
	// with a fail-stop backstop (instance.backstop).
	return wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithMemoryLimitPages(pages)
}

// Load compiles the module at path and instantiates it once, which runs
// its ganglion_init: the manifest and the registrations are known when Load
// returns. name is the extension's name in the config.
func (e *Engine) Load(ctx context.Context, name, path string, limits Limits, grants Grants) (*Extension, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasm: %w", err)
	}
	return e.LoadBytes(ctx, name, path, code, limits, grants)
}

// LoadBytes is [Engine.Load] for a module already in memory; path names it
// in errors.
func (e *Engine) LoadBytes(ctx context.Context, name, path string, code []byte, limits Limits, grants Grants) (*Extension, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("wasm: engine closed")
	}
	if !bytes.HasPrefix(code, []byte("\x00asm")) {
		return nil, fmt.Errorf("wasm %s: not a WebAssembly binary (it does not start with \\0asm; a .wat text file must be built with wat2wasm)", path)
	}
	cfgJSON := []byte(grants.Config)
	if len(cfgJSON) == 0 {
		cfgJSON = []byte("null")
	} else if !json.Valid(cfgJSON) {
		return nil, fmt.Errorf("wasm %s: its config is not valid JSON", path)
	}
	limits = limits.withDefaults()
	rt := wazero.NewRuntimeWithConfig(ctx, e.runtimeConfig(limits))
	x := &Extension{name: name, path: path, rt: rt, limits: limits, grants: grants, logger: e.logger.With("extension", name), config: cfgJSON,
		stopClock: make(chan struct{}), clockDone: make(chan struct{})}
	x.clock.Store(time.Now().UnixNano())
	go x.tickClock() // before the first instance: its init runs under the deadline too
	ok := false
	defer func() {
		if !ok {
			close(x.stopClock)
			<-x.clockDone
			rt.Close(context.Background())
		}
	}()
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	if err := x.hostModule(ctx); err != nil {
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	// The engine validates the module as written (validate.go), then
	// compiles it metered (meter.go). A module it cannot meter is compiled
	// as written only to say what is wrong with it, if its shape says more
	// than the metering error.
	if err := e.validate(ctx, code); err != nil {
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	metered, merr := code, error(nil)
	if !e.noMeter {
		metered, merr = meter(code)
	}
	if merr != nil {
		plain, err := compile(ctx, rt, code)
		if err != nil {
			return nil, fmt.Errorf("wasm %s: compile: %w", path, err)
		}
		err = checkShape(plain)
		plain.Close(ctx)
		if err == nil {
			err = merr
		}
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	compiled, err := compile(ctx, rt, metered)
	if err != nil {
		return nil, fmt.Errorf("wasm %s: compile: %w", path, err)
	}
	if err := checkShape(compiled); err != nil {
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	x.compiled = compiled
	first, err := x.newInstance(ctx)
	if err != nil {
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	if err := x.checkGrants(); err != nil {
		first.close()
		return nil, fmt.Errorf("wasm %s: %w", path, err)
	}
	// The clock goroutine trims the pool already (a load can take longer
	// than its first tick), so the first instance joins it under the
	// lock, idle since now: dropped only once unused as long as any.
	first.idleSince = x.clock.Load()
	x.mu.Lock()
	x.idle = append(x.idle, first)
	x.count = 1
	x.mu.Unlock()
	e.mu.Lock()
	e.exts = append(e.exts, x)
	e.mu.Unlock()
	ok = true
	return x, nil
}

// checkShape refuses a module that imports what the host does not offer or
// lacks the required exports.
func checkShape(m wazero.CompiledModule) error {
	var bad []string
	for _, f := range m.ImportedFunctions() {
		mod, fn, _ := f.Import()
		switch mod {
		case hostModuleName:
			if !slices.Contains(hostFunctionNames, fn) {
				bad = append(bad, mod+"."+fn)
			}
		case wasi_snapshot_preview1.ModuleName:
		default:
			bad = append(bad, mod+"."+fn)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("imports what the host does not provide: %s (the host provides module %q, see sdk/ABI.md, and %s)",
			strings.Join(bad, ", "), hostModuleName, wasi_snapshot_preview1.ModuleName)
	}
	exports := m.ExportedFunctions()
	for _, want := range []string{exportVersion, exportInit} {
		if _, ok := exports[want]; !ok {
			return fmt.Errorf("does not export %s: is it a Ganglion extension? (see sdk/ABI.md)", want)
		}
	}
	// The signatures sdk/ABI.md fixes; a mismatch would fail every call.
	i32 := api.ValueTypeI32
	want := map[string][2][]api.ValueType{
		exportVersion: {nil, {i32}}, exportInit: {nil, {i32}},
		exportTurn: {{i32, i32}, {i32}}, exportStep: {{i32, i32}, {i32}}, exportToolCall: {{i32, i32}, {i32}},
		exportTool: {{i32, i32}, {i32}}, exportEvent: {{i32, i32}, {i32}},
	}
	names := slices.Sorted(maps.Keys(want))
	for _, name := range names {
		def, ok := exports[name]
		if !ok {
			continue
		}
		sig := want[name]
		if !slices.Equal(def.ParamTypes(), sig[0]) || !slices.Equal(def.ResultTypes(), sig[1]) {
			return fmt.Errorf("exports %s with the signature %s, want %s (see sdk/ABI.md)", name, signature(def.ParamTypes(), def.ResultTypes()), signature(sig[0], sig[1]))
		}
	}
	if _, ok := m.ExportedMemories()["memory"]; !ok {
		return errors.New(`does not export its memory as "memory"`)
	}
	return nil
}

// signature renders a function type as sdk/ABI.md writes it.
func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(params) + ") -> (" + names(results) + ")"
}

// Manifest is what a guest declares it does and needs (sdk/ABI.md).
type Manifest struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	ABI     int      `json:"abi"`
	Hooks   []string `json:"hooks"`
	Tools   []string `json:"tools"`
	Topics  struct {
		Publish   []string `json:"publish"`
		Subscribe []string `json:"subscribe"`
	} `json:"topics"`
	Agents  []string `json:"agents"`
	Secrets []string `json:"secrets"`
	State   bool     `json:"state"`
	// Models declares that the extension calls the agent's model
	// (complete), which costs money: without it complete is DENIED.
	Models bool `json:"models"`
	// Pending lists the kinds of pending item the extension opens, to
	// pause its turn for a human (version 2); the config must grant each.
	Pending []string `json:"pending"`
	// Files are the workspace paths the extension reads and writes (ABI
	// version 2): file_read, file_list and file_write outside them are
	// DENIED.
	Files Files `json:"files"`
	// HTTP lists the origins the extension calls (version 2).
	HTTP []string `json:"http,omitempty"`
}

func (x *Extension) checkGrants() error {
	if x.grants.All {
		return nil
	}
	var missing []string
	for _, s := range x.manifest.Secrets {
		if !slices.Contains(x.grants.Secrets, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("its manifest asks for secrets the config does not grant: %s (add them under the extension's secrets:)", strings.Join(missing, ", "))
	}
	for _, a := range x.manifest.Agents {
		if !slices.Contains(x.grants.Agents, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("its manifest asks to call agents the config does not grant: %s (add them under the extension's agents:)", strings.Join(missing, ", "))
	}
	for _, k := range x.manifest.Pending {
		if !slices.Contains(x.grants.Pending, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("its manifest asks to open pending items the config does not grant: %s (add them under the extension's pending:)", strings.Join(missing, ", "))
	}
	if err := x.checkFileGrants(); err != nil {
		return err
	}
	return x.checkHTTPGrants()
}

// registration is one register call of the guest's init.
type registration struct {
	kind        int32
	id          int32
	priority    int
	hasPriority bool
	tool        *toolSpec
	pattern     string
	pending     *pendingSpec
}

type toolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Category    string          `json:"category"`
}

// sameRegistrations reports whether two inits registered the same things.
func sameRegistrations(a, b []registration) bool {
	return slices.EqualFunc(a, b, func(x, y registration) bool {
		if x.kind != y.kind || x.id != y.id || x.priority != y.priority || x.hasPriority != y.hasPriority || x.pattern != y.pattern ||
			(x.tool == nil) != (y.tool == nil) || (x.pending == nil) != (y.pending == nil) {
			return false
		}
		return (x.tool == nil || x.tool.Name == y.tool.Name) && (x.pending == nil || *x.pending == *y.pending)
	})
}

// hookFunctions are an instance's call engines for one nesting depth:
// re-entering an instance through the call engine that is already running
// corrupts the host's stack, so each depth has its own.
type hookFunctions [kindReply + 1]api.Function

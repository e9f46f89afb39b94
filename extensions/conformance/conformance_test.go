package conformance_test

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/guesttest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// ext is one entry of an agent's extensions: the twin under a name.
type ext struct {
	name     string
	onError  string // "" is the default, fail_closed
	priority int
	config   string // the config: section, in YAML flow style
}

// agentSpec is one agent of a case's config.
type agentSpec struct {
	name  string
	tools []string
	exts  []ext
}

// testCase is one behaviour, run against both twins. run drives the
// runtime through the harness, which records everything observable;
// check asserts what both twins must do.
type testCase struct {
	name   string
	agents []agentSpec
	script string // the scripted model's script
	disk   bool   // keep the data in badger on disk, not in memory
	run    func(h *harness)
	check  func(t *testing.T, o *observation)
	// differs lists differences between the twins found by this
	// suite and left unfixed: when the observation is exactly the one
	// described, the case is skipped with the description.
	differs []*difference
}

// difference is a known, described divergence of one implementation.
type difference struct {
	impl string // "native", "wasm" (the Go twin), "rust" or "assemblyscript"
	why  string
	// is reports whether o shows exactly the described divergence.
	is func(o *observation) bool
}

// observation is what a case's run observed of the runtime.
type observation struct {
	Turns   []turnObs
	Calls   []modelCall
	Events  []string
	History map[string][]pipeline.Message // by "agent/instance"
	State   map[string]string             // by "agent/instance/extension"
	// Items are the pending items of an instance, by "agent/instance",
	// without what differs from run to run (IDs, times).
	Items map[string][]itemObs
	// LoadErr is the error of runtime.New. It names the extension's kind
	// (a module's path, a config position), so the twins are compared on
	// it by check only.
	LoadErr string `json:"-"`
}

// turnObs is one Send.
type turnObs struct {
	Agent, Instance, Input string
	Result                 pipeline.TurnResult
	Err                    string
	// Blame is "extension/hook" when the error is a *pipeline.MiddlewareError.
	Blame string
	// Matches lists the pipeline errors the error matches (errors.Is,
	// errors.As): "ErrNextCalledTwice", "PanicError".
	Matches []string `json:",omitempty"`
}

// itemObs is a pending item as the suite compares it.
type itemObs struct {
	Kind, Extension, TurnID, CallID, Status, Answer, Message string
	Step                                                     int
	Request                                                  string
	Required, Open                                           bool
}

// modelCall is one call of the model.
type modelCall struct {
	Agent, Instance string
	Turn, Step      int
	Tools           []string
	Messages        []string // "role: content"
}

// clock is the runtimes' clock, so that histories compare equal.
var clock = time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)

// TestConformance runs every case against the native twin and the guest
// twins (Go, Rust, AssemblyScript), then checks that each guest observed
// what the native twin did.
func TestConformance(t *testing.T) {
	impls := []*impl{nativeImpl(), wasmImpl(), rustImpl(), asImpl()}
	seen := map[string]map[string]*observation{} // case → impl → what it observed
	var mu sync.Mutex
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					im.setup(t)
					h := newHarness(t, im, c)
					c.run(h)
					h.stop()
					for _, d := range c.differs {
						if d.impl == im.name && d.is(h.obs) {
							t.Skip("differs: " + d.why)
						}
					}
					c.check(t, h.obs)
					if !t.Failed() {
						mu.Lock()
						if seen[c.name] == nil {
							seen[c.name] = map[string]*observation{}
						}
						seen[c.name][im.name] = h.obs
						mu.Unlock()
					}
				})
			}
		})
	}
	t.Run("same", func(t *testing.T) {
		for _, c := range cases {
			for _, im := range impls[1:] {
				n, w := seen[c.name]["native"], seen[c.name][im.name]
				if n == nil || w == nil {
					continue // skipped or failed above
				}
				nb, wb := marshalIndent(n), marshalIndent(w)
				if !bytes.Equal(nb, wb) {
					t.Errorf("%s: the twins observed different things (- native, + %s):\n%s", c.name, im.name, changedLines(string(nb), string(wb)))
				}
			}
		}
	})
}

// impl is one implementation of the twin, and how a config lists it.
type impl struct {
	name string
	// entry renders e as an agent's extensions entry (YAML flow mapping).
	entry func(e ext) string
	opts  func() []runtime.Option
	setup func(t *testing.T) // prepares the implementation, skips the test if it cannot run
}

func nativeImpl() *impl {
	return &impl{
		name:  "native",
		entry: func(e ext) string { return "{name: " + e.name + entryRest(e) + "}" },
		opts: func() []runtime.Option {
			var opts []runtime.Option
			for _, n := range []string{"twin", "first", "second", "outer"} {
				opts = append(opts, runtime.WithExtension(n, newNativeTwin))
			}
			return opts
		},
		setup: func(*testing.T) {},
	}
}

func wasmImpl() *impl {
	return &impl{
		name: "wasm",
		entry: func(e ext) string {
			return fmt.Sprintf("{wasm: %q, name: %s%s%s}", module, e.name, guestGrants, entryRest(e))
		},
		opts:  func() []runtime.Option { return []runtime.Option{runtime.WithWasmCache(cacheDir)} },
		setup: buildTwin,
	}
}

// rustImpl is the Rust twin, testdata/rusttwin, a guest of the Rust SDK.
func rustImpl() *impl {
	return &impl{
		name: "rust",
		entry: func(e ext) string {
			return fmt.Sprintf("{wasm: %q, name: %s%s%s}", rustModule, e.name, guestGrants, entryRest(e))
		},
		opts:  func() []runtime.Option { return []runtime.Option{runtime.WithWasmCache(rustCacheDir)} },
		setup: buildRustTwin,
	}
}

// asImpl is the AssemblyScript twin, testdata/astwin, a guest of the
// AssemblyScript SDK.
func asImpl() *impl {
	return &impl{
		name: "assemblyscript",
		entry: func(e ext) string {
			return fmt.Sprintf("{wasm: %q, name: %s%s%s}", asModule, e.name, guestGrants, entryRest(e))
		},
		opts:  func() []runtime.Option { return []runtime.Option{runtime.WithWasmCache(asCacheDir)} },
		setup: buildASTwin,
	}
}

// guestGrants grants a guest twin what the native twin may do without a
// grant: open its pending kinds.
const guestGrants = ", pending: [twin_ask, twin_question]"

func entryRest(e ext) string {
	s := ""
	if e.onError != "" {
		s += ", on_error: " + e.onError
	}
	if e.priority != 0 {
		s += fmt.Sprintf(", priority: %d", e.priority)
	}
	if e.config != "" {
		s += ", config: " + e.config
	}
	return s
}

// Building the WASM twin.

var (
	guests   guesttest.Set
	twinOnce sync.Once
	module   string // the twin's module
	cacheDir string // its compiled code
)

var (
	rustGuests   guesttest.RustSet
	rustTwinOnce sync.Once
	rustModule   string // the Rust twin's module
	rustCacheDir string // its compiled code
)

var (
	asGuests   guesttest.AssemblyScriptSet
	asTwinOnce sync.Once
	asModule   string // the AssemblyScript twin's module
	asCacheDir string // its compiled code
)

func TestMain(m *testing.M) {
	code := m.Run()
	guests.Close()
	rustGuests.Close()
	asGuests.Close()
	os.Exit(code)
}

// buildTwin builds testdata/twin the first time it is called.
func buildTwin(t *testing.T) {
	t.Helper()
	mods, cache := guests.Build(t, "testdata/twin")
	twinOnce.Do(func() { module, cacheDir = mods["twin"], cache })
}

// buildRustTwin builds testdata/rusttwin the first time it is called, or
// skips the test when Debian's Rust toolchain for wasm32 is not installed.
func buildRustTwin(t *testing.T) {
	t.Helper()
	mods, cache := rustGuests.Build(t, "testdata/rusttwin")
	rustTwinOnce.Do(func() { rustModule, rustCacheDir = mods["rusttwin"], cache })
}

// buildASTwin builds testdata/astwin the first time it is called, or skips
// the test when the AssemblyScript compiler is not installed (cd
// sdk/assemblyscript && npm ci).
func buildASTwin(t *testing.T) {
	t.Helper()
	mods, cache := asGuests.Build(t, "testdata/astwin")
	asTwinOnce.Do(func() { asModule, asCacheDir = mods["astwin"], cache })
}

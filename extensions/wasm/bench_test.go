package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
)

// conv is a Conversation over a slice, for driving a pipeline without a runtime.
type conv struct{ pipeline.MessageSlice }

func (c *conv) Apply(pipeline.MessageEvent) error { return errors.New("read-only") }

// chain builds a pipeline whose layers are those ext registers, around an
// innermost turn handler that answers at once.
func chain(tb testing.TB, ext extensions.Extension) *pipeline.Pipeline {
	tb.Helper()
	var b pipeline.Builder
	if ext != nil {
		api := extensions.NewAPI("x", extensions.Host{Agent: "a", Builder: &b, Store: store.NewMemory()})
		if err := ext.Register(api); err != nil {
			tb.Fatal(err)
		}
	}
	res := &pipeline.TurnResult{FinishReason: pipeline.FinishText}
	p, err := b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return res, nil },
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func load(tb testing.TB, e *wasm.Engine, file string) *wasm.Extension {
	tb.Helper()
	x, err := e.Load(context.Background(), strings.TrimSuffix(file, ".wasm"), filepath.Join("testdata", file), wasm.Limits{}, wasm.Grants{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

func newEngine(tb testing.TB, dir string) *wasm.Engine {
	tb.Helper()
	e, err := wasm.NewEngine(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

func runTurns(b *testing.B, p *pipeline.Pipeline, c pipeline.Conversation) {
	runTurnsEvicting(b, p, c, nil)
}

// runTurnsEvicting is runTurns, writing one byte in 64 of evict before
// each turn, so that the turn finds the caches as other work leaves them.
func runTurnsEvicting(b *testing.B, p *pipeline.Pipeline, c pipeline.Conversation, evict []byte) {
	runTurnsOf(b, p, turnInfo(c, "hi"), evict)
}

// turnInfo is the turn the benchmarks run: input text in conversation c.
func turnInfo(c pipeline.Conversation, text string) pipeline.TurnInfo {
	return pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-1", Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: text}, Conversation: c}
}

// runTurnsOf is runTurnsEvicting for the turn info describes.
func runTurnsOf(b *testing.B, p *pipeline.Pipeline, info pipeline.TurnInfo, evict []byte) {
	ctx := context.Background()
	tc := pipeline.NewTurnContext(info)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		tc.Reset(info)
		if _, err := p.RunTurn(ctx, tc); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU starts counting the process's CPU time, and returns the
// function that reports it as cpu-ns/op once the benchmark's loop is done.
// On a machine that other work shares, ns/op also counts the time the
// benchmark waited for a CPU, and cpu-ns/op does not: it is the figure to
// compare there, between variants run one after the other.
func reportCPU(b *testing.B) func() {
	start, ok := cpuTime()
	return func() {
		if end, _ := cpuTime(); ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// goGuest is a Go guest built from testdata, once per test binary.
type goGuest struct {
	dir  string
	once sync.Once
	code []byte
	err  error
}

var (
	gonoop = &goGuest{dir: "gonoop"}
	goraw  = &goGuest{dir: "goraw"}
)

// goNoop builds testdata/gonoop, the Go twin of noop.wat.
func goNoop(tb testing.TB) []byte { return gonoop.build(tb) }

func (g *goGuest) build(tb testing.TB) []byte {
	tb.Helper()
	g.once.Do(func() {
		dir, err := os.MkdirTemp("", g.dir+"-")
		if err != nil {
			g.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, g.dir+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", g.dir)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			g.err = fmt.Errorf("build testdata/%s: %v\n%s", g.dir, err, b)
			return
		}
		g.code, g.err = os.ReadFile(out)
	})
	if g.err != nil {
		tb.Fatal(g.err)
	}
	return g.code
}

// rustNoop builds testdata/rustnoop, the Rust twin of noop.wat, or skips
// when Debian's Rust toolchain for wasm32 is not installed.
func rustNoop(tb testing.TB) []byte {
	tb.Helper()
	mods, _ := rustGuests.Build(tb, rustGuestDirs...)
	code, err := os.ReadFile(mods["rustnoop"])
	if err != nil {
		tb.Fatal(err)
	}
	return code
}

func loadBytes(tb testing.TB, e *wasm.Engine, name string, code []byte, g wasm.Grants) *wasm.Extension {
	tb.Helper()
	x, err := e.LoadBytes(context.Background(), name, name+".wasm", code, wasm.Limits{}, g)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	return x
}

// nativeNoop is noop.wat's turn hook in Go.
var nativeNoop = extensions.Func(func(api *extensions.API) error {
	api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) { return t.Next(ctx) })
	return nil
})

// BenchmarkWASMLayer is one onion layer that calls next, with deadline
// enforcement on; "none" is the chain without it, to subtract.
func BenchmarkWASMLayer(b *testing.B) { benchLayers(b, nil) }

// BenchmarkWASMLayerCold is BenchmarkWASMLayer with 512 KiB written before
// each call, as a turn's other work leaves the caches: a layer's cost is
// its ns/op less none's. In a turn a Go-guest hook costs what it costs
// here, not what it costs in the loop of BenchmarkWASMLayer (BENCHMARKS.md,
// "Where a Go hook's time goes in a turn").
func BenchmarkWASMLayerCold(b *testing.B) { benchLayers(b, make([]byte, 512<<10)) }

// benchLayers runs a turn through each kind of layer, evicting (see
// runTurnsEvicting).
func benchLayers(b *testing.B, evict []byte) {
	e := newEngine(b, "")
	c := &conv{}
	for _, bc := range []struct {
		name string
		ext  extensions.Extension
	}{
		{"none", nil},
		{"native", nativeNoop},
		{"wat", load(b, e, "noop.wasm")},
		{"go", loadBytes(b, e, "gonoop", goNoop(b), wasm.Grants{})},
		{"go_without_sdk", loadBytes(b, e, "goraw", goraw.build(b), wasm.Grants{})},
		{"assemblyscript", load(b, e, "../../../examples/extensions/as-guard/as-guard.wasm")},
	} {
		b.Run(bc.name, func(b *testing.B) { runTurnsEvicting(b, chain(b, bc.ext), c, evict) })
	}
	// Built here, so that without the Rust toolchain only this one skips.
	b.Run("rust", func(b *testing.B) {
		runTurnsEvicting(b, chain(b, loadBytes(b, e, "rustnoop", rustNoop(b), wasm.Grants{})), c, evict)
	})
}

// BenchmarkWASMReadText is a Go-guest turn layer that reads the turn's
// input text, of 16 B to 4 KiB, and calls next: a read copies the value
// into the guest and compares it with the last one read.
func BenchmarkWASMReadText(b *testing.B) {
	e := newEngine(b, "")
	ch := chain(b, loadBytes(b, e, "gonoop", goNoop(b), wasm.Grants{Config: []byte(`{"read": true}`)}))
	for _, n := range []int{16, 256, 4096} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { runTurnsOf(b, ch, turnInfo(&conv{}, strings.Repeat("x", n)), nil) })
	}
}

// BenchmarkWASMHistory is a middleware that reads the last message, at 10
// and 10,000 messages: the cost must not grow with the conversation.
func BenchmarkWASMHistory(b *testing.B) {
	e := newEngine(b, "")
	x := load(b, e, "last.wasm")
	for _, n := range []int{10, 10000} {
		msgs := make(pipeline.MessageSlice, n)
		for i := range msgs {
			msgs[i] = pipeline.Message{ID: "msg-" + strconv.Itoa(i), Role: pipeline.RoleUser, Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("x", 200))}
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) { runTurns(b, chain(b, x), &conv{msgs}) })
	}
}

// BenchmarkWASMLoad loads a module with a cold compilation cache (a new
// directory each time) and a warm one (a new engine on a filled directory,
// as a second process would).
func BenchmarkWASMLoad(b *testing.B) {
	for _, file := range []string{"guard.wasm", "gonoop.wasm", "rustnoop.wasm"} {
		b.Run(file, func(b *testing.B) { benchLoad(b, file) })
	}
}

// benchLoad is BenchmarkWASMLoad for one module; the guests are built
// here, so that without the Rust toolchain only the Rust one skips.
func benchLoad(b *testing.B, file string) {
	ctx := context.Background()
	var code []byte
	switch file {
	case "gonoop.wasm":
		code = goNoop(b)
	case "rustnoop.wasm":
		code = rustNoop(b)
	default:
		var err error
		if code, err = os.ReadFile(filepath.Join("testdata", file)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			e, _ := wasm.NewEngine(b.TempDir(), nil)
			if _, err := e.LoadBytes(ctx, "x", file, code, wasm.Limits{}, wasm.Grants{}); err != nil {
				b.Fatal(err)
			}
			e.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		e, _ := wasm.NewEngine(dir, nil)
		if _, err := e.LoadBytes(ctx, "x", file, code, wasm.Limits{}, wasm.Grants{}); err != nil {
			b.Fatal(err)
		}
		e.Close()
		defer reportCPU(b)()
		for b.Loop() {
			e, _ := wasm.NewEngine(dir, nil)
			if _, err := e.LoadBytes(ctx, "x", file, code, wasm.Limits{}, wasm.Grants{}); err != nil {
				b.Fatal(err)
			}
			e.Close()
		}
	})
}

// nativeReader is gonoop with {read: true} in Go: a layer on each kind
// that reads one context field and calls next.
func nativeReader(extensions.Config) (extensions.Extension, error) {
	return extensions.Func(func(api *extensions.API) error {
		api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
			_ = t.Input().Text
			return t.Next(ctx)
		})
		api.Pipeline.Step(func(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
			_ = s.Input().Text
			return s.Next(ctx)
		})
		api.Pipeline.ToolCall(func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
			_ = c.Name()
			return c.Next(ctx)
		})
		return nil
	}), nil
}

// BenchmarkWASMTurn is a full turn on the scripted model (two model calls,
// one tool call, in-memory store) through three extensions hooked on turn,
// step and toolCall, each reading one context field and calling next: Go
// guests, Rust guests, and their native twins for comparison; and three
// noop.wat guests, which read nothing, for the host's share.
// "go-new-input" is "go" with another input text at each turn: the Go SDK
// keeps a text it read for as long as the host's inbox says it is the same
// (sdk/ABI.md, "inbox"), and "go" sends the same text again and again; the
// Rust SDK does the same, and "rust-new-input" is "rust"'s twin.
func BenchmarkWASMTurn(b *testing.B) {
	dir := b.TempDir()
	noop, err := os.ReadFile(filepath.Join("testdata", "noop.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	for file, code := range map[string][]byte{"gonoop.wasm": goNoop(b), "noop.wasm": noop} {
		if err := os.WriteFile(filepath.Join(dir, file), code, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	script, err := scripted.Parse("bench.yaml", []byte(benchturn.Script))
	if err != nil {
		b.Fatal(err)
	}
	const goExts = "[{wasm: gonoop.wasm, name: g1, config: {read: true}}, {wasm: gonoop.wasm, name: g2, config: {read: true}}, {wasm: gonoop.wasm, name: g3, config: {read: true}}]"
	const rustExts = "[{wasm: rustnoop.wasm, name: s1, config: {read: true}}, {wasm: rustnoop.wasm, name: s2, config: {read: true}}, {wasm: rustnoop.wasm, name: s3, config: {read: true}}]"
	inputs := make([]pipeline.InputEvent, 1024)
	for i := range inputs {
		inputs[i] = runtime.UserMessage("What is the answer to question " + strconv.Itoa(i) + "?")
	}
	for _, bc := range []struct {
		name, exts string
		newInput   bool
		rust       bool // needs testdata/rustnoop, built in the sub-benchmark
	}{
		{"native", "[{name: r1}, {name: r2}, {name: r3}]", false, false},
		{"go", goExts, false, false},
		{"go-new-input", goExts, true, false},
		{"rust", rustExts, false, true},
		{"rust-new-input", rustExts, true, true},
		// The host's share: guests in WebAssembly text that only call next.
		{"wat", "[{wasm: noop.wasm, name: w1}, {wasm: noop.wasm, name: w2}, {wasm: noop.wasm, name: w3}]", false, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.rust {
				if err := os.WriteFile(filepath.Join(dir, "rustnoop.wasm"), rustNoop(b), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte("agents:\n  - name: bench\n    tools: [lookup]\n    extensions: "+bc.exts+"\n"))
			if err != nil {
				b.Fatal(err)
			}
			rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(script),
				runtime.WithTool(benchturn.Lookup), runtime.WithWasmCache(filepath.Join(dir, "cache")),
				runtime.WithExtension("r1", nativeReader), runtime.WithExtension("r2", nativeReader), runtime.WithExtension("r3", nativeReader))
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ctx := context.Background()
			in := runtime.UserMessage("What is the answer?")
			b.ReportAllocs()
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				if bc.newInput {
					in = inputs[i%len(inputs)]
				}
				// A new instance every 256 turns keeps the conversation realistic.
				res, err := rt.Send(ctx, "bench", "k"+strconv.Itoa(i/256), in)
				if err != nil || res.FinishReason != pipeline.FinishText {
					b.Fatalf("turn: %v %v", res, err)
				}
				i++
			}
		})
	}
}

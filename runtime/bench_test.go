package runtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/internal/racecheck"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// newBenchRuntime is a runtime that runs benchturn's turn (two model
// calls, a tool call, three pass-through extensions), with storeOpt.
func newBenchRuntime(b testing.TB, storeOpt runtime.Option, more ...runtime.Option) *runtime.Runtime {
	b.Helper()
	return benchturn.New(b, append([]runtime.Option{storeOpt}, more...)...)
}

// BenchmarkTurn runs a full turn — two model calls (a tool call, then a text
// answer), one tool call, three native pass-through middlewares on each of
// turn, step and toolCall — with the scripted model (package benchturn).
//
// memory: in-memory store, one goroutine: the cost of a turn
// ([benchturn.Run]: a new instance every 256 turns and a new runtime every
// 16,384, outside the timer). bench/eino runs the same loop beside Eino.
// badger: persistence on, b.RunParallel over one instance per goroutine: the
// throughput on the machine's cores, reported as turns/s.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	in := runtime.UserMessage(benchturn.Question)
	b.Run("memory", func(b *testing.B) {
		benchturn.Run(b, func() *runtime.Runtime { return newBenchRuntime(b, runtime.WithMemoryStore()) }, nil)
	})
	b.Run("badger", func(b *testing.B) {
		rt := newBenchRuntime(b, runtime.WithDataDir(b.TempDir()))
		var next atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			key := "i" + strconv.FormatInt(next.Add(1), 10)
			for pb.Next() {
				if err := benchturn.Check(rt.Send(ctx, benchturn.Agent, key, in)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
	})
}

// BenchmarkAgentsRequest is a round trip between two agents: a turn of
// worker whose middleware asks helper (a turn of its own) through
// ctx.agents.request and injects the answer, then answers itself; the
// scripted model, in-memory store.
func BenchmarkAgentsRequest(b *testing.B) {
	script, err := scripted.Parse("agents.yaml", []byte(`
agents:
  worker: {fallback: {steps: [{text: "done"}]}}
  helper: {fallback: {steps: [{text: "hint"}]}}
`))
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse(b.TempDir()+"/ganglion.yaml", []byte("agents:\n  - name: worker\n    extensions: [{name: ask}]\n  - name: helper\n"))
	if err != nil {
		b.Fatal(err)
	}
	ask := func(extensions.Config) (extensions.Extension, error) {
		return extensions.Func(func(api *extensions.API) error {
			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
				answer, err := t.Agents().Request(ctx, "helper", "what now?", pipeline.AgentCallOptions{})
				if err != nil {
					return nil, err
				}
				if err := t.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend,
					Message: pipeline.Message{Role: pipeline.RoleSystem, Content: answer}}); err != nil {
					return nil, err
				}
				return t.Next(ctx)
			})
			return nil
		}), nil
	}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithModel(script),
		runtime.WithExtension("ask", ask))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	in := runtime.UserMessage("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := rt.Send(ctx, "worker", "k"+strconv.Itoa(i/256), in); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// fanOutWidth is how many agents BenchmarkDelegationFanOut delegates to.
const fanOutWidth = 100

// BenchmarkDelegationFanOut is one parallel delegation (call_agent), from
// Ask to final answer: a root agent calls call_agent fanOutWidth times in
// one step (agents w000 … w099: call_agent keeps the caller's instance key,
// so each child is its own agent), the runtime stores the root task and the
// 100 child tasks in one commit and starts the children; each answers in a
// turn of its own, in the background; the last report makes one merged
// report, the root's agent answers it, and Ask returns that answer. Scripted
// model, in-memory store; a fresh instance key every op.
func BenchmarkDelegationFanOut(b *testing.B) {
	var cfg, script strings.Builder
	cfg.WriteString("agents:\n  - name: root\n    tools: [call_agent]\n")
	script.WriteString("agents:\n  root:\n    turns:\n")
	fmt.Fprintf(&script, "      - match: \"Merged report of %d parallel delegations\"\n        steps: [{text: \"all done\"}]\n", fanOutWidth)
	script.WriteString("    fallback:\n      steps:\n        - tool_calls:\n")
	for i := range fanOutWidth {
		name := fmt.Sprintf("w%03d", i)
		fmt.Fprintf(&cfg, "  - name: %s\n", name)
		fmt.Fprintf(&script, "            - {name: call_agent, args: {agent_id: %s, message: \"part %d of the job\"}}\n", name, i)
	}
	script.WriteString("        - text: \"delegated\"\n")
	for i := range fanOutWidth {
		fmt.Fprintf(&script, "  w%03d: {fallback: {steps: [{text: \"part done\"}]}}\n", i)
	}
	sc, err := scripted.Parse("fanout.yaml", []byte(script.String()))
	if err != nil {
		b.Fatal(err)
	}
	c, err := config.Parse(b.TempDir()+"/ganglion.yaml", []byte(cfg.String()))
	if err != nil {
		b.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithMemoryStore(), runtime.WithModel(sc))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key := "k" + strconv.Itoa(i)
		rep, err := rt.Ask(ctx, "root", key, "do the job")
		if err != nil {
			b.Fatal(err)
		}
		if rep.Response != "all done" || rep.TaskID == "" {
			b.Fatalf("report = %+v", rep)
		}
		i++
	}
	b.StopTimer()
	// The root saw one merged report of every child.
	hist, err := rt.History(ctx, "root", "k0")
	if err != nil {
		b.Fatal(err)
	}
	reports := 0
	for _, m := range hist {
		if m.Role == pipeline.RoleUser && strings.HasPrefix(m.Content, "[System notice") {
			reports++
			if n := strings.Count(m.Content, "\npart done\n"); n != fanOutWidth {
				b.Errorf("the merged report holds %d answers, want %d", n, fanOutWidth)
			}
		}
	}
	if reports != 1 {
		b.Errorf("the root got %d reports, want 1", reports)
	}
}

// TestTurnAllocs holds BenchmarkTurn/memory's turn (two steps, a tool
// call, three middleware layers) to its allocations: a feature that
// costs every turn an allocation when it is off (a tape, tracing) fails
// here, not in a benchmark nobody reads. Run without -race (CI's Alloc
// pass), whose instrumentation allocates.
func TestTurnAllocs(t *testing.T) {
	if racecheck.Enabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	rt := newBenchRuntime(t, runtime.WithMemoryStore())
	in := runtime.UserMessage(benchturn.Question)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := rt.Send(ctx, "bench", "i0", in); err != nil {
			t.Fatal(err)
		}
	})
	// 11 when measured (the histories' chunks are amortised over the run;
	// the IDs come from a shared table, ids.go; a context that cannot end
	// is not detached): 21 before them.
	const limit = 11
	if allocs > limit {
		t.Errorf("a turn allocates %.1f times, more than %d", allocs, limit)
	}
}

// BenchmarkTurnTraced is BenchmarkTurn/memory with tracing on: its turn
// makes 18 spans (the turn, 2 steps, 2 model calls, a tool call and 12
// layer runs). The sub-benchmarks take the cost apart:
//
//   - exporter: every span to an in-memory exporter behind a batcher
//     (emptied outside the timer), and metrics into a manual reader: what
//     the figure is about;
//   - sdk: recording spans with no processor: the SDK's own cost;
//   - unsampled: a sampler that records nothing: the runtime's own cost.
func BenchmarkTurnTraced(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, reset func(), opts ...runtime.Option) {
		benchturn.Run(b, func() *runtime.Runtime { return newBenchRuntime(b, runtime.WithMemoryStore(), opts...) }, reset)
	}
	b.Run("exporter", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(ctx)
		run(b, func() { tp.ForceFlush(ctx); exp.Reset() }, runtime.WithTracerProvider(tp), runtime.WithMeterProvider(mp))
		tp.ForceFlush(ctx)
		if b.N%1024 != 0 && len(exp.GetSpans()) == 0 {
			b.Fatal("no spans exported")
		}
	})
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(ctx)
		run(b, nil, runtime.WithTracerProvider(tp))
	})
	b.Run("unsampled", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		defer tp.Shutdown(ctx)
		run(b, nil, runtime.WithTracerProvider(tp))
	})
}

// BenchmarkUsage is the cost of Runtime.Usage, which ganglion run calls
// twice per run, on a badger store at two history lengths: it reads the
// instance's meta alone, so the two must cost the same.
func BenchmarkUsage(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run("messages="+strconv.Itoa(n), func(b *testing.B) {
			st, err := badger.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			batch := store.Batch{Meta: &store.Meta{Turns: 1, NextSeq: uint64(n), Usage: pipeline.Usage{InputTokens: 7}}}
			for i := range n {
				m := &pipeline.Message{ID: "m" + strconv.Itoa(i), Role: pipeline.RoleUser, Content: strings.Repeat("word ", 40)}
				batch.Put = append(batch.Put, store.Record{Seq: uint64(i), Message: m})
				if len(batch.Put) == 1000 || i == n-1 {
					if err := st.Commit(ctx, "bench", "k", batch); err != nil {
						b.Fatal(err)
					}
					batch = store.Batch{}
				}
			}
			rt := newBenchRuntime(b, runtime.WithStore(st))
			b.ReportAllocs()
			for b.Loop() {
				if u, err := rt.Usage(ctx, "bench", "k"); err != nil || u.InputTokens != 7 {
					b.Fatal(u, err)
				}
			}
		})
	}
}

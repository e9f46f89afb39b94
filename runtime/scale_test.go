package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/internal/guesttest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// scaleGuests is gonoop, a Go guest whose middleware reads a field and
// calls next, built once for the scale tests.
var scaleGuests guesttest.Set

// scaleRuntime is a runtime on badger whose agent has three extensions
// on every hook: two native pass-through ones and a Go-guest WASM one,
// keeping up to cache instances in memory (0: the default).
func scaleRuntime(tb testing.TB, cache int, more ...runtime.Option) *runtime.Runtime {
	tb.Helper()
	mods, wasmCache := scaleGuests.Build(tb, "../extensions/wasm/testdata/gonoop")
	script, err := scripted.Parse("bench.yaml", []byte(benchturn.Script))
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Parse(tb.TempDir()+"/ganglion.yaml", []byte(`
agents:
  - name: bench
    tools: [lookup]
    extensions: [{name: mw1}, {name: mw2}, {wasm: `+strconv.Quote(mods["gonoop"])+`, config: {read: true}}]
`))
	if err != nil {
		tb.Fatal(err)
	}
	opts := []runtime.Option{runtime.WithConfig(cfg), runtime.WithDataDir(tb.TempDir()), runtime.WithModel(script),
		runtime.WithTool(benchturn.Lookup), runtime.WithWasmCache(wasmCache),
		runtime.WithExtension("mw1", benchturn.PassThrough), runtime.WithExtension("mw2", benchturn.PassThrough)}
	if cache > 0 {
		opts = append(opts, runtime.WithInstanceCache(cache))
	}
	rt, err := runtime.New(context.Background(), append(opts, more...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return rt
}

// turnAll runs turns turns in each of n instances ("i0", "i1", ...), with
// workers goroutines, and returns each turn's latency.
func turnAll(tb testing.TB, rt *runtime.Runtime, n, turns, workers int) []time.Duration {
	tb.Helper()
	ctx := context.Background()
	in := runtime.UserMessage("What is the answer?")
	lat := make([]time.Duration, n*turns)
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				res, err := rt.Send(ctx, "bench", "i"+strconv.Itoa(i%n), in)
				lat[i] = time.Since(start)
				if err == nil && res.FinishReason != pipeline.FinishText {
					err = fmt.Errorf("turn %d: %+v", i, res)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	// Turn t of every instance before turn t+1 of any: each instance's
	// turns run in order, and up to workers instances run at once.
	for t := range turns {
		for k := range n {
			next <- t*n + k
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
	return lat
}

// rssMB is the process's resident memory after a collection, in MB; 0
// where /proc does not say.
func rssMB() float64 {
	goruntime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

func heapMB() float64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// percentile returns the p-th percentile of d, which it sorts.
func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkIdleInstances is the memory 10,000 idle instances take, each
// with 20 messages of history (five turns) and its agent's three
// extensions (one a Go-guest WASM extension), made by 2 × GOMAXPROCS
// workers: the process's resident memory (MB-RSS), the Go heap, and the
// heap per instance. cache=default keeps the runtime's default instance
// cache (1,024 in memory, the rest in the store, loaded when used);
// cache=all keeps every instance in memory. Idle is measured 12 s after
// the burst and again a minute after (-idle-1m), so a case takes a
// minute and more.
func BenchmarkIdleInstances(b *testing.B) {
	const n = 10_000
	// store=badger is Badger's own sizes, the store's defaults before it
	// was sized for many agents: 64 MiB memtables, a 256 MiB block cache.
	badgerSizes := runtime.WithStoreOptions(badger.WithMemTableSize(64<<20), badger.WithBlockCacheSize(256<<20))
	for _, bc := range []struct {
		name  string
		cache int
		opts  []runtime.Option
	}{{"cache=default", 0, nil}, {"cache=all", n, nil}, {"cache=default,store=badger", 0, []runtime.Option{badgerSizes}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				base := heapMB()
				b.ReportMetric(rssMB(), "MB-RSS-before")
				rt := scaleRuntime(b, bc.cache, bc.opts...)
				b.StartTimer()
				turnAll(b, rt, n, 5, 2*goruntime.GOMAXPROCS(0))
				b.StopTimer()
				heap := heapMB()
				b.ReportMetric(rssMB(), "MB-RSS")
				b.ReportMetric(heap, "MB-heap")
				b.ReportMetric((heap-base)*1024/n, "KB-heap/instance")
				// Idle: Badger gives back the buffers it built tables in
				// once they go unused for a few seconds, and the WASM
				// extensions close the instances idle for 10 s but one.
				time.Sleep(12 * time.Second)
				b.ReportMetric(rssMB(), "MB-RSS-idle")
				b.ReportMetric(heapMB(), "MB-heap-idle")
				// After a minute with no call, the WASM extension keeps
				// no instance at all.
				time.Sleep(50 * time.Second)
				b.ReportMetric(rssMB(), "MB-RSS-idle-1m")
				b.ReportMetric(heapMB(), "MB-heap-idle-1m")
				if f := os.Getenv("GANGLION_HEAP_PROFILE"); f != "" {
					pf, _ := os.Create(f + "." + bc.name)
					pprof.WriteHeapProfile(pf)
					pf.Close()
				}
				if msgs, err := rt.History(context.Background(), "bench", "i0"); err != nil || len(msgs) != 20 {
					b.Fatalf("instance i0 has %d messages, %v; want 20", len(msgs), err)
				}
				rt.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkConcurrentTurns is 1,000 instances turning at once through
// the same config: each op is one turn of each, all started together.
// It reports turns per second and the 99th percentile of a turn's
// latency, queueing included.
func BenchmarkConcurrentTurns(b *testing.B) {
	const n = 1000
	rt := scaleRuntime(b, 2*n)
	defer rt.Close()
	turnAll(b, rt, n, 1, n) // the instances exist, the WASM pool is warm
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, turnAll(b, rt, n, 1, n)...)
	}
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "turns/s")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "µs-p99")
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds()), "µs-p50")
}

// TestManyInstancesLeaveNothingBehind: many instances turning at once
// through a config with a WASM extension leave no goroutine behind once
// the runtime is closed. (BenchmarkConcurrentTurns is the same at 1,000.)
func TestManyInstancesLeaveNothingBehind(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 50
	}
	before := goruntime.NumGoroutine()
	rt := scaleRuntime(t, n)
	turnAll(t, rt, n, 2, n)
	for _, k := range []int{0, n / 2, n - 1} {
		msgs, err := rt.History(context.Background(), "bench", "i"+strconv.Itoa(k))
		if err != nil || len(msgs) != 8 {
			t.Fatalf("instance i%d: %d messages, %v; want 8", k, len(msgs), err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, goruntime.NumGoroutine(), buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

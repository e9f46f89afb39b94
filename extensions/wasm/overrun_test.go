package wasm_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

// overrunCases are the hostile modules of testdata whose misbehaving call
// ends at its deadline, with the input that makes it misbehave.
var overrunCases = []struct{ module, input string }{
	{"hostile_loop", "loop"},
	{"hostile_fanout", "fanout"},
	{"hostile_storm", "storm"},
	{"hostile_bulk", "copy"},
	{"hostile_bulk", "fill"},
	{"hostile_bulk", "meminit"},
	{"hostile_bulk", "tfill"},
	{"hostile_bulk", "tcopy"},
	{"hostile_bulk", "tinit"},
	{"hostile_flood", "publish"},
	{"hostile_flood", "emit"},
	{"hostile_flood", "log"},
	{"hostile_flood", "stdout"},
}

// BenchmarkOverrun measures by how much a misbehaving call overruns its
// 200 ms deadline, for every module of the corpus that runs into it: the
// p50, p99 and largest overrun of b.N calls, in milliseconds (the goal is
// under 100 ms). Run it with a fixed count:
//
//	go test -run '^$' -bench Overrun -benchtime 20x ./extensions/wasm/
func BenchmarkOverrun(b *testing.B) {
	const timeout = 200 * time.Millisecond
	for _, c := range overrunCases {
		b.Run(c.module+"/"+c.input, func(b *testing.B) {
			e := newEngine(b, "")
			x, err := e.Load(context.Background(), c.module, filepath.Join("testdata", c.module+".wasm"), wasm.Limits{Timeout: timeout}, wasm.Grants{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { x.Close() })
			var over []time.Duration
			for b.Loop() {
				begin := time.Now()
				err := turn(b, x, c.input)
				took := time.Since(begin)
				if !errors.Is(err, context.DeadlineExceeded) {
					b.Fatalf("turn(%q) = %v, want the deadline", c.input, err)
				}
				over = append(over, took-timeout)
				// A good call resets the crash count, which would make the
				// extension back off.
				if err := turn(b, x, "hello"); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(over)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(over[len(over)/2]), "p50-ms")
			b.ReportMetric(ms(over[(len(over)*99)/100]), "p99-ms")
			b.ReportMetric(ms(over[len(over)-1]), "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

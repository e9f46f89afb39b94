package wasm_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime"
)

// countingWriter counts the bytes written to it.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// TestLogRateLimit floods the log from five turns in a row, through log
// and through stdout: what reaches the logger stays within the
// extension's rate limit (1 MiB a second, in bursts of 1 MiB), where
// each turn alone may log 1 MiB.
func TestLogRateLimit(t *testing.T) {
	for _, input := range []string{"log", "stdout"} {
		t.Run(input, func(t *testing.T) {
			var w countingWriter
			rt := start(t, `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 200ms}}]`, hostileScript,
				runtime.WithLogger(slog.New(slog.NewTextHandler(&w, nil))))
			begin := time.Now()
			for range 5 {
				if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(input)); err == nil {
					t.Fatalf("Send(%q) succeeded", input)
				}
				sendOK(t, rt, "k", "hello") // a good turn: no crash back-off
			}
			elapsed := time.Since(begin)
			limit := int64(1<<20 + float64(1<<20)*elapsed.Seconds() + 64<<10)
			if got := w.n.Load(); got > limit {
				t.Errorf("%d bytes logged in %v, want at most %d", got, elapsed, limit)
			}
		})
	}
}

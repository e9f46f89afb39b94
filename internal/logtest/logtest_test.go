package logtest_test

import (
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/logtest"
)

// TestRecorder: records at or above Min are kept in order, with their own
// attributes; Take drains what Records only reads; concurrent writers
// lose nothing.
func TestRecorder(t *testing.T) {
	for _, tt := range []struct {
		name string
		min  slog.Leveler
		want []string
	}{
		{"every level", nil, []string{"debug", "info", "warn"}},
		{"info and above", slog.LevelInfo, []string{"info", "warn"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &logtest.Recorder{Min: tt.min}
			log := slog.New(rec).With("dropped", 1)
			log.Debug("debug")
			log.Info("info", "err", "boom")
			log.Warn("warn")
			if got := logtest.Messages(rec.Records()); !slices.Equal(got, tt.want) {
				t.Fatalf("Records = %q, want %q", got, tt.want)
			}
			recs := rec.Take()
			if got := logtest.Messages(recs); !slices.Equal(got, tt.want) {
				t.Errorf("Take = %q, want %q", got, tt.want)
			}
			if got := rec.Take(); len(got) != 0 {
				t.Errorf("second Take = %d records, want none", len(got))
			}
			info := recs[slices.Index(tt.want, "info")]
			if v, ok := logtest.Attr(info, "err"); !ok || v.String() != "boom" {
				t.Errorf("Attr(info, err) = %v, %v; want boom", v, ok)
			}
			if _, ok := logtest.Attr(info, "dropped"); ok {
				t.Error("Attr(info, dropped) found an attribute given through With")
			}
		})
	}
	rec := &logtest.Recorder{}
	log := slog.New(rec)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				log.Info("x")
			}
		})
	}
	wg.Wait()
	if n := len(rec.Records()); n != 800 {
		t.Errorf("concurrent writers: %d records, want 800", n)
	}
}

package logtest

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
)

// Recorder is a [slog.Handler] that keeps every record it is given, at or
// above Min (every record when Min is nil). It is safe for concurrent use.
// Attributes and groups added through WithAttrs and WithGroup are
// dropped: a kept record has its own attributes only.
type Recorder struct {
	Min slog.Leveler

	mu   sync.Mutex
	recs []slog.Record
}

// Enabled implements [slog.Handler].
func (r *Recorder) Enabled(_ context.Context, l slog.Level) bool {
	return r.Min == nil || l >= r.Min.Level()
}

// Handle implements [slog.Handler]: it keeps a clone of rec.
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// WithAttrs implements [slog.Handler]; it returns r.
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup implements [slog.Handler]; it returns r.
func (r *Recorder) WithGroup(string) slog.Handler { return r }

// Records returns the records kept so far, in the order they came.
func (r *Recorder) Records() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// Take returns the records kept since the last Take, and forgets them.
func (r *Recorder) Take() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := r.recs
	r.recs = nil
	return recs
}

// Messages returns the messages of recs.
func Messages(recs []slog.Record) []string {
	out := make([]string, len(recs))
	for i, rec := range recs {
		out[i] = rec.Message
	}
	return out
}

// Attr returns the value of rec's attribute key, and whether it has one.
func Attr(rec slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
		}
		return !found
	})
	return v, found
}

// Buffer is a log destination safe for concurrent writers: the text or
// JSON handler of code whose goroutines log while a test reads.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements [io.Writer].
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

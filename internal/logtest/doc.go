// Package logtest records the log records a test's code writes, for the
// test to check: [Recorder] is a [log/slog.Handler] that keeps them, and
// [Buffer] a destination for a text or JSON handler that goroutines write
// while the test reads.
package logtest

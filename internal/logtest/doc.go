// Package logtest records the log records a test's code writes, for the
// test to check: [Recorder] is a [log/slog.Handler] that keeps them.
package logtest

//go:build unix

package tool

// DisableKillWithRuntime makes the commands this process starts from now on
// outlive it, as if the mechanism that kills them with the runtime had
// failed, so that a test can leave a group behind for the process records.
func DisableKillWithRuntime() { outliveRuntime.Store(true) }

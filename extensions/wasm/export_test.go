package wasm

// SkipMetering makes e load modules without metering them: a test seam,
// to show that the backstop stops a guest that metering does not.
func SkipMetering(e *Engine) { e.noMeter = true }

// OnRunaway replaces the backstop's panic in x with f.
func OnRunaway(x *Extension, f func(msg string)) { x.onRunaway = f }

// DefaultMemoryLimit is the memory cap of an instance whose [Limits] leave
// it zero.
const DefaultMemoryLimit = defaultMemoryLimit

// BackoffAfter is how many crashed calls in a row make an extension back off.
const BackoffAfter = backoffAfter

// InboxRegistered reports whether x's idle instances registered an inbox,
// one answer per instance.
func InboxRegistered(x *Extension) []bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	var on []bool
	for _, in := range x.idle {
		on = append(on, in.inbox.on)
	}
	return on
}

// CheckBounds is the structural check a module passes before wazero
// decodes it.
var CheckBounds = checkBounds

// TestModules returns the test modules of testdata and the examples, by
// file name.
var TestModules = testModules

// AppendU32 appends v in LEB128.
var AppendU32 = appendU32

package wasm_test

import "syscall"

// cpuTime returns the CPU time the process has used, user and system, in
// all its threads, in nanoseconds.
func cpuTime() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}

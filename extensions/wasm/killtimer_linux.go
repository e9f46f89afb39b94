//go:build linux

package wasm

import (
	"syscall"
	"time"
	"unsafe"
)

// killTimer is a POSIX timer on the process's CPU time that sends the
// process SIGKILL: the backstop's last resort, which needs no goroutine to
// run. Guest code stuck in native code stalls the whole process at the
// next garbage collection, the clock goroutine included, and then only the
// kernel can end it. The clock goroutine re-arms it while it runs (a
// dead-man switch); on CPU time, so that a process stopped in a debugger
// is not killed. It is used by the clock goroutine only.
type killTimer struct {
	id int32
	ok bool // created
}

// sigevent is struct sigevent of Linux (64 bytes).
type sigevent struct {
	value  uint64
	signo  int32
	notify int32 // SIGEV_SIGNAL: 0
	_      [12]int32
}

type itimerspec struct{ interval, value syscall.Timespec }

// arm makes the timer kill the process after it has used d more of CPU
// time, unless armed again before.
func (k *killTimer) arm(d time.Duration) {
	if !k.ok {
		ev := sigevent{signo: int32(syscall.SIGKILL)}
		const clockProcessCPUTime = 2
		if _, _, e := syscall.Syscall(syscall.SYS_TIMER_CREATE, clockProcessCPUTime, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&k.id))); e != 0 {
			return
		}
		k.ok = true
	}
	k.set(d)
}

func (k *killTimer) set(d time.Duration) {
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	syscall.Syscall6(syscall.SYS_TIMER_SETTIME, uintptr(k.id), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}

// close deletes the timer.
func (k *killTimer) close() {
	if k.ok {
		syscall.Syscall(syscall.SYS_TIMER_DELETE, uintptr(k.id), 0, 0)
		k.ok = false
	}
}

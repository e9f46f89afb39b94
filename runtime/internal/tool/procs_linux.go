package tool

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// recordsSupported says whether this system can tell a process from a later
// one with the same PID, which process records need.
const recordsSupported = true

// processStart returns when process pid started, in clock ticks since
// boot, from /proc/<pid>/stat.
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold anything; the fields
	// after it start with the state, field 3. starttime is field 22.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 22-2 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return start, nil
}

// bootID returns the kernel's random id of the current boot.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.ContainsAny(id, "./") {
		return "", fmt.Errorf("boot id %q is not usable", id)
	}
	return id, nil
}

// setDeathSignal makes the kernel kill the process when the thread that
// started it ends (see startGroup).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

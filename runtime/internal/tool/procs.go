package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A process record says that a command's process group may be running. It
// is an empty file in the directory [WithProcessDir] names, created before
// the command's shell starts and removed when the call ends, so a record
// that outlives its call belongs to a process that died during the call.
// Everything is in the file's name, which is created at once:
//
//	<pgid>.<leader start>.<owner pid>.<owner start>.<boot id>
//
// The leader is the group's watcher (see startGroup), the owner is the
// process that ran the command, and a start is the time a process started
// in clock ticks since boot, which with the boot id tells a process from a
// later one that reuses its PID. A record is not synced to disk: it only has
// to outlive its process, and the page cache does that; a crash of the
// machine ends the groups too.
type procRecord struct {
	pgid        int
	leaderStart uint64
	ownerPID    int
	ownerStart  uint64
	boot        string
}

func (r procRecord) name() string {
	return fmt.Sprintf("%d.%d.%d.%d.%s", r.pgid, r.leaderStart, r.ownerPID, r.ownerStart, r.boot)
}

// parseProcRecord parses a record's file name; ok is false for any other name.
func parseProcRecord(name string) (r procRecord, ok bool) {
	f := strings.SplitN(name, ".", 5)
	if len(f) != 5 || f[4] == "" {
		return procRecord{}, false
	}
	var err [4]error
	r.pgid, err[0] = strconv.Atoi(f[0])
	r.leaderStart, err[1] = strconv.ParseUint(f[1], 10, 64)
	r.ownerPID, err[2] = strconv.Atoi(f[2])
	r.ownerStart, err[3] = strconv.ParseUint(f[3], 10, 64)
	if errors.Join(err[:]...) != nil || r.pgid <= 1 || r.ownerPID <= 0 {
		return procRecord{}, false
	}
	r.boot = f[4]
	return r, true
}

// self is this process's part of a record: its PID, its start and the boot id.
var self = sync.OnceValues(func() (procRecord, error) {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return procRecord{}, err
	}
	boot, err := bootID()
	if err != nil {
		return procRecord{}, err
	}
	return procRecord{ownerPID: pid, ownerStart: start, boot: boot}, nil
})

// procDir is the directory of a workspace's process records.
type procDir string

// openProcDir creates dir if needed and kills what earlier processes left
// there (see sweep).
func openProcDir(dir string) (procDir, error) {
	if _, err := self(); err != nil {
		return "", fmt.Errorf("process records: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("process records: %w", err)
	}
	d := procDir(dir)
	if err := d.sweep(); err != nil {
		return "", fmt.Errorf("process records: %w", err)
	}
	return d, nil
}

// add records the group pgid, which the process pgid leads, and returns the
// record's path for remove.
func (d procDir) add(pgid int) (string, error) {
	r, err := self()
	if err != nil {
		return "", err
	}
	r.pgid = pgid
	if r.leaderStart, err = processStart(pgid); err != nil {
		return "", err
	}
	path := filepath.Join(string(d), r.name())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	return path, f.Close()
}

// remove removes a record made by add.
func (d procDir) remove(path string) {
	_ = os.Remove(path) // at worst the next start finds a group that is gone
}

// sweep kills the group of each record left by a process that is no longer
// running, if the group's leader is still the process recorded, and removes
// the record. It leaves alone the records of running processes (this one
// included) and files that are not records. A group whose leader is gone is
// not killed: nothing then tells it from a later group that reuses the ID.
func (d procDir) sweep() error {
	me, err := self()
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(string(d))
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		r, ok := parseProcRecord(e.Name())
		if !ok || e.Type()&fs.ModeType != 0 {
			continue
		}
		if r.boot == me.boot && sameProcess(r.ownerPID, r.ownerStart) {
			continue // its owner runs, and removes it
		}
		if r.boot == me.boot && sameProcess(r.pgid, r.leaderStart) {
			if err := killProcessGroup(r.pgid); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("kill process group %d left by process %d: %w", r.pgid, r.ownerPID, err))
				continue // keep the record: the next start tries again
			}
		}
		if err := os.Remove(filepath.Join(string(d), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sameProcess reports whether pid is the process that started at start (in
// this boot). While it runs, its PID is not reused, nor is the ID of a group
// it created.
func sameProcess(pid int, start uint64) bool {
	s, err := processStart(pid)
	return err == nil && s == start
}

package badger_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/logtest"

	"github.com/ganglion-dev/ganglion/store"
	"github.com/ganglion-dev/ganglion/store/badger"
)

// crashDirEnv tells TestCrashHelperProcess which directory to write to
// before it kills itself.
const crashDirEnv = "GANGLION_STORE_TEST_CRASH_DIR"

// TestCrashHelperProcess is not a test: crashedStore runs the test binary
// again to execute it in a second process. It opens the store in
// $GANGLION_STORE_TEST_CRASH_DIR, commits an instance, and kills itself
// without closing the store, as kill -9 would.
func TestCrashHelperProcess(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestOpenAfterCrashWithEmptyFile")
	}
	s, err := badger.Open(dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	b := store.Batch{Put: []store.Record{rec(0, "q"), rec(1, "a")}, Meta: meta(1, 2)}
	if err := s.Commit(context.Background(), "a", "k", b); err != nil {
		fmt.Println("commit:", err)
		os.Exit(1)
	}
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Kill()
	}
	fmt.Println("kill:", err)
	os.Exit(1)
}

// crashedStore returns a data directory left behind by a process killed
// right after a commit: the commit is in a memtable file (a .mem file),
// not yet in a table.
func crashedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ps := cmd.ProcessState; ps == nil || ps.Success() || !strings.Contains(ps.String(), "killed") {
		t.Fatalf("helper did not die killed: %v; output: %s", err, out)
	}
	if len(files(t, dir, ".mem")) == 0 {
		t.Fatalf("the killed helper left no memtable file; its commit was flushed, so the test shows nothing")
	}
	return dir
}

// files returns the names of the files in dir that end in ext, sorted.
func files(t *testing.T, dir, ext string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ext) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// nextFile returns the name of the file Badger would create next among the
// files of dir that end in ext, named with digits zero-padded to width.
func nextFile(t *testing.T, dir, ext string, width int) string {
	t.Helper()
	last := 0
	for _, name := range files(t, dir, ext) {
		n, err := strconv.Atoi(strings.TrimSuffix(name, ext))
		if err != nil {
			t.Fatalf("file %s: %v", name, err)
		}
		last = max(last, n)
	}
	return fmt.Sprintf("%0*d%s", width, last+1, ext)
}

// TestOpenAfterCrashWithEmptyFile checks that the store opens, with
// every commit, a directory where a crash left an empty memtable (.mem) or
// value log (.vlog) file: Badger creates such a file, then sizes it, so a
// process killed in between leaves it empty. Badger's own open fails on the
// empty file ("while opening memtables ... Create a new file"), having sized
// it; a second open succeeds.
func TestOpenAfterCrashWithEmptyFile(t *testing.T) {
	const warning = "store: opening the data directory again: the first try met an empty file that a crash left behind"
	tests := []struct {
		name     string
		empty    []string // extensions of the empty files
		wantErrs []string // the errors logged with each retry
	}{
		{
			name:     "memtable",
			empty:    []string{".mem"},
			wantErrs: []string{"while opening memtables err: while opening fid: %[1]s err: Create a new file"},
		},
		{
			name:     "value log",
			empty:    []string{".vlog"},
			wantErrs: []string{`During db.vlog.open err: Open existing file: "%[2]s" err: Create a new file`},
		},
		{
			name:  "memtable and value log",
			empty: []string{".mem", ".vlog"},
			wantErrs: []string{
				"while opening memtables err: while opening fid: %[1]s err: Create a new file",
				`During db.vlog.open err: Open existing file: "%[2]s" err: Create a new file`,
			},
		},
	}
	// The widths of Badger's zero-padded file numbers.
	width := map[string]int{".mem": 5, ".vlog": 6}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := crashedStore(t)
			var memFID, vlogPath string
			for _, ext := range tt.empty {
				name := nextFile(t, dir, ext, width[ext])
				if ext == ".mem" {
					n, _ := strconv.Atoi(strings.TrimSuffix(name, ext))
					memFID = strconv.Itoa(n)
				} else {
					vlogPath = filepath.Join(dir, name)
				}
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			h := &logtest.Recorder{Min: slog.LevelWarn}
			s, err := badger.Open(dir, badger.WithLogger(slog.New(h)))
			if err != nil {
				t.Fatalf("open after the crash: %v", err)
			}
			closeStore(t, s)
			wantInstance(t, s, "a", "k", meta(1, 2), []store.Record{rec(0, "q"), rec(1, "a")})

			var got []string
			for _, r := range h.Records() {
				line := r.Level.String() + " " + r.Message
				r.Attrs(func(a slog.Attr) bool {
					line += " " + a.String()
					return true
				})
				got = append(got, line)
			}
			var want []string
			for i, e := range tt.wantErrs {
				want = append(want, fmt.Sprintf("WARN %s dir=%s attempt=%d err=%s", warning, dir, i+1, fmt.Sprintf(e, memFID, vlogPath)))
			}
			if !slices.Equal(got, want) {
				t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			// The store goes on, and opens cleanly the next time.
			commit(t, s, "a", "k", store.Batch{Put: []store.Record{rec(2, "q2")}, Meta: meta(2, 3)})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			h = &logtest.Recorder{Min: slog.LevelWarn}
			s, err = badger.Open(dir, badger.WithLogger(slog.New(h)))
			if err != nil {
				t.Fatalf("open again: %v", err)
			}
			closeStore(t, s)
			wantInstance(t, s, "a", "k", meta(2, 3), []store.Record{rec(0, "q"), rec(1, "a"), rec(2, "q2")})
			if recs := h.Records(); len(recs) > 0 {
				t.Errorf("the second open logged %d warnings, first %q", len(recs), recs[0].Message)
			}
		})
	}
}

// TestOpenDoesNotRetryOtherErrors checks that a failure other than
// the empty file of a crash fails the open at once, without a retry.
func TestOpenDoesNotRetryOtherErrors(t *testing.T) {
	dir := t.TempDir()
	if err := openDisk(t, dir).Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	_, err := badger.Open(dir, badger.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	want := fmt.Sprintf(`store: open data directory %q: while opening memtables err: Unable to parse log id.. Path=x.mem. Error=strconv.ParseInt: parsing "x": invalid syntax`, dir)
	if err == nil || err.Error() != want {
		t.Fatalf("open = %v\nwant %s", err, want)
	}
	if strings.Contains(log.String(), "again") {
		t.Errorf("the open was retried:\n%s", log.String())
	}
}

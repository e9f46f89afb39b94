package guesttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// Set is the guests of one test binary. The zero value is ready; Build
// builds them on its first call.
type Set struct {
	once  sync.Once
	dir   string
	paths map[string]string
	err   error
}

// Build builds the Go packages in dirs (relative to the test's directory)
// the first time it is called, and returns the modules by the base name of
// their directory and the compilation cache that holds their code. It
// skips the test under -short. Every call must name only packages the
// first call named (a test binary's calls share one list): it fails the
// test otherwise, rather than hand back a module nobody built.
func (s *Set) Build(tb testing.TB, dirs ...string) (modules map[string]string, cache string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds Go guests with GOOS=wasip1")
	}
	s.once.Do(func() { s.err = s.build(dirs) })
	if s.err != nil {
		tb.Fatal(s.err)
	}
	checkBuilt(tb, s.paths, dirs)
	return s.paths, filepath.Join(s.dir, "wasm-cache")
}

// checkBuilt fails tb when one of dirs was not built: the first Build call
// of the set did not name it.
func checkBuilt(tb testing.TB, paths map[string]string, dirs []string) {
	tb.Helper()
	for _, d := range dirs {
		if _, ok := paths[filepath.Base(d)]; !ok {
			tb.Fatalf("guesttest: %s was not built: the first Build call of this test binary did not name it (name every guest in each call)", d)
		}
	}
}

// Close removes what Build made; call it from TestMain.
func (s *Set) Close() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *Set) build(dirs []string) error {
	dir, err := os.MkdirTemp("", "ganglion-guests-")
	if err != nil {
		return err
	}
	s.dir, s.paths = dir, map[string]string{}
	var warm string
	errs := make([]error, len(dirs)+1)
	var wg sync.WaitGroup
	for i, d := range dirs {
		out := filepath.Join(dir, filepath.Base(d)+".wasm")
		s.paths[filepath.Base(d)] = out
		wg.Go(func() { errs[i] = goBuild(d, out, ".", "GOOS=wasip1", "GOARCH=wasm", "-buildmode=c-shared") })
	}
	wg.Go(func() { warm, errs[len(dirs)] = buildWarm(dir) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return runWarm(warm, dir, dirs, s.paths)
}

// buildWarm builds the warm command into dir/warm.
func buildWarm(dir string) (string, error) {
	warm := filepath.Join(dir, "warm")
	return warm, goBuild(".", warm, "github.com/ganglion-dev/ganglion/internal/guesttest/warm",
		"-ldflags=-X github.com/tetratelabs/wazero/internal/version.version="+wazeroVersion())
}

// runWarm compiles the modules of dirs (in paths, by base name) into the
// cache dir/wasm-cache.
func runWarm(warm, dir string, dirs []string, paths map[string]string) error {
	args := []string{filepath.Join(dir, "wasm-cache")}
	for _, d := range dirs {
		args = append(args, paths[filepath.Base(d)])
	}
	if out, err := exec.Command(warm, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("warm the compilation cache: %v\n%s", err, out)
	}
	return nil
}

// wazeroVersion is the version wazero finds for itself in this binary's
// build info: it keys the compilation cache, and a test binary records no
// dependencies, so wazero says "dev" here and "v1.12.0" in a program. The
// warm command is built to say the same as the test. Should wazero change
// how it finds its version, the cache misses and the tests only get slower.
func wazeroVersion() string {
	v := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if strings.Contains(d.Path, "github.com/tetratelabs/wazero") {
				v = d.Version
			}
		}
		if v == "" || v == "(devel)" {
			v = info.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return v
}

// goBuild builds pkg in dir into out. Environment assignments and flags
// may follow.
func goBuild(dir, out, pkg string, extra ...string) error {
	args := []string{"build", "-o", out}
	var env []string
	for _, e := range extra {
		if strings.HasPrefix(e, "-") {
			args = append(args, e)
		} else {
			env = append(env, e)
		}
	}
	// A -race from GOFLAGS would fail the wasm builds: keep the rest.
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" {
			flags = append(flags, f)
		}
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "GOFLAGS="+strings.Join(flags, " "))...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", filepath.Join(dir, pkg), err, b)
	}
	return nil
}

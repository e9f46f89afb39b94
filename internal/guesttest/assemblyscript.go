package guesttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The npm package of the AssemblyScript SDK, which an AssemblyScript guest
// lists in its package.json as a file: dependency. The compiler is the one
// the SDK's own npm ci installs beside it.
const (
	asSDKPackage = "@ganglion/assemblyscript"
	asCompiler   = "node_modules/assemblyscript/bin/asc.js"
)

// AssemblyScriptSet is the AssemblyScript guests of one test binary. The
// zero value is ready; Build builds them on its first call.
type AssemblyScriptSet struct {
	once    sync.Once
	dir     string
	paths   map[string]string
	missing string // why the guests cannot be built, if they cannot
	err     error
}

// Build builds the AssemblyScript guests in dirs (relative to the test's
// directory, each with a package.json that depends on the SDK with
// "file:", an asconfig.json that extends the SDK's and its sources under
// assembly/) the first time it is called, and returns the modules by the
// base name of their directory and the compilation cache that holds their
// code. Each is built as npm install would lay it out, the SDK linked under
// node_modules, with the compiler the SDK's npm ci installed, so that it
// needs neither the network nor an npm install of its own. It skips the
// test under -short, and when node or that compiler is missing, naming the
// command that installs it.
func (s *AssemblyScriptSet) Build(tb testing.TB, dirs ...string) (modules map[string]string, cache string) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds AssemblyScript guests with asc")
	}
	s.once.Do(func() { s.err = s.build(dirs) })
	if s.missing != "" {
		tb.Skip(s.missing)
	}
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.paths, filepath.Join(s.dir, "wasm-cache")
}

// Close removes what Build made; call it from TestMain.
func (s *AssemblyScriptSet) Close() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *AssemblyScriptSet) build(dirs []string) error {
	node, err := exec.LookPath("node")
	if err != nil {
		s.missing = "builds AssemblyScript guests with Node.js, and node is not on PATH: apt-get install nodejs npm, then cd sdk/assemblyscript && npm ci"
		return nil
	}
	dir, err := os.MkdirTemp("", "ganglion-as-guests-")
	if err != nil {
		return err
	}
	s.dir, s.paths = dir, map[string]string{}
	var warm string
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() { warm, werr = buildWarm(dir) })
	var errs []error
	for _, d := range dirs {
		name := filepath.Base(d)
		out := filepath.Join(dir, name+".wasm")
		s.paths[name] = out
		if err := s.ascBuild(node, d, filepath.Join(dir, name), out); err != nil {
			errs = append(errs, err)
		}
	}
	wg.Wait()
	if s.missing != "" {
		return nil
	}
	if err := errors.Join(append(errs, werr)...); err != nil {
		return err
	}
	return runWarm(warm, dir, dirs, s.paths)
}

// ascBuild copies the guest in src (package.json, asconfig.json and
// assembly/) to work, links its file: dependencies under work/node_modules,
// and compiles it to out with the compiler installed beside the SDK. It
// sets s.missing when that compiler is not installed.
func (s *AssemblyScriptSet) ascBuild(node, src, work, out string) error {
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return err
	}
	if err = json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(src, "package.json"), err)
	}
	// Only the sources: a node_modules or a module built in src stays behind.
	if err := os.CopyFS(filepath.Join(work, "assembly"), os.DirFS(filepath.Join(src, "assembly"))); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	for _, f := range []string{"package.json", "asconfig.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, f), b, 0o644); err != nil {
			return err
		}
	}
	links := map[string]string{}
	for _, deps := range []map[string]string{pkg.Dependencies, pkg.DevDependencies} {
		for name, spec := range deps {
			if p, ok := strings.CutPrefix(spec, "file:"); ok {
				abs, err := filepath.Abs(filepath.Join(src, p))
				if err != nil {
					return err
				}
				links[name] = abs
			}
		}
	}
	sdk := links[asSDKPackage]
	if sdk == "" {
		return fmt.Errorf("%s: package.json does not depend on %s (want \"file:\" and the path of the SDK)", src, asSDKPackage)
	}
	asc := filepath.Join(sdk, asCompiler)
	if _, err := os.Stat(asc); err != nil {
		s.missing = fmt.Sprintf("builds AssemblyScript guests with the compiler the SDK installs, and %s is missing: cd %s && npm ci", asc, sdk)
		return nil
	}
	links["assemblyscript"] = filepath.Join(sdk, "node_modules", "assemblyscript")
	for name, target := range links {
		link := filepath.Join(work, "node_modules", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	cmd := exec.Command(node, asc, "--config", "asconfig.json", "-o", out)
	cmd.Dir = work
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("asc %s: %v\n%s", src, err, b)
	}
	return nil
}

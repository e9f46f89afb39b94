package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestExtInit follows an extension author outside the repository: ext
// init writes a guest, ext build compiles it offline (no module proxy, no
// toolchain download), run talks to an agent that loads it, and inspect
// shows its manifest. Then the SDK copy is replaced with --sdk-only.
func TestExtInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "hello")

	r := exe(t, parent, "", "ext", "init", "hello")
	check(t, "ext init", r, exitOK, nil, ptr(""), "")
	golden(t, "ext_init", "", strings.ReplaceAll(r.stdout, cliVersion(t), "$VERSION"))
	checkSDKCopy(t, dir)
	main, err := os.ReadFile(filepath.Join(dir, "main.go"))
	must(t, err)
	if formatted, err := format.Source(main); err != nil || !bytes.Equal(formatted, main) {
		t.Errorf("main.go is not gofmt-formatted (%v):\n%s", err, main)
	}

	// The guest needs nothing from the network: the SDK is the copy.
	r = exeEnv(t, parent, []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-mod=readonly"}, "ext", "build", "hello")
	wasm := filepath.Join(dir, "hello.wasm")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "built "+wasm+" (") ||
		!strings.HasSuffix(r.stdout, " bytes): hello 0.1.0, hooks turn, tools greet\n") {
		t.Fatalf("ext build: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	r = exe(t, parent, "", "run", "hello", "--log-level", "info", "hello")
	check(t, "run", r, exitOK, ptr("Let me ask the hello extension.\n"+
		"[tool] greet {\"name\":\"world\"}\n"+
		"[tool] greet -> Hello, world!\n"+
		"The extension says: Hello, world!\n"), nil, "")
	for _, want := range []string{`msg="turn starts input=hello" agent=assistant extension=hello`,
		`msg="turn ends finish_reason=text_response" agent=assistant extension=hello`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run's log lacks the middleware's line %q:\n%s", want, r.stderr)
		}
	}

	// The README's test loop: record a session, replay it.
	r = exe(t, dir, "", "record", filepath.Join("cassettes", "hello.cassette"), ".", "hello")
	check(t, "record", r, exitOK, nil, nil, "")
	r = exe(t, dir, "", "ext", "test", ".")
	check(t, "ext test", r, exitOK, ptr("ok   hello.cassette (wrote hello.golden)\nok: 1 cassettes\n"), nil, "")
	r = exe(t, dir, "", "ext", "test", ".")
	check(t, "ext test again", r, exitOK, ptr("ok   hello.cassette\nok: 1 cassettes\n"), nil, "")

	r = exe(t, parent, "", "ext", "inspect", "--json", filepath.Join("hello", "hello.wasm"))
	var info struct {
		Manifest struct{ Name, Version string }
		Hooks    []string
		Tools    []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Manifest.Name != "hello" || info.Manifest.Version != "0.1.0" ||
		!slices.Equal(info.Hooks, []string{"turn"}) || !slices.Equal(info.Tools, []string{"greet"}) {
		t.Errorf("ext inspect: %v\n%s%s", err, r.stdout, r.stderr)
	}

	// Another ganglion's SDK: remove the copy, write this one's.
	must(t, os.RemoveAll(filepath.Join(dir, sdkDir)))
	r = exe(t, parent, "", "ext", "init", "--sdk-only", "hello")
	check(t, "ext init --sdk-only", r, exitOK, ptr("Wrote hello/ganglion-sdk: the Go guest SDK of this ganglion ("+cliVersion(t)+").\n"+
		"Next, rebuild the extension with it:\n  ganglion ext build hello\n"), ptr(""), "")
	checkSDKCopy(t, dir)
}

// checkSDKCopy checks that dir/ganglion-sdk is the SDK of this tree: its
// non-test files, byte for byte, and a go.mod without requirements.
func checkSDKCopy(t *testing.T, dir string) {
	t.Helper()
	sdk := filepath.Join("..", "..", "sdk")
	entries, err := os.ReadDir(sdk)
	must(t, err)
	var want []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") || n == "ABI.md") {
			want = append(want, n)
		}
	}
	copied, err := os.ReadDir(filepath.Join(dir, sdkDir, "sdk"))
	must(t, err)
	var got []string
	for _, e := range copied {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the SDK copy holds %v, want %v", got, want)
	}
	for _, n := range want {
		a, err := os.ReadFile(filepath.Join(sdk, n))
		must(t, err)
		b, err := os.ReadFile(filepath.Join(dir, sdkDir, "sdk", n))
		must(t, err)
		if !bytes.Equal(a, b) {
			t.Errorf("the SDK copy's %s differs from sdk/%s", n, n)
		}
	}
	mod, err := os.ReadFile(filepath.Join(dir, sdkDir, "go.mod"))
	must(t, err)
	if want := "module github.com/ganglion-dev/ganglion\n\ngo " + goDirective() + "\n"; string(mod) != want {
		t.Errorf("the SDK copy's go.mod:\n%s\nwant:\n%s", mod, want)
	}
}

// TestExtInitNames: the extension is named after the directory, made a
// valid name, or --name; the config loads the module ext build writes
// under that name, and the directory is quoted in the printed commands.
func TestExtInitNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dir      string
		args     []string
		wantName string // the manifest's and the config's name
		wantWasm string // the module the config loads
		wantNext string // the printed build command
	}{
		{"the directory's name", "hello", nil, "hello", "hello.wasm", "ganglion ext build hello"},
		{"a name made valid", "My Ext!", nil, "My-Ext", "My Ext!.wasm", "ganglion ext build 'My Ext!'"},
		{"leading dots and dashes trimmed", "-.guard.", nil, "guard", "-.guard..wasm", "ganglion ext build ./-.guard."},
		{"--name", "hello", []string{"--name", "greeter"}, "greeter", "hello.wasm", "ganglion ext build hello"},
		{"--name equal to the directory's", "v1.2", []string{"--name", "v1.2"}, "v1.2", "v1.2.wasm", "ganglion ext build v1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			r := exe(t, parent, "", append(append([]string{"ext", "init"}, tt.args...), "--", tt.dir)...)
			check(t, "ext init", r, exitOK, nil, ptr(""), "")
			if !strings.Contains(r.stdout, "\n  "+tt.wantNext+"\n") || !strings.HasPrefix(r.stdout, `Wrote the Go guest extension "`+tt.wantName+`" in `) {
				t.Errorf("stdout:\n%s\nwant the extension %q and the command %q", r.stdout, tt.wantName, tt.wantNext)
			}
			dir := filepath.Join(parent, tt.dir)
			cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(config.Known{}); err != nil {
				t.Errorf("the config does not validate: %v", err)
			}
			ext := cfg.Agents[0].Extensions[0]
			if ext.Name != tt.wantName || ext.Wasm != filepath.Join(dir, tt.wantWasm) {
				t.Errorf("the config loads %q as %q, want %q as %q", ext.Wasm, ext.Name, filepath.Join(dir, tt.wantWasm), tt.wantName)
			}
			main, err := os.ReadFile(filepath.Join(dir, "main.go"))
			must(t, err)
			if want := `ganglion.Manifest{Name: "` + tt.wantName + `", Version: "0.1.0"}`; !bytes.Contains(main, []byte(want)) {
				t.Errorf("main.go does not declare %s", want)
			}
			mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			must(t, err)
			if want := "\nmodule example/" + tt.wantName + "\n"; !bytes.Contains(mod, []byte(want)) {
				t.Errorf("go.mod:\n%s\nwant the line %q", mod, want[1:])
			}
		})
	}
}

// TestExtInitRefuses: ext init writes nothing when it would overwrite a
// file, and says what is wrong with a name.
func TestExtInitRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) // dir is $DIR/x, not created
		args  []string                       // after "ext init"; x is $DIR/x
		code  int
		want  string // stderr, $DIR for the parent
	}{
		{"a file exists", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
		}, []string{"x"}, exitError, "ganglion: x/main.go exists: ext init writes only new files (init into another directory, or move it away)\n"},
		{"a hidden file exists", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, ".gitignore"), nil, 0o644))
		}, []string{"x"}, exitError, "ganglion: x/.gitignore exists: ext init writes only new files (init into another directory, or move it away)\n"},
		{"an SDK copy exists", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "ganglion-sdk"), 0o755))
		}, []string{"x"}, exitError, "ganglion: x/ganglion-sdk exists: ext init writes a whole SDK copy " +
			"(to replace it with this ganglion's SDK, remove it and run: ganglion ext init --sdk-only x)\n"},
		{"--sdk-only over an SDK copy", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, "ganglion-sdk"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example/x\n"), 0o644))
		}, []string{"--sdk-only", "x"}, exitError, "ganglion: x/ganglion-sdk exists: ext init writes a whole SDK copy " +
			"(to replace it with this ganglion's SDK, remove it and run: ganglion ext init --sdk-only x)\n"},
		{"--sdk-only without a guest", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(dir, 0o755))
		}, []string{"--sdk-only", "x"}, exitError, "ganglion: x has no go.mod, Cargo.toml or package.json: --sdk-only writes the SDK copy of a guest, in its directory\n"},
		{"--sdk-only with --name", nil, []string{"--sdk-only", "--name", "y", "x"}, exitUsage,
			"ganglion: --name and --sdk-only do not go together: --sdk-only writes only x/ganglion-sdk\n"},
		{"not a directory", func(t *testing.T, dir string) {
			must(t, os.WriteFile(dir, nil, 0o644))
		}, []string{"x"}, exitError, "ganglion: x is not a directory\n"},
		{"a name with a space", nil, []string{"--name", "my ext", "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"my ext\": character \" \" at offset 2 not allowed (want [a-zA-Z0-9_.-]{1,64})\n"},
		{"an empty name", nil, []string{"--name", "", "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"\": empty (want [a-zA-Z0-9_.-]{1,64})\n"},
		{"a name too long", nil, []string{"--name", strings.Repeat("a", 65), "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"" + strings.Repeat("a", 65) + "\": 65 bytes long (want [a-zA-Z0-9_.-]{1,64})\n"},
		{"a name starting with a dash", nil, []string{"--name=-x", "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"-x\": starts with \"-\" (want a letter or a digit first)\n"},
		{"a name ending with a dot", nil, []string{"--name", "x.", "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"x.\": ends with \".\" (want a letter, digit, '_' or '-' last)\n"},
		{"a device name", nil, []string{"--name", "Aux.v2", "x"}, exitUsage,
			"ganglion: --name: invalid extension name \"Aux.v2\": \"aux\" is a device name on Windows, which Go refuses in a module path\n"},
		{"a directory without a usable name", nil, []string{"日本"}, exitUsage,
			"ganglion: cannot name the extension after the directory \"日本\": invalid extension name \"\": empty " +
				"(want [a-zA-Z0-9_.-]{1,64}); name it with --name\n"},
		{"no directory", nil, nil, exitUsage, "ganglion: accepts 1 arg(s), received 0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, filepath.Join(parent, "x"))
			}
			before := tree(t, parent)
			r := exe(t, parent, "", append([]string{"ext", "init"}, tt.args...)...)
			check(t, "ext init", r, tt.code, ptr(""), ptr(tt.want), "")
			if after := tree(t, parent); !slices.Equal(after, before) {
				t.Errorf("ext init changed the directory: before %v, after %v", before, after)
			}
		})
	}
}

// tree lists the paths under dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	must(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	return paths
}

// cliVersion is what the binary under test says its version is.
func cliVersion(t *testing.T) string {
	t.Helper()
	r := exe(t, ".", "", "version")
	f := strings.Fields(r.stdout)
	if r.code != exitOK || len(f) < 2 || f[0] != "ganglion" {
		t.Fatalf("ganglion version: exit %d: %q", r.code, r.stdout)
	}
	return f[1]
}

// exeEnv runs the CLI binary as exe does, with env added to its
// environment and time for a guest build on a cold build cache.
func exeEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(childEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Exited()) {
		t.Fatalf("ganglion %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

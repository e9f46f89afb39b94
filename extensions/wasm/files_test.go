package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// filesGrants grant what testdata/files.wasm asks: read CODEOWNERS and
// docs/, write out/ and notes.txt.
const filesGrants = `files: {read: [CODEOWNERS, docs/], write: [out/, notes.txt]}`

// workspace builds, in dir, the workspace "ws" (with files a guest may
// and may not read, and symbolic links that stay in its grant or leave it)
// and a directory "outside" beside it.
func workspace(t *testing.T, dir string) string {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	files := map[string]string{
		"ws/CODEOWNERS":      "* @team\n",
		"ws/secret.txt":      "workspace secret\n",
		"ws/docs/a.md":       "alpha\n",
		"ws/docs/sub/b.md":   "beta\n",
		"ws/docs/big.bin":    strings.Repeat("x", 2000),
		"outside/secret.txt": "outside secret\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	links := map[string]string{
		"docs/in-link":  "a.md",                     // stays in docs/
		"docs/up-link":  "../secret.txt",            // stays in the workspace, leaves docs/
		"docs/out-link": "../../outside/secret.txt", // leaves the workspace
		"docs/abs-link": filepath.Join(dir, "outside", "secret.txt"),
		"docs/sub-link": "sub", // a directory in docs/
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	return ws
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newFilesRuntime starts a runtime whose config's workspace is ws, beside
// the config in dir, and whose agent a loads extensions.
func newFilesRuntime(t *testing.T, dir, extensions string, opts ...runtime.Option) (*runtime.Runtime, error) {
	t.Helper()
	wd, err := os.Getwd()
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(hostileScript), 0o644))
	cfg := "workspace: ws\nmodel: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: " +
		strings.ReplaceAll(extensions, "testdata/", filepath.Join(wd, "testdata")+"/") + "\n"
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return runtime.New(context.Background(), append([]runtime.Option{runtime.WithConfig(c), runtime.WithMemoryStore()}, opts...)...)
}

// filesPrefix starts the error of every call of the files guest.
var filesPrefix = regexp.MustCompile(`^agent "a" instance "k" turn-[0-9]+: extension "files": turn middleware: `)

// guestReport sends input to the files guest, which fails its turn with
// the report of the call it made, and returns the report. The turns
// before and after it work: a refused call fails only itself.
func guestReport(t *testing.T, rt *runtime.Runtime, input string) string {
	t.Helper()
	sendOK(t, rt, "k", "hello")
	_, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(input))
	if err == nil {
		t.Fatalf("Send(%q) succeeded; the files guest fails every call it makes, with its report", input)
	}
	loc := filesPrefix.FindStringIndex(err.Error())
	if loc == nil || loc[0] != 0 {
		t.Fatalf("Send(%q) error %q does not start with %s", input, err, filesPrefix)
	}
	got := err.Error()[loc[1]:]
	sendOK(t, rt, "k", "hello")
	return got
}

// TestGuestFiles: a guest reads, lists and writes the paths its manifest
// asks and the config grants, with the workspace tools' rules for "..",
// absolute paths and symbolic links, confined to each granted path.
func TestGuestFiles(t *testing.T) {
	dir := t.TempDir()
	ws := workspace(t, dir)
	rt, err := newFilesRuntime(t, dir, `[{wasm: testdata/files.wasm, limits: {max_payload: 1KiB}, `+filesGrants+`}]`)
	must(t, err)
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var (
		mu      sync.Mutex
		written []events.Event
	)
	defer rt.Events().Subscribe(events.ExtensionFileWritten, func(ev events.Event) {
		mu.Lock()
		written = append(written, ev)
		mu.Unlock()
	})()

	tests := []struct {
		name, input, want string
	}{
		{"a file granted by name", "read CODEOWNERS", "read=8: * @team\n"},
		{"a file in a granted directory", "read docs/a.md", "read=6: alpha\n"},
		{"a file deeper in it", "read docs/sub/b.md", "read=5: beta\n"},
		{"dot-dot that stays in the grant", "read ./docs/sub/../a.md", "read=6: alpha\n"},
		{"a link that stays in the grant", "read docs/in-link", "read=6: alpha\n"},
		{"through a linked directory in the grant", "read docs/sub-link/b.md", "read=5: beta\n"},
		{"not granted", "read secret.txt",
			`read=-3: path "secret.txt": no path of the manifest's files.read or files.write covers it`},
		{"dot-dot out of the grant", "read docs/../secret.txt",
			`read=-3: path "docs/../secret.txt": no path of the manifest's files.read or files.write covers it`},
		{"dot-dot out of the workspace", "read ../outside/secret.txt",
			`read=-3: path "../outside/secret.txt" escapes the workspace`},
		{"dot-dot inside, out of the workspace", "read docs/../../outside/secret.txt",
			`read=-3: path "docs/../../outside/secret.txt" escapes the workspace`},
		{"absolute", "read /etc/passwd",
			`read=-3: path "/etc/passwd" is absolute; paths are relative to the workspace`},
		{"a link out of the grant, in the workspace", "read docs/up-link",
			`read=-3: path "docs/up-link" leads out of its grant "docs/"`},
		{"a link out of the workspace", "read docs/out-link",
			`read=-3: path "docs/out-link" leads out of its grant "docs/"`},
		{"an absolute link", "read docs/abs-link",
			`read=-3: path "docs/abs-link" leads out of its grant "docs/"`},
		{"missing", "read docs/missing.md", `read=-2: path "docs/missing.md" does not exist`},
		{"a directory", "read docs/sub", `read=-4: path "docs/sub" is a directory (list it with file_list)`},
		{"over max_payload", "read docs/big.bin", `read=-6: path "docs/big.bin" is 2000 bytes, over max_payload 1024`},
		{"the empty path", "read ", `read=-1: the path is empty`},
		{"a buffer too small", "peek docs/a.md", "peek=6"},
		{"list a granted directory", "list docs", `list=318: [` +
			`{"name":"a.md","dir":false,"size":6},{"name":"abs-link","dir":false,"size":0},` +
			`{"name":"big.bin","dir":false,"size":2000},{"name":"in-link","dir":false,"size":6},` +
			`{"name":"out-link","dir":false,"size":0},{"name":"sub","dir":true,"size":0},` +
			`{"name":"sub-link","dir":true,"size":0},{"name":"up-link","dir":false,"size":0}]`},
		{"list under it", "list docs/sub", `list=38: [{"name":"b.md","dir":false,"size":5}]`},
		{"list the workspace", "list .", `list=-3: path ".": no path of the manifest's files.read or files.write covers it`},
		{"list a file granted by name", "list CODEOWNERS", `list=-4: path "CODEOWNERS" is granted as a file, not a directory`},
		{"list dot-dot out of the workspace", "list docs/sub/../../..", `list=-3: path "docs/sub/../../.." escapes the workspace`},
		{"write where only reading is granted", "write docs/a.md\nchanged",
			`write=-3: path "docs/a.md": no path of the manifest's files.write covers it`},
		{"write out of the workspace", "write ../escape.txt\nx", `write=-3: path "../escape.txt" escapes the workspace`},
		{"write an absolute path", "write /tmp/escape.txt\nx",
			`write=-3: path "/tmp/escape.txt" is absolute; paths are relative to the workspace`},
		{"write a granted directory", "write out\nx", `write=-4: path "out" is a directory`},
		{"write in a granted directory", "write out/report.txt\nhello", "write=0"},
		{"write creates directories in the grant", "write out/deep/er/f.txt\ndeep", "write=0"},
		{"append", "append out/log.txt\none,", "write=0"},
		{"append again", "append out/log.txt\ntwo", "write=0"},
		{"replace", "write out/report.txt\nbye", "write=0"},
		{"write a file granted by name", "write notes.txt\nnoted", "write=0"},
		{"read what was written", "read out/report.txt", "read=3: bye"},
		{"read a file granted for writing", "read notes.txt", "read=5: noted"},
		{"list what was written", "list out", `list=120: [{"name":"deep","dir":true,"size":0},` +
			`{"name":"log.txt","dir":false,"size":7},{"name":"report.txt","dir":false,"size":3}]`},
	}
	// The report names the op "write" for appends too.
	for i := range tests {
		if strings.HasPrefix(tests[i].input, "append") {
			tests[i].want = strings.Replace(tests[i].want, "write=", "append=", 1)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := guestReport(t, rt, tt.input); got != tt.want {
				t.Errorf("Send(%q) report\n got: %q\nwant: %q", tt.input, got, tt.want)
			}
		})
	}

	for name, want := range map[string]string{
		"out/report.txt":        "bye",
		"out/deep/er/f.txt":     "deep",
		"out/log.txt":           "one,two",
		"notes.txt":             "noted",
		"docs/a.md":             "alpha\n",
		"../outside/secret.txt": "outside secret\n",
	} {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); err == nil {
		t.Errorf("escape.txt was written outside the workspace")
	}
	// Each write published an event, with the path and the size, not the
	// content.
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, ev := range written {
		d, ok := ev.Data.(events.ExtensionFileWrittenData)
		if !ok || ev.Source != "files" || ev.Agent != "a" || ev.Instance != "k" || ev.TurnID == "" {
			t.Errorf("event %+v: want one of extension files, agent a, instance k, a turn, and an ExtensionFileWrittenData", ev)
			continue
		}
		got = append(got, d.Path+" "+strings.Repeat("+", d.Bytes)+map[bool]string{true: " append"}[d.Append])
	}
	want := []string{"out/report.txt +++++", "out/deep/er/f.txt ++++", "out/log.txt ++++ append", "out/log.txt +++ append",
		"out/report.txt +++", "notes.txt +++++"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("extension.file.written events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGuestFilesByName: a file granted by name is used only as itself:
// a symbolic link there is refused, even to a file the guest may read.
func TestGuestFilesByName(t *testing.T) {
	dir := t.TempDir()
	ws := workspace(t, dir)
	must(t, os.Symlink("docs/a.md", filepath.Join(ws, "notes.txt")))
	rt, err := newFilesRuntime(t, dir, `[{wasm: testdata/files.wasm, `+filesGrants+`}]`)
	must(t, err)
	defer rt.Close()
	for input, want := range map[string]string{
		"read notes.txt":      `read=-3: path "notes.txt" is a symbolic link; a file granted by name is used only as itself`,
		"write notes.txt\nx":  `write=-3: path "notes.txt" is a symbolic link; a file granted by name is used only as itself`,
		"append notes.txt\nx": `append=-3: path "notes.txt" is a symbolic link; a file granted by name is used only as itself`,
	} {
		if got := guestReport(t, rt, input); got != want {
			t.Errorf("Send(%q) report\n got: %q\nwant: %q", input, got, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "docs", "a.md")); err != nil || string(b) != "alpha\n" {
		t.Errorf("docs/a.md holds %q (%v), want it unchanged", b, err)
	}
}

// TestGuestFilesLoad: a module whose manifest asks for files loads only
// if the config grants them (a write grant grants reading), and only on
// an agent with a workspace.
func TestGuestFilesLoad(t *testing.T) {
	tests := []struct {
		name, ext, want string
	}{
		{"granted", `{wasm: testdata/files.wasm, ` + filesGrants + `}`, ""},
		{"the whole workspace", `{wasm: testdata/files.wasm, files: {write: [.]}}`, ""},
		{"write grants reading", `{wasm: testdata/files.wasm, files: {write: [CODEOWNERS, docs, out, notes.txt]}}`, ""},
		{"a directory granted above", `{wasm: testdata/files.wasm, files: {read: [CODEOWNERS, docs/], write: [out/x/.., notes.txt]}}`, "config"},
		{"nothing granted", `{wasm: testdata/files.wasm}`,
			"its manifest asks to read files the config does not grant: CODEOWNERS, docs/ (add them under the extension's files: read:)"},
		{"a file under the grant is not the grant", `{wasm: testdata/files.wasm, files: {read: [CODEOWNERS, docs/a.md], write: [out/, notes.txt]}}`,
			"its manifest asks to read files the config does not grant: docs/ (add them under the extension's files: read:)"},
		{"read does not grant writing", `{wasm: testdata/files.wasm, files: {read: [.], write: [out/]}}`,
			"its manifest asks to write files the config does not grant: notes.txt (add them under the extension's files: write:)"},
		{"abi 1", `{wasm: testdata/refuse_files_abi1.wasm, files: {read: [docs/]}}`,
			"ganglion_init declared no valid manifest: manifest: files needs abi 2"},
	}
	wd, err := os.Getwd()
	must(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			workspace(t, dir)
			rt, err := newFilesRuntime(t, dir, "["+tt.ext+"]")
			if err == nil {
				rt.Close()
			}
			switch {
			case tt.want == "config":
				// The config refuses the path before the module loads.
				if err == nil || !strings.Contains(err.Error(), `files: write: "out/x/.." climbs out with ".."`) {
					t.Errorf("New: %v, want the config's refusal", err)
				}
			case tt.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.want != "":
				got := "loaded"
				if err != nil {
					got = strings.ReplaceAll(err.Error(), filepath.Join(wd, "testdata")+"/", "testdata/")
				}
				if !strings.HasSuffix(got, ".wasm: "+tt.want) {
					t.Errorf("New error\n got: %s\nwant: ...: %s", got, tt.want)
				}
			}
		})
	}
}

// TestGuestFilesNoWorkspace: an agent without a workspace cannot register
// a module that asks for files.
func TestGuestFilesNoWorkspace(t *testing.T) {
	e, err := wasm.NewEngine("", nil)
	must(t, err)
	defer e.Close()
	x, err := e.Load(context.Background(), "files", "testdata/files.wasm", wasm.Limits{},
		wasm.Grants{Files: wasm.Files{Read: []string{"."}, Write: []string{"."}}})
	must(t, err)
	err = x.Register(extensions.NewAPI("files", extensions.Host{Agent: "a"}))
	want := "its manifest asks for files, but the agent has no workspace (set workspace: in the config)"
	if err == nil || err.Error() != want {
		t.Errorf("Register: %v, want %q", err, want)
	}
}

// TestHostileFiles: a guest that reads, lists and writes out of its paths
// (up with "..", absolute, through symbolic links in its grants that lead
// out of them) is refused each time, and fails only its own call; a turn
// beside it, and its own next turns, work.
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	ws := workspace(t, dir)
	must(t, os.MkdirAll(filepath.Join(ws, "out"), 0o755))
	for name, target := range map[string]string{
		"docs/out-dir": "../../outside",
		"out/out-link": "../../outside/secret.txt",
		"out/out-dir":  "../../outside",
	} {
		must(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	rt, err := newFilesRuntime(t, dir, `[{wasm: testdata/hostile_files.wasm, limits: {timeout: 1s}, files: {read: [docs/], write: [out/]}}]`)
	must(t, err)
	defer rt.Close()
	sendOK(t, rt, "k", "hello")
	var wg sync.WaitGroup
	wg.Go(func() { sendOK(t, rt, "bystander", "hello") })
	_, err = rt.Send(context.Background(), "a", "k", runtime.UserMessage("escape"))
	wg.Wait()
	sendOK(t, rt, "k", "hello")
	sendOK(t, rt, "k2", "hello")
	const paths = 9 // of hostile_files.wat
	want := `agent "a" instance "k" turn-2: extension "hostile_files": turn middleware: ` +
		strings.TrimSpace(strings.Repeat("read=-3 list=-3 write=-3 ", paths))
	if err == nil || err.Error() != want {
		t.Errorf("Send(escape): %v\nwant: %s", err, want)
	}
	var ge *wasm.GuestError
	if !errors.As(err, &ge) {
		t.Errorf("Send(escape) error is not a *wasm.GuestError: %T", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "outside", "secret.txt")); err != nil || string(b) != "outside secret\n" {
		t.Errorf("outside/secret.txt holds %q (%v), want it unchanged", b, err)
	}
	for _, p := range []string{"outside/pwned.txt", "pwned", "ws/pwned"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// fileCase is a turn of a files guest: its input, and what it answers.
type fileCase struct{ input, want string }

// runFilesGuest runs cases, one turn each, through the guest module with
// grants (an extension's files: section) on a fresh workspace, and returns
// the workspace.
func runFilesGuest(t *testing.T, module, grants, cache string, cases []fileCase) string {
	t.Helper()
	dir := t.TempDir()
	ws := workspace(t, dir)
	rt, err := newFilesRuntime(t, dir, fmt.Sprintf("[{wasm: %q, files: %s}]", module, grants), runtime.WithWasmCache(cache))
	must(t, err)
	defer rt.Close()
	for _, tt := range cases {
		res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(tt.input))
		if err != nil {
			t.Errorf("Send(%.40q): %v", tt.input, err)
			continue
		}
		if res.Response.Content != tt.want {
			t.Errorf("Send(%.40q) = %.60q, want %.60q", tt.input, res.Response.Content, tt.want)
		}
	}
	return ws
}

// twinFileCases are the turns every SDK's files guest answers alike.
var twinFileCases = []fileCase{
	{"owners", "* @team\n"},
	{"docs", "a.md abs-link big.bin in-link out-link sub/ sub-link/ up-link"},
	{"note one", "one\n"},
	{"note two", "one\ntwo\n"},
}

// TestRustGuestFiles: a Rust guest reads, lists and appends to workspace
// files through the SDK's FileAccess, and is refused a path out of its
// grants.
func TestRustGuestFiles(t *testing.T) {
	mods, cache := rustGuests.Build(t, rustGuestDirs...)
	ws := runFilesGuest(t, mods["rustfiles"], "{read: [CODEOWNERS, docs/], write: [out/]}", cache, append(slices.Clone(twinFileCases),
		fileCase{"steal", `refused: ganglion: file_read: path "../outside/secret.txt" escapes the workspace`},
		fileCase{"hello", "ok"}))
	if b, err := os.ReadFile(filepath.Join(ws, "out", "notes.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("out/notes.txt holds %q (%v)", b, err)
	}
}

// TestAssemblyScriptGuestFiles: an AssemblyScript guest reads, lists,
// appends to and replaces workspace files through the SDK's Hook methods,
// and is refused a path out of its grants.
func TestAssemblyScriptGuestFiles(t *testing.T) {
	mods, cache := asGuests.Build(t, asGuestDirs...)
	long := strings.Repeat("y", 1000) // over the SDK's first buffer: read twice
	ws := runFilesGuest(t, mods["asfiles"], "{read: [CODEOWNERS, docs/], write: [out/]}", cache, append(slices.Clone(twinFileCases),
		fileCase{"replace " + long, long},
		fileCase{"note ü", long + "ü\n"},
		fileCase{"steal", `refused: DENIED: path "../outside/secret.txt" escapes the workspace`},
		fileCase{"hello", "ok"}))
	if b, err := os.ReadFile(filepath.Join(ws, "out", "notes.txt")); err != nil || string(b) != long+"ü\n" {
		t.Errorf("out/notes.txt holds %.60q (%v)", b, err)
	}
}

// TestGoGuestFiles: a Go guest reads, lists and appends to workspace files
// through the SDK, is refused a path out of its grants, and is held to the
// write bounds of a hook call.
func TestGoGuestFiles(t *testing.T) {
	mods, cache := guests.Build(t, goGuests...)
	ws := runFilesGuest(t, mods["gofiles"], "{read: [CODEOWNERS], write: [docs, out]}", cache, append(slices.Clone(twinFileCases),
		fileCase{"steal", `refused: ganglion: file_read: path "../outside/secret.txt" escapes the workspace`},
		fileCase{"flood", "256 writes, then ganglion: file_write: file_write: over the limit of 256 writes per hook call"},
		fileCase{"bigwrite", "8 writes, then ganglion: file_write: file_write: over the limit of 4194304 bytes per hook call"},
		fileCase{"hello", "ok"}))
	if b, err := os.ReadFile(filepath.Join(ws, "out", "notes.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("out/notes.txt holds %q (%v)", b, err)
	}
}

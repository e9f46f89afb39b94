package main

import (
	"errors"
	"fmt"
	goversion "go/version"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
	"github.com/ganglion-dev/ganglion/sdk/assemblyscript"
	"github.com/ganglion-dev/ganglion/sdk/rust"
	"github.com/ganglion-dev/ganglion/store"
)

// A guest that ext init writes.
//
// The module github.com/ganglion-dev/ganglion cannot be fetched with go
// get, so a guest outside this repository cannot require the SDK the
// usual way. ext init writes the guest a copy of the SDK the binary was
// built with (ganglion.SourceFiles) under ganglion-sdk/, and a go.mod that
// requires the module and replaces it with that directory: the guest
// builds at once, offline, with the SDK of the host that loads it.
//
// The guest's module path is example/NAME: Go reserves the first element
// "example" for user code, so no name collides with a standard library
// package (a module named "log" or "time" does not build).
//
// A Rust guest (--lang rust) is a cdylib crate whose Cargo.toml depends on
// the crate ganglion by path, ganglion-sdk/: a copy of sdk/rust, which needs
// nothing outside the standard library, so cargo builds it offline. An
// AssemblyScript guest (--lang assemblyscript) is an npm package whose
// package.json installs @ganglion/assemblyscript from ganglion-sdk/, a copy
// of sdk/assemblyscript; npm fetches only the compiler, assemblyscript.

const (
	// sdkDir is the SDK copy's directory in a guest.
	sdkDir = "ganglion-sdk"
	// sdkModule is the module the copy stands for.
	sdkModule = "github.com/ganglion-dev/ganglion"
	// minGoVersion is the go directive when the toolchain that built this
	// binary does not say its version (a development toolchain): the
	// oldest Go with //go:wasmexport, which the SDK needs.
	minGoVersion = "1.24"
)

// The languages ext init writes a guest in, as --lang names them.
const (
	langGo             = "go"
	langRust           = "rust"
	langAssemblyScript = "assemblyscript"
)

// langs are the languages in the order an error lists them.
var langs = []string{langGo, langRust, langAssemblyScript}

// langTitle is a language's name in a sentence.
func langTitle(lang string) string {
	switch lang {
	case langRust:
		return "Rust"
	case langAssemblyScript:
		return "AssemblyScript"
	}
	return "Go"
}

// langMarker is the file at the root of a guest of the language that ext
// build and ext init --sdk-only recognise it by.
func langMarker(lang string) string {
	switch lang {
	case langRust:
		return "Cargo.toml"
	case langAssemblyScript:
		return "package.json"
	}
	return "go.mod"
}

// checkLang refuses a --lang that names no language.
func checkLang(lang string) error {
	if !slices.Contains(langs, lang) {
		return usageError("--lang: unknown language %q (want go, rust or assemblyscript)", lang)
	}
	return nil
}

func newExtInitCmd(stdout io.Writer) *cobra.Command {
	var (
		name    string
		sdkOnly bool
		lang    string
	)
	cmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Write a new guest extension (Go, Rust or AssemblyScript) that builds at once",
		Long: `Init writes a Go guest extension into DIR (created if missing): a module
whose main.go registers a turn middleware and a tool with the Go guest SDK,
an agent config (ganglion.yaml, on the offline scripted model of
script.yaml) that loads the built module, and a README. It never
overwrites a file: an existing file is an error, and nothing is written.
--lang rust or --lang assemblyscript writes the same extension in Rust or
AssemblyScript instead.

The SDK is github.com/ganglion-dev/ganglion/sdk, which go get cannot
fetch: DIR/ganglion-sdk holds a copy of the SDK this ganglion was built
with, and DIR/go.mod replaces the module with it. So the guest builds
offline, with the SDK of the host that loads it:

  ganglion ext init hello
  ganglion ext build hello
  ganglion run hello "hello"

A Rust guest (--lang rust) is a crate, Cargo.toml and src/lib.rs, that
depends on the Rust SDK copied into DIR/ganglion-sdk. ext build compiles it
for wasm32-unknown-unknown with cargo, offline. The toolchain that works is
Debian's, with its standard library for wasm32:

  apt-get install rustc cargo libstd-rust-dev-wasm32
  ganglion ext init --lang rust hello && ganglion ext build hello

A rustup toolchain has no wasm32 target unless "rustup target add
wasm32-unknown-unknown" fetched it, which needs the network; ext build
therefore prefers /usr/bin/cargo and /usr/bin/rustc (CARGO and RUSTC name
others).

An AssemblyScript guest (--lang assemblyscript) is an npm package,
package.json, asconfig.json and assembly/index.ts, that installs the
AssemblyScript SDK from its copy in DIR/ganglion-sdk; npm fetches only the
compiler, once, from its registry:

  ganglion ext init --lang assemblyscript hello
  npm install --prefix hello
  ganglion ext build hello

The extension is named after DIR (characters other than letters, digits,
'_', '.' and '-' become '-'), or --name. To give a guest the SDK of
another ganglion, remove DIR/ganglion-sdk and run that ganglion's
ext init --sdk-only DIR (the guest's language is found from its go.mod,
Cargo.toml or package.json).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := checkLang(lang); err != nil {
				return err
			}
			if sdkOnly {
				if cmd.Flags().Changed("name") {
					return usageError("--name and --sdk-only do not go together: --sdk-only writes only %s", filepath.Join(dir, sdkDir))
				}
				if !cmd.Flags().Changed("lang") {
					var err error
					if lang, err = guestLang(dir); err != nil {
						return err
					} else if lang == "" {
						return failed(fmt.Errorf("%s has no go.mod, Cargo.toml or package.json: --sdk-only writes the SDK copy of a guest, in its directory", dir))
					}
				}
				return initSDK(stdout, dir, lang)
			}
			return initGuest(stdout, dir, name, cmd.Flags().Changed("name"), lang)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the extension's name (default: DIR's name)")
	cmd.Flags().BoolVar(&sdkOnly, "sdk-only", false, "write only DIR/"+sdkDir+", the SDK copy of a guest that has none")
	cmd.Flags().StringVar(&lang, "lang", langGo, "the guest's language: go, rust or assemblyscript")
	return cmd
}

// initFile is a file ext init writes: its path relative to DIR and its
// contents.
type initFile struct {
	path string
	data []byte
}

// initGuest writes the guest of lang into dir.
func initGuest(stdout io.Writer, dir, name string, named bool, lang string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return failed(err)
	}
	base := filepath.Base(abs)
	if !named {
		name = nameFrom(base)
	}
	if err := checkExtName(name); err != nil {
		if named {
			return usageError("--name: %v", err)
		}
		return usageError("cannot name the extension after the directory %q: %v; name it with --name", base, err)
	}
	wasmFile := base + ".wasm" // what ext build writes by default
	entry := "wasm: " + yamlString(wasmFile)
	if name != strings.TrimSuffix(wasmFile, ".wasm") {
		entry = "name: " + name + "\n        " + entry
	}
	asVersion, err := asCompilerVersion()
	if err != nil {
		return failed(err)
	}
	fill := strings.NewReplacer("NAME", name, "WASMSH", shellQuote(wasmFile), "WASM", wasmFile, "ENTRY", entry, "GOVERSION", goDirective(),
		"SDKMODULE", sdkModule, "SDKDIR", sdkDir, "CRATE", crateName(name), "NPMNAME", strings.ToLower(name), "ASVERSION", asVersion, "ASOUT", jsonQuote(wasmFile))
	var files []initFile
	var about [][2]string
	switch lang {
	case langRust:
		files = []initFile{{"Cargo.toml", []byte(fill.Replace(rustCargoToml))}, {"src/lib.rs", []byte(fill.Replace(rustLib))}}
		about = [][2]string{
			{"Cargo.toml", "the guest's crate, which builds with the SDK in " + sdkDir + "/"},
			{"src/lib.rs", "the extension: a turn middleware that logs, and a tool, greet"},
		}
	case langAssemblyScript:
		files = []initFile{
			{"package.json", []byte(fill.Replace(asPackageJSON))},
			{"asconfig.json", []byte(fill.Replace(asConfig))},
			{"assembly/index.ts", []byte(fill.Replace(asIndex))},
		}
		about = [][2]string{
			{"package.json", "the guest's package: the SDK in " + sdkDir + "/ and the compiler, assemblyscript"},
			{"asconfig.json", "the compiler's options, the SDK's and the entry file"},
			{"assembly/index.ts", "the extension: a turn middleware that logs, and a tool, greet"},
		}
	default:
		files = []initFile{{"go.mod", []byte(fill.Replace(guestGoMod))}, {"main.go", []byte(fill.Replace(guestMain))}}
		about = [][2]string{
			{"go.mod", "the guest's module, which builds with the SDK in " + sdkDir + "/"},
			{"main.go", "the extension: a turn middleware that logs, and a tool, greet"},
		}
	}
	readme, gitignore := guestReadme, guestGitignore
	switch lang {
	case langRust:
		readme, gitignore = rustReadme, rustGitignore
	case langAssemblyScript:
		readme, gitignore = asReadme, asGitignore
	}
	files = append(files,
		initFile{"ganglion.yaml", []byte(fill.Replace(guestConfig))},
		initFile{"script.yaml", []byte(fill.Replace(guestScript))},
		initFile{"README.md", []byte(fill.Replace(readme))},
		initFile{".gitignore", []byte(fill.Replace(gitignore))},
	)
	about = append(about, [][2]string{
		{"ganglion.yaml", "an agent that loads " + wasmFile + ", on the scripted model of script.yaml"},
		{"script.yaml", "what the scripted model answers: it calls greet"},
		{"README.md", "how to build, run, inspect and update it"},
		{".gitignore", "leaves out the built module and the agent's data"},
		{sdkDir + "/", "the " + langTitle(lang) + " guest SDK of this ganglion (" + buildVersion() + ")"},
	}...)
	sdk, err := sdkFiles(lang)
	if err != nil {
		return failed(err)
	}
	if err := writeNew(dir, files, sdk); err != nil {
		return failed(err)
	}
	q := argQuote(dir)
	fmt.Fprintf(stdout, "Wrote the %s guest extension %q in %s:\n", langTitle(lang), name, dir)
	width := 0
	for _, l := range about {
		width = max(width, len(l[0])+1)
	}
	for _, l := range about {
		fmt.Fprintf(stdout, "  %-*s %s\n", width, l[0], l[1])
	}
	switch lang {
	case langAssemblyScript:
		fmt.Fprintf(stdout, "Next, install the compiler (npm fetches it), build the extension and talk to the agent that loads it:\n"+
			"  npm install --prefix %s\n  ganglion ext build %s\n  ganglion run %s \"hello\"\n", q, q, q)
	default:
		fmt.Fprintf(stdout, "Next, build it and talk to the agent that loads it:\n  ganglion ext build %s\n  ganglion run %s \"hello\"\n", q, q)
	}
	return nil
}

// initSDK writes only the SDK copy into dir, a guest of lang.
func initSDK(stdout io.Writer, dir, lang string) error {
	if m := langMarker(lang); !exists(filepath.Join(dir, m)) {
		return failed(fmt.Errorf("%s has no %s: --sdk-only writes the SDK copy of a %s guest, in its directory", dir, m, langTitle(lang)))
	}
	sdk, err := sdkFiles(lang)
	if err != nil {
		return failed(err)
	}
	if err := writeNew(dir, nil, sdk); err != nil {
		return failed(err)
	}
	fmt.Fprintf(stdout, "Wrote %s: the %s guest SDK of this ganglion (%s).\nNext, rebuild the extension with it:\n  ganglion ext build %s\n",
		filepath.Join(dir, sdkDir), langTitle(lang), buildVersion(), argQuote(dir))
	return nil
}

// sdkFiles returns the SDK copy of a guest of lang, from the SDK this
// binary was built with.
func sdkFiles(lang string) ([]initFile, error) {
	switch lang {
	case langRust:
		return sdkCopy(rust.SourceFiles)
	case langAssemblyScript:
		return sdkCopy(assemblyscript.SourceFiles)
	}
	return goSDKFiles()
}

// sdkCopy returns the files of src under the SDK copy's directory, and
// the ABI they implement, ABI.md, beside them.
func sdkCopy(src fs.FS) ([]initFile, error) {
	abi, err := fs.ReadFile(ganglion.SourceFiles, "ABI.md")
	if err != nil {
		return nil, err
	}
	files := []initFile{{sdkDir + "/ABI.md", abi}}
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		files = append(files, initFile{sdkDir + "/" + p, b})
		return err
	})
	return files, err
}

// goSDKFiles returns the Go SDK copy: its go.mod, and the SDK's files but
// its tests.
func goSDKFiles() ([]initFile, error) {
	files := []initFile{{sdkDir + "/go.mod", []byte("module " + sdkModule + "\n\ngo " + goDirective() + "\n")}}
	entries, err := fs.ReadDir(ganglion.SourceFiles, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := fs.ReadFile(ganglion.SourceFiles, e.Name())
		if err != nil {
			return nil, err
		}
		files = append(files, initFile{sdkDir + "/sdk/" + e.Name(), b})
	}
	return files, nil
}

// writeNew writes files and the SDK copy sdk into dir, creating the
// directories they need. It refuses, before writing anything, if one of
// the files exists, or the SDK copy's directory does (a copy is replaced
// whole, never merged with another).
func writeNew(dir string, files, sdk []initFile) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s exists: ext init writes only new files (init into another directory, or move it away)", p)
		}
	}
	if p := filepath.Join(dir, sdkDir); exists(p) {
		return fmt.Errorf("%s exists: ext init writes a whole SDK copy (to replace it with this ganglion's SDK, remove it and run: ganglion ext init --sdk-only %s)",
			p, argQuote(dir))
	}
	for _, f := range append(files, sdk...) {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = w.Write(f.data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// argQuote quotes a directory for a printed command line, where a name
// starting with '-' would be read as a flag.
func argQuote(dir string) string {
	if strings.HasPrefix(dir, "-") {
		dir = "./" + dir
	}
	return shellQuote(dir)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// goDirective is the go directive of a guest: the language version of the
// toolchain that built this binary (1.26 for go1.26.8), so that any patch
// release of it builds the guest without switching toolchains.
func goDirective() string {
	if v := goversion.Lang(runtime.Version()); v != "" {
		return strings.TrimPrefix(v, "go")
	}
	return minGoVersion
}

// nameFrom makes a directory's name an extension name: each run of bytes
// outside [a-zA-Z0-9_.-] becomes one '-', what cannot start or end a name
// is trimmed, and the rest is cut to 64 bytes. The result may still be
// invalid: empty, or a device name.
func nameFrom(base string) string {
	var b strings.Builder
	for i := 0; i < len(base); i++ {
		switch c := base[i]; {
		case nameByte(c):
			b.WriteByte(c)
		case i == 0 || nameByte(base[i-1]):
			b.WriteByte('-')
		}
	}
	s := strings.TrimLeft(b.String(), "-_.")
	return strings.TrimRight(s[:min(len(s), 64)], "-.")
}

// checkExtName refuses a name that is not both an extension name (the
// store's rule: [a-zA-Z0-9_.-]{1,64}) and the last element of a Go module
// path that builds on every platform: it starts with a letter or a digit,
// does not end with '.', and is not a device name of Windows.
func checkExtName(name string) error {
	if err := store.ValidateName("extension name", name); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "store: "))
	}
	why := ""
	switch dev, _, _ := strings.Cut(strings.ToLower(name), "."); {
	case !isAlnum(name[0]):
		why = fmt.Sprintf("starts with %q (want a letter or a digit first)", name[:1])
	case name[len(name)-1] == '.':
		why = `ends with "." (want a letter, digit, '_' or '-' last)`
	case dev == "con" || dev == "prn" || dev == "aux" || dev == "nul" ||
		len(dev) == 4 && (strings.HasPrefix(dev, "com") || strings.HasPrefix(dev, "lpt")) && '1' <= dev[3] && dev[3] <= '9':
		why = fmt.Sprintf("%q is a device name on Windows, which Go refuses in a module path", dev)
	}
	if why != "" {
		return fmt.Errorf("invalid extension name %q: %s", name, why)
	}
	return nil
}

func nameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' }

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// yamlString writes s as a YAML scalar: plain when it is a valid name,
// else double-quoted.
func yamlString(s string) string {
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return strconv.Quote(s)
		}
	}
	return s
}

// The guest's files. NAME is the extension's name, WASM the module ext
// build writes (WASMSH quoted for a shell), ENTRY the config's extensions
// entry, GOVERSION the go directive, SDKMODULE and SDKDIR the SDK's module
// and its copy.

const guestGoMod = `// The module of the NAME extension. example/ is the module path prefix Go
// reserves for code that is never fetched; change it to where you publish
// the extension (github.com/you/NAME) if you do.
module example/NAME

go GOVERSION

require SDKMODULE v0.0.0

// The SDK cannot be fetched with go get: SDKDIR is a copy of the one the
// ganglion that wrote this module was built with (see README.md).
replace SDKMODULE => ./SDKDIR
`

const guestMain = `// Command NAME is a Ganglion extension compiled to WebAssembly: a turn
// middleware that logs each turn, and a tool, greet, that the agent's
// model can call. ganglion ext build compiles it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o WASMSH .
//
// The SDK's documentation: go doc github.com/ganglion-dev/ganglion/sdk.
package main

import (
	"encoding/json"
	"fmt"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

// init declares the extension. A c-shared module does not run main: the
// host runs the init functions, then calls setup through the SDK.
func init() {
	ganglion.Register(ganglion.Manifest{Name: "NAME", Version: "0.1.0"}, setup)
}

// setup registers what the extension does. It runs in every instance of
// the module and must register the same things each time.
func setup(api *ganglion.API) error {
	// A turn middleware runs around each turn of the agent: before Next it
	// sees the input, after Next the answer.
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		api.Logger.Info("turn starts", "input", t.InputText())
		if err := t.Next(); err != nil {
			return err // the rest of the turn failed: pass its failure on
		}
		res, err := t.Result()
		if err != nil {
			return err
		}
		api.Logger.Info("turn ends", "finish_reason", res.FinishReason)
		return nil
	})
	// A tool the agent offers its model. The host checks the model's
	// arguments against Parameters before greet runs.
	return api.Tools.Register(ganglion.ToolSpec{
		Name:        "greet",
		Description: "Greets someone by name.",
		Parameters: json.RawMessage(` + "`" + `{
			"type": "object",
			"properties": {"name": {"type": "string", "description": "Who to greet."}},
			"required": ["name"]
		}` + "`" + `),
		Category: ganglion.CategoryRead,
	}, greet)
}

// greet answers the tool call: its result, or its error, is what the
// model reads.
func greet(c *ganglion.ToolCall) (ganglion.ToolResult, error) {
	var args struct {
		Name string ` + "`json:\"name\"`" + `
	}
	if err := json.Unmarshal(c.Args(), &args); err != nil {
		return ganglion.ToolResult{}, err
	}
	return ganglion.ToolResult{Content: fmt.Sprintf("Hello, %s!", args.Name)}, nil
}

func main() {}
`

const guestConfig = `# An agent that loads the NAME extension, on the offline scripted model.
# From this directory, build the extension, then talk to the agent:
#
#   ganglion ext build .
#   ganglion run . "hello"
#
# To use a real model, replace the model: line (see Ganglion's README).
model: {provider: scripted, script: script.yaml}
agents:
  - name: assistant
    system: You are a helpful assistant.
    extensions:
      - ENTRY   # what ganglion ext build writes
`

const guestScript = `# What the scripted model answers, so that the agent runs offline and
# always the same way: it calls the extension's tool, then answers with
# what the tool returned. A real model decides this by itself.
agents:
  assistant:
    fallback:
      steps:
        - text: "Let me ask the NAME extension."
          tool_calls:
            - name: greet
              args: {name: world}
        - text: "The extension says: {{ .LastMessage }}"
`

const guestReadme = "# NAME\n\n" +
	"A Ganglion extension in Go, compiled to WebAssembly. `main.go` registers a turn\n" +
	"middleware that logs each turn and a tool, `greet`; grow it from there.\n\n" +
	"## Build, run, inspect\n\n" +
	"From this directory:\n\n" +
	"```sh\n" +
	"ganglion ext build .\n" +
	"ganglion run . \"hello\"\n" +
	"ganglion ext inspect WASMSH\n" +
	"```\n\n" +
	"- `ext build` compiles `WASM` with the Go toolchain (`GOOS=wasip1 GOARCH=wasm`)\n" +
	"  and loads it once, to check it;\n" +
	"- `run` sends a message to the agent of `ganglion.yaml`, which lists `WASM` in its\n" +
	"  `extensions:` and runs on the offline scripted model of `script.yaml` (to use a\n" +
	"  real model, replace its `model:` line); `--log-level info` shows the middleware's\n" +
	"  log lines;\n" +
	"- `ext inspect` shows the extension's manifest, hooks, tools, imports and exports.\n\n" +
	"Another config loads the extension with an entry of its own: `- wasm: path/to/WASM`.\n\n" +
	"## Test\n\n" +
	"Record a session once, then replay it after every change:\n\n" +
	"```sh\n" +
	"ganglion record cassettes/hello.cassette . \"hello\"\n" +
	"ganglion ext test .\n" +
	"```\n\n" +
	"- `record` runs the session (on any model) and writes every model answer and tool\n" +
	"  result into the cassette;\n" +
	"- `ext test` replays every cassette of `cassettes/` offline against the extension as\n" +
	"  it is now, and checks what happens against `cassettes/NAME.golden` (written the first\n" +
	"  time): a changed request to the model or a changed transcript is shown as a diff;\n" +
	"  `--update` accepts the change.\n\n" +
	"## The SDK\n\n" +
	"`main.go` imports the Go guest SDK, `github.com/ganglion-dev/ganglion/sdk`, which\n" +
	"`go get` cannot fetch. `SDKDIR/` is a copy of it, written by `ganglion ext init`\n" +
	"from the SDK that ganglion was built with, and `go.mod` replaces the module with\n" +
	"it: the extension builds offline, against the SDK of the host that loads it. Its\n" +
	"documentation: `go doc github.com/ganglion-dev/ganglion/sdk` (here), and the ABI in\n" +
	"`SDKDIR/sdk/ABI.md`.\n\n" +
	"Do not edit `SDKDIR/`. To move to the SDK of another ganglion, replace the copy\n" +
	"with that ganglion:\n\n" +
	"```sh\n" +
	"rm -r SDKDIR && ganglion ext init --sdk-only . && ganglion ext build .\n" +
	"```\n"

const guestGitignore = `# The built module and the agent's data (ganglion run).
/*.wasm
/.ganglion/
`

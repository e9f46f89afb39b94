package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
)

func newExtCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ext",
		Short: "Start, build, inspect and test extensions",
	}
	cmd.AddCommand(newExtInitCmd(stdout), newExtBuildCmd(stdout, stderr), newExtInspectCmd(stdout, stderr), newExtTestCmd(stdout, stderr))
	return cmd
}

// guestBuildArgs are the go build flags of a Go guest (see sdk/doc.go).
var guestBuildArgs = []string{"build", "-buildmode=c-shared", "-trimpath"}

func newExtBuildCmd(stdout, stderr io.Writer) *cobra.Command {
	var out, config, lang string
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Build a Go, Rust or AssemblyScript guest extension into a .wasm module",
		Long: `Build compiles the guest extension in DIR (default: the current directory)
into a WebAssembly module. The guest's language is found from DIR, or named
with --lang:

  - Cargo.toml: a Rust crate (a cdylib that uses the crate ganglion), built
    for wasm32-unknown-unknown in release with cargo:

      RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --target wasm32-unknown-unknown

    Debian's toolchain is preferred (apt-get install rustc cargo
    libstd-rust-dev-wasm32): a rustup rustc has no wasm32 target unless
    "rustup target add wasm32-unknown-unknown" fetched it, which needs the
    network. CARGO and RUSTC name another cargo and rustc.
  - package.json: an AssemblyScript package, compiled with the asc that npm
    install put in DIR/node_modules:

      node node_modules/assemblyscript/bin/asc.js --config asconfig.json -o OUT

  - go.mod, or none of these: the Go package in DIR, which uses the Go guest
    SDK (github.com/ganglion-dev/ganglion/sdk), built with the Go toolchain:

      GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o OUT

OUT defaults to DIR/<name of DIR>.wasm. The module is then loaded once, to check
that it is a valid extension, and its manifest is printed. A guest that checks
its config: section needs one to load: give it with --config, as YAML or JSON
text or as @FILE.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return failed(err)
			}
			if out == "" {
				out = filepath.Join(abs, filepath.Base(abs)+".wasm")
			} else if out, err = filepath.Abs(out); err != nil {
				return failed(err)
			}
			if lang == "" {
				if lang, err = guestLang(abs); err != nil {
					return err
				}
			} else if err := checkLang(lang); err != nil {
				return err
			}
			switch lang {
			case langRust:
				err = buildRust(cmd.Context(), abs, out, stderr)
			case langAssemblyScript:
				err = buildAssemblyScript(cmd.Context(), abs, out, stderr)
			default: // go.mod, or a package of a module above DIR
				err = buildGo(cmd.Context(), abs, out, stderr)
			}
			if err != nil {
				return failed(err)
			}
			info, err := inspect(cmd, out, config)
			if err != nil {
				hint := ""
				if config == "" {
					hint = " (if it needs its config: section, give one with --config)"
				}
				return failed(fmt.Errorf("built %s, but it does not load%s: %w", out, hint, err))
			}
			fmt.Fprintf(stdout, "built %s (%d bytes): %s %s, hooks %s, tools %s\n", out, info.Size, info.Manifest.Name,
				info.Manifest.Version, list(info.Hooks), list(info.Tools))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the module to write (default DIR/<name of DIR>.wasm)")
	cmd.Flags().StringVar(&config, "config", "", "the extension's config: section to load it with, as YAML or JSON, or @FILE")
	cmd.Flags().StringVar(&lang, "lang", "", "the guest's language, go, rust or assemblyscript (default: found from DIR)")
	return cmd
}

func newExtInspectCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		asJSON bool
		config string
	)
	cmd := &cobra.Command{
		Use:   "inspect FILE.wasm",
		Short: "Print a WebAssembly extension's manifest, hooks, tools, imports and exports",
		Long: `Inspect loads FILE.wasm in a sandbox, runs its ganglion_init, and prints what it
declares and registers: its manifest, hooks, tools and subscriptions, what it
asks the agent's config to grant (agents, secrets, files) and may use (state,
models), and the functions it imports and exports. A module that is not a valid extension is
refused with the reason. A guest that checks its config: section needs one to
load: give it with --config, as YAML or JSON text or as @FILE. Without one,
inspect still shows the manifest such a guest declared before it failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := inspect(cmd, args[0], config)
			var ie *wasm.InitError
			if err != nil && config == "" && errors.As(err, &ie) {
				fmt.Fprintf(stderr, "ganglion: %v\nganglion: showing the manifest it declared; to see what it registers, give its config with --config\n", err)
				info = wasm.Info{Manifest: ie.Manifest}
			} else if err != nil {
				return failed(err)
			}
			if asJSON {
				m := &info.Manifest
				for _, l := range []*[]string{&m.Hooks, &m.Tools, &m.Topics.Publish, &m.Topics.Subscribe, &m.Agents, &m.Secrets, &m.Pending,
					&m.Files.Read, &m.Files.Write,
					&info.Hooks, &info.Tools, &info.Subscriptions, &info.Imports, &info.Exports} {
					if *l == nil {
						*l = []string{}
					}
				}
				b, err := indentJSON(info)
				if err != nil {
					return failed(err)
				}
				fmt.Fprintf(stdout, "%s\n", b)
				return nil
			}
			m := info.Manifest
			fmt.Fprintf(stdout, "name:          %s\n", m.Name)
			fmt.Fprintf(stdout, "version:       %s\n", m.Version)
			fmt.Fprintf(stdout, "abi:           %d\n", m.ABI)
			fmt.Fprintf(stdout, "size:          %d bytes\n", info.Size)
			fmt.Fprintf(stdout, "hooks:         %s\n", list(info.Hooks))
			fmt.Fprintf(stdout, "tools:         %s\n", list(info.Tools))
			fmt.Fprintf(stdout, "subscriptions: %s\n", list(info.Subscriptions))
			fmt.Fprintf(stdout, "publishes:     %s\n", list(m.Topics.Publish))
			// What the config must grant, or what the module asks for.
			fmt.Fprintf(stdout, "agents:        %s\n", list(m.Agents))
			fmt.Fprintf(stdout, "secrets:       %s\n", list(m.Secrets))
			fmt.Fprintf(stdout, "files read:    %s\n", list(m.Files.Read))
			fmt.Fprintf(stdout, "files write:   %s\n", list(m.Files.Write))
			fmt.Fprintf(stdout, "pending:       %s\n", list(m.Pending))
			fmt.Fprintf(stdout, "http:          %s\n", list(m.HTTP))
			fmt.Fprintf(stdout, "state:         %v\n", m.State)
			fmt.Fprintf(stdout, "models:        %v\n", m.Models)
			fmt.Fprintf(stdout, "imports:       %s\n", list(info.Imports))
			fmt.Fprintf(stdout, "exports:       %s\n", list(info.Exports))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	cmd.Flags().StringVar(&config, "config", "", "the extension's config: section to load it with, as YAML or JSON, or @FILE")
	return cmd
}

// inspect loads the module at path with an in-memory cache, granting the
// secrets it asks for (nothing is provided to it) and giving it config
// (see extConfig), and describes it.
func inspect(cmd *cobra.Command, path, config string) (wasm.Info, error) {
	cfg, err := extConfig(config)
	if err != nil {
		return wasm.Info{}, err
	}
	code, err := os.ReadFile(path)
	if err != nil {
		return wasm.Info{}, err
	}
	e, err := wasm.NewEngine("", nil)
	if err != nil {
		return wasm.Info{}, err
	}
	defer e.Close()
	x, err := e.LoadBytes(cmd.Context(), strings.TrimSuffix(filepath.Base(path), ".wasm"), path, code, wasm.Limits{}, wasm.Grants{All: true, Config: cfg})
	if err != nil {
		return wasm.Info{}, err
	}
	info := x.Info()
	info.Size = len(code)
	return info, nil
}

// extConfig turns --config (YAML or JSON text, or @FILE; "" for none) into
// the JSON a guest reads its config from.
func extConfig(s string) (json.RawMessage, error) {
	if s == "" {
		return nil, nil
	}
	src, name := []byte(s), "--config"
	if path, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		src, name = b, path
	}
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML or JSON: %w", name, err)
	}
	return j, nil
}

func list(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

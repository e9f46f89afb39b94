package layers

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxExported bounds the module's public surface: what a program importing
// the module can name. That is the exported functions, types, constants
// and variables, and the exported methods of exported types, in the
// non-test .go files of importable packages: not internal/... at any
// depth (only the module itself can import those), sdk/ (the
// guest side), examples/, cmd/ or testdata, and not package main. A method
// of an unexported type is left out: it is reachable only as a method of
// an exported interface, which is counted already, and counting it would
// penalise the cut the limit asks for (returning an interface, not the
// implementation). Cuts lower it; it goes up only by what a new
// user-facing feature needs users to name, said in the commit (see
// RATIONALE.md, "The public surface: what is left"): 584, then 592 with
// runtime/server (Server, New, ServeHTTP, Close and its four options),
// 593 with events.Event.UnmarshalJSON (a client reads a server's events
// with their payload types), 596 with webhooks (server.Webhook,
// server.WithWebhooks, config.Webhook), 603 with the gui channel
// (server.GUI, NewGUI, GUI.Deliver, WithGUI, ChannelGUI;
// runtime.ErrDeliverLater, Runtime.DeliverAnswers), 605 with
// runtime.AgentInfo and Runtime.Describe (the API's agents and teams),
// 632 with record and replay (runtime.WithTape; package cassette's
// Recorder, Player, Cassette, Input, Call and Divergence with what makes,
// reads, converts and closes them, 20; package cassettetest's Replay,
// Record, Check, Golden, Options and Result), 635 with tracing
// (runtime.WithTracerProvider and WithMeterProvider, config.Telemetry),
// 637 with MCP servers as tool sources (config.MCPServer, AgentMCP), 640
// with store.Store.LoadMeta (a meta read that does not grow with the
// history) and the JetStream store a cluster shares (jetstream.Open,
// Option, WithReplicas), 641 with config.Cluster (the block that
// runs a config on several processes as one cluster), 642 with
// store.ErrFenced (the error of a commit by an owner that stalled past its
// lease, whose fence a new owner passed), 649 with the badger store's sizes
// (badger.WithMemTableSize, WithBlockCacheSize, their minimums
// MinMemTableSize and MinBlockCacheSize, which the config's validation
// shares, runtime.WithStoreOptions, config.Store and its Sizes: most of
// a process's memory at rest is Badger's, sized for a large database by
// default), 651 with server.WithTokenHint and Server.Guard (the 401 says
// where the token is kept; ganglion mcp guards its /mcp with the API's one
// token check), 655 with the reserved metadata keys (pipeline.CheckMetadata,
// IsReservedMetadata and ErrReservedMetadata: the rule every door for
// outside input applies, which the API's clients branch on) and
// runtime.Runtime.Deliver (where a Transport hands the runtime's own
// input, which Send now refuses), 657 with store.ErrUnavailable and
// ErrOutcomeUnknown (a store that did not answer: a transient outage the
// API answers 503, and a commit that may or may not have landed, which a
// writer must read back before going on), 659 with jetstream.WithRequestTimeout
// (the bound of every request of the JetStream store, which the cluster's
// request_timeout sets) and Runtime.Shutdown (a stop that gives running
// turns, routed ones included, a window and cuts the rest: what a
// server's --shutdown-timeout promises), 672 with the store's split into
// packages (issue 41: store/badger and store/jetstream, so that importing
// store links no third-party module; store.Backend, Checked, Fenced and
// ValidateStoredKey, what a store kept elsewhere builds on; package
// storetest, the conformance suite's Run and the helpers a store's own
// tests share with it, 9).
const maxExported = 672

// TestSurface holds the line on the number of exported identifiers. When it
// fails, unexport or delete before raising the limit: export what users
// call, keep machinery in internal/, and keep the packages a newcomer reads
// first small.
func TestSurface(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	per, err := countExported(root)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, names := range per {
		total += len(names)
	}
	if total <= maxExported {
		return
	}
	type pkg struct {
		dir   string
		names []string
	}
	var pkgs []pkg
	for dir, names := range per {
		pkgs = append(pkgs, pkg{dir, names})
	}
	slices.SortFunc(pkgs, func(a, b pkg) int {
		return cmp.Or(cmp.Compare(len(b.names), len(a.names)), strings.Compare(a.dir, b.dir))
	})
	var b strings.Builder
	for _, p := range pkgs[:min(len(pkgs), 8)] {
		fmt.Fprintf(&b, "\n  %-28s %4d", p.dir, len(p.names))
	}
	t.Errorf("the module exports %d identifiers, over the limit of %d; the top contributors:%s",
		total, maxExported, b.String())
}

// moduleRoot returns the directory of the module's go.mod, above the
// test's working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// countExported returns, per package directory relative to root, the
// public identifiers of its non-test files (see maxExported), as "kind
// name".
func countExported(root string) (map[string][]string, error) {
	per := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			base := d.Name()
			if rel != "." && (top == "sdk" || top == "examples" || top == "cmd" || base == "internal" || base == "testdata" ||
				strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		per[dir] = append(per[dir], exported(f)...)
		return nil
	})
	return per, err
}

// exported lists the exported top-level identifiers of f.
func exported(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			switch {
			case !d.Name.IsExported():
			case d.Recv == nil:
				names = append(names, "func "+d.Name.Name)
			case !ast.IsExported(recvName(d.Recv.List[0].Type)):
			default:
				names = append(names, "method "+recvName(d.Recv.List[0].Type)+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						names = append(names, "type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// recvName is the name of a method's receiver type, without pointer or type
// parameters.
func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineNamesNoFeature: the turn engine, runtime/internal/engine,
// links none of the runtime's features, directly or not: not the
// cluster, MCP, telemetry, the tape, the pauses, delegation, nor their
// third-party modules. The
// features plug into the runtime's seams instead (RATIONALE.md, "The
// runtime as a facade").
func TestEngineNamesNoFeature(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "../../runtime/internal/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps returned %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		rel, ours := strings.CutPrefix(d, module+"/")
		switch {
		case !ours && strings.Contains(strings.SplitN(d, "/", 2)[0], "."):
			// A third-party module: the engine needs none but the
			// tokenizer, which counts the context window, and its
			// regular expressions.
			if !strings.HasPrefix(d, "github.com/tiktoken-go/tokenizer") && !strings.HasPrefix(d, "github.com/dlclark/regexp2") {
				t.Errorf("the engine links %s", d)
			}
		case !ours:
		case strings.HasPrefix(rel, "runtime/internal/coord"), rel == "runtime/cluster", strings.HasPrefix(rel, "runtime/internal/mcpsrc"),
			strings.HasPrefix(rel, "runtime/internal/telemetry"), strings.HasPrefix(rel, "runtime/internal/tape"),
			strings.HasPrefix(rel, "runtime/internal/seam"), rel == "runtime/mcp", rel == "runtime/otlp",
			rel == "runtime/internal/pause", rel == "runtime/internal/delegation", rel == "runtime/task",
			rel == "runtime" || strings.HasPrefix(rel, "runtime/model/"), strings.HasPrefix(rel, "store/"):
			t.Errorf("the engine links %s, a feature of the runtime", rel)
		}
	}
}

// The facade's budget: package runtime keeps Runtime, New, the options,
// the public methods (which delegate), the agent roster and the extension
// loader; the turn loop and the features live in packages of their own
// (RATIONALE.md, "The facade's budget").
const (
	facadeLines  = 3000 // non-test lines of package runtime
	facadeFiles  = 15   // its non-test files
	facadeFields = 12   // the fields of Runtime
)

// TestFacadeBudget: package runtime stays a facade, within its lines,
// files and Runtime's fields.
func TestFacadeBudget(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "runtime", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines, n, fields := 0, 0, -1
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n++
		lines += strings.Count(string(src), "\n")
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(node ast.Node) bool {
			if ts, ok := node.(*ast.TypeSpec); ok && ts.Name.Name == "Runtime" {
				if st, ok := ts.Type.(*ast.StructType); ok {
					fields = 0
					for _, fl := range st.Fields.List {
						fields += max(len(fl.Names), 1)
					}
				}
			}
			return true
		})
	}
	if fields < 0 {
		t.Fatal("no struct Runtime in package runtime")
	}
	if lines > facadeLines || n > facadeFiles || fields > facadeFields {
		t.Errorf("package runtime: %d non-test lines in %d files, Runtime with %d fields; the facade's budget is %d lines, %d files, %d fields: "+
			"move what is not the facade into a package on a seam", lines, n, fields, facadeLines, facadeFiles, facadeFields)
	}
	t.Logf("package runtime: %d non-test lines in %d files, Runtime with %d fields", lines, n, fields)
}

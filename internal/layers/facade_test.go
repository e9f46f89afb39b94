package layers

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineNamesNoFeature: the turn engine, runtime/internal/engine,
// links none of the runtime's features, directly or not: not the
// cluster, MCP, telemetry, the tape, nor their third-party modules. The
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
			rel == "runtime" || strings.HasPrefix(rel, "runtime/model/"), strings.HasPrefix(rel, "store/"):
			t.Errorf("the engine links %s, a feature of the runtime", rel)
		}
	}
}

// turnLoopFiles are the files of package runtime that move into the turn
// engine: the turn and step loop, instances, the window, reduction,
// interrupted calls and secrets.
var turnLoopFiles = []string{"turn.go", "instance.go", "window.go", "reduce.go", "interrupt.go", "secrets.go"}

// TestTurnLoopCallsSeams: until the turn loop moves into the engine, its
// files in package runtime already name no tracing nor the tape: they
// call the engine's seams for them (engine.Tracer, engine.ToolRunner), so
// that the move takes no feature along. Once the files have moved,
// TestEngineNamesNoFeature holds the rule.
func TestTurnLoopCallsSeams(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range turnLoopFiles {
		path := filepath.Join(root, "runtime", name)
		if _, err := os.Stat(path); os.IsNotExist(err) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module+"/runtime/internal/telemetry" || p == module+"/runtime/internal/tape" || strings.HasPrefix(p, "go.opentelemetry.io/") {
				t.Errorf("runtime/%s imports %s: the turn loop traces through engine.Tracer and runs tools through engine.ToolRunner", name, p)
			}
		}
	}
	if checked == 0 {
		t.Skip("the turn loop's files left package runtime; TestEngineNamesNoFeature holds the rule")
	}
}

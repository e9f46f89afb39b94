package approval

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func mustParse(t testing.TB, src string) *Rules {
	t.Helper()
	r, err := parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return r
}

func call(tool string, args any) Call {
	b, _ := json.Marshal(args)
	return Call{Tool: tool, Args: b, Agent: "a", Instance: "k", Turn: "turn-1", Step: 1}
}

const decideRules = `
default: ask
protected: ["**/.env*"]
rules:
  - name: reads
    when: tool.category == "read"
    decision: approve
  - name: notes are special
    when: args.path == "notes.txt"
    decision: ask
    reason: notes need a look
  - name: no secrets
    when: any(paths, {protected(#)})
    decision: deny
    reason: secret files are off limits
  - name: brittle
    when: args.n > 3
    decision: approve
`

func TestDecide(t *testing.T) {
	r := mustParse(t, decideRules)
	tests := []struct {
		name     string
		call     Call
		want     Decision
		matched  []string
		errors   int
		explains string
	}{
		{"approve", call("read_file", map[string]any{"path": "a.go", "n": 1}), Approve, []string{"reads"}, 0,
			`rule "reads" decides approve`},
		{"strictest wins: ask over approve", call("read_file", map[string]any{"path": "notes.txt", "n": 1}), Ask, []string{"reads", "notes are special"}, 0,
			`rule "notes are special" decides ask: notes need a look; also matched "reads" (approve)`},
		{"strictest wins: deny over all", call("read_file", map[string]any{"path": ".env", "n": 1}), Deny, []string{"reads", "no secrets"}, 0,
			`rule "no secrets" decides deny: secret files are off limits; also matched "reads" (approve)`},
		{"default", call("write_file", map[string]any{"path": "a.go", "n": 1}), Ask, []string{}, 0,
			"no rule matched: the default, ask"},
		{"an evaluation error denies", call("write_file", map[string]any{"path": "a.go"}), Deny, []string{"brittle"}, 1,
			`rule "brittle" decides deny: the rule failed to evaluate: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.Decide(tt.call)
			if res.Decision != tt.want {
				t.Errorf("decision = %s, want %s (%s)", res.Decision, tt.want, res.Explanation)
			}
			var got []string
			for _, m := range res.Matched {
				got = append(got, m.Rule)
			}
			if strings.Join(got, ",") != strings.Join(tt.matched, ",") {
				t.Errorf("matched = %q, want %q", got, tt.matched)
			}
			if len(res.Errors) != tt.errors {
				t.Errorf("errors = %q, want %d", res.Errors, tt.errors)
			}
			if !strings.HasPrefix(res.Explanation, tt.explains) {
				t.Errorf("explanation = %q\nwant prefix %q", res.Explanation, tt.explains)
			}
		})
	}
}

// TestLoadErrors: every refusal names the file, line and column, with a
// caret; golden files hold the rendering.
func TestLoadErrors(t *testing.T) {
	tests := []struct{ name, src string }{
		{"syntax", "default: ask\nrules:\n  - name: bad\n    when: tool.name == \n    decision: approve\n"},
		{"not_boolean", "default: ask\nrules:\n  - name: number\n    when: step + 1\n    decision: approve\n"},
		{"unknown_field", "default: ask\nrules:\n  - name: x\n    when: true\n    decison: approve\n"},
		{"unknown_variable", "default: ask\nrules:\n  - name: typo\n    when: tool.nmae == \"x\"\n    decision: deny\n"},
		{"block_scalar", "default: ask\nrules:\n  - name: long\n    when: |\n      tool.name == \"x\" &&\n      args.y ==\n    decision: deny\n"},
		{"bad_decision", "default: maybe\nrules:\n  - name: x\n    when: true\n    decision: allow\n"},
		{"duplicate_and_unnamed", "default: ask\nrules:\n  - name: x\n    when: true\n    decision: deny\n  - name: x\n    when: true\n    decision: deny\n  - when: true\n    decision: deny\n"},
		{"failing_test", "default: ask\nrules:\n  - name: reads\n    when: tool.category == \"read\"\n    decision: approve\ntests:\n  - name: writes are asked\n    call: {tool: write_file, args: {path: a}}\n    expect: approve\n"},
		{"bad_glob", "default: ask\nprotected: [\"[\"]\nrules: []\n"},
		{"comment_cuts_the_expression", "default: ask\nrules:\n  - name: env\n    when: any(paths, {glob(\"**/.env*\", #)})\n    decision: deny\n"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("rules.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("parse accepted it")
			}
			golden(t, "load_"+tt.name, err.Error()+"\n")
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// TestAdversarialExpressions: huge, deep and expensive expressions are
// refused at load or evaluated in bounded time.
func TestAdversarialExpressions(t *testing.T) {
	huge := "tool.name == \"" + strings.Repeat("x", 1<<20) + "\""
	many := "step == " + strings.Repeat("1+", 6000) + "1"
	tests := []struct{ name, when, want string }{
		{"1 MB expression", huge, "over the limit"},
		{"too many nodes", many, "exceeds maximum allowed nodes"},
		{"deep nesting", strings.Repeat("(", 20000) + "true" + strings.Repeat(")", 20000), "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "default: ask\nrules:\n  - name: evil\n    when: '" + tt.when + "'\n    decision: approve\n"
			_, err := parse("rules.yaml", []byte(src))
			if err == nil {
				t.Fatal("accepted")
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %.300s\nwant it to contain %q", err, tt.want)
			}
		})
	}
	// Deep nesting within the size limit compiles, and evaluates at once.
	deep := mustParse(t, "default: ask\nrules:\n  - name: deep\n    when: '"+strings.Repeat("(", 5000)+"step == 1"+strings.Repeat(")", 5000)+"'\n    decision: approve\n")
	if res := deep.Decide(call("read_file", map[string]any{})); res.Decision != Approve {
		t.Errorf("deep = %+v", res)
	}
	// Arguments too large to judge are denied without running a rule.
	big := mustParse(t, "default: approve\nrules: []\n")
	if res := big.Decide(call("write_file", map[string]any{"content": strings.Repeat("x", maxArgsSize)})); res.Decision != Deny ||
		!strings.HasPrefix(res.Explanation, "the arguments are 1048590 bytes, over the 1048576 the rules judge") {
		t.Errorf("huge arguments = %+v", res)
	}
	// A huge range is refused when evaluated, and counts as deny.
	r := mustParse(t, "default: approve\nrules:\n  - name: range\n    when: len(1..100000000) > 0\n    decision: approve\n")
	res := r.Decide(call("read_file", map[string]any{}))
	if res.Decision != Deny || len(res.Errors) != 1 {
		t.Fatalf("huge range = %+v, want a deny from the evaluation error", res)
	}
}

// TestStarterRules: the starter file loads, and its own tests pass.
func TestStarterRules(t *testing.T) {
	if _, err := Load(filepath.Join("..", "..", "examples", "approval", "rules.yaml")); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse: the loader never panics, whatever the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(decideRules))
	if b, err := os.ReadFile(filepath.Join("..", "..", "examples", "approval", "rules.yaml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("default: ask\nrules:\n  - name: x\n    when: |\n      args.a[0] in [\"b\"]\n    decision: deny\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parse("rules.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rules.yaml:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		res := r.Decide(call("execute_command", map[string]any{"command": "git status", "path": "x"}))
		if d := res.Decision; d != Approve && d != Ask && d != Deny || res.Explanation == "" {
			t.Fatalf("Decide = %+v, want approve, ask or deny and why", res)
		}
		for _, m := range res.Matched {
			if m.Decision.strictness() > res.Decision.strictness() {
				t.Fatalf("rule %q decides %s but the result is %s: the strictest must win", m.Rule, m.Decision, res.Decision)
			}
		}
	})
}

// TestGuardsChangeNothing: the guards that let Decide skip rules decide
// exactly as running every rule would.
func TestGuardsChangeNothing(t *testing.T) {
	src := thousandRules()
	guarded, err := parse("g.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := parse("p.yaml", []byte(src))
	skipped := 0
	for i := range plain.rules {
		if len(plain.rules[i].guards) > 0 {
			skipped++
		}
		plain.rules[i].guards = nil
	}
	if skipped < 900 {
		t.Fatalf("only %d of 1,000 rules have guards", skipped)
	}
	calls := []Call{
		call("execute_command", map[string]any{"command": "git status && ls"}),
		call("execute_command", map[string]any{"command": "cmd_6 x; cmd_11"}),
		call("read_file", map[string]any{"path": "file_3.txt"}),
		call("read_file", map[string]any{"path": 3}),
		call("write_file", map[string]any{"path": "src_2/a.go"}),
		call("tool_5", map[string]any{"path": "dir_5/x"}),
		{Tool: "read_file", Args: []byte(`{}`), Agent: "agent_4", Step: 11},
	}
	for _, c := range calls {
		g, p := guarded.Decide(c), plain.Decide(c)
		gj, _ := json.Marshal(g)
		pj, _ := json.Marshal(p)
		if string(gj) != string(pj) {
			t.Errorf("%s %s:\nguarded %s\nplain   %s", c.Tool, c.Args, gj, pj)
		}
	}
}

// TestMCPToolEnv: a rule sees an MCP tool's server and name on it.
func TestMCPToolEnv(t *testing.T) {
	r := mustParse(t, `default: approve
rules:
  - name: no deleting files
    when: tool.category == "mcp" && tool.server == "files" && tool.serverTool == "delete_file"
    decision: deny
`)
	tests := []struct {
		tool string
		cat  pipeline.ToolCategory
		want Decision
	}{
		{"files__delete_file", pipeline.CategoryMCP, Deny},
		{"files__read_file", pipeline.CategoryMCP, Approve},
		{"other__delete_file", pipeline.CategoryMCP, Approve},
		{"files__delete_file", pipeline.CategoryOther, Approve}, // not an MCP tool: no server
	}
	for _, tt := range tests {
		if res := r.Decide(Call{Tool: tt.tool, Category: tt.cat, Args: []byte(`{}`)}); res.Decision != tt.want {
			t.Errorf("%s (%s): %s, want %s (%s)", tt.tool, tt.cat, res.Decision, tt.want, res.Explanation)
		}
	}
}

package approval

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	exprast "github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Decision is what a rule decides for a tool call.
type Decision string

// The decisions, from the least strict to the strictest.
const (
	Approve Decision = "approve" // the tool runs
	Ask     Decision = "ask"     // a human decides; the turn pauses
	Deny    Decision = "deny"    // the tool does not run; the model reads why
)

// timedOut is the answer of an ask nobody answered in time: handled as
// deny.
const timedOut Decision = "timeout"

// strictness orders decisions: the strictest matching rule wins.
func (d Decision) strictness() int {
	switch d {
	case Approve:
		return 0
	case Ask:
		return 1
	}
	return 2
}

func parseDecision(s string) (Decision, bool) {
	switch d := Decision(s); d {
	case Approve, Ask, Deny:
		return d, true
	}
	return "", false
}

// Limits of a rules file. The file itself is read with yamlsrc.ReadFile: at
// most 1 MiB, whose collections nest at most 100 deep.
const (
	maxRules          = 10000
	maxExpressionSize = 16 << 10 // bytes of one when
	maxNodes          = 5000     // AST nodes of one when
	maxArgsSize       = 1 << 20  // bytes of a call's arguments; larger is denied
)

// Rules is a compiled rules file. It is immutable and safe for concurrent
// use.
type Rules struct {
	Name       string
	Default    Decision
	protected  []string
	categories map[string]pipeline.ToolCategory
	rules      []rule
}

type rule struct {
	name     string
	when     string
	decision Decision
	reason   string
	program  *vm.Program
	// guards are the rule's leading conditions that the host can test
	// without running the expression (tool.name == "x", args.path == "y",
	// any(shell.commands, {.name == "z"}), ...): Decide skips the rule when
	// one is false, which is what left-to-right short-circuit evaluation
	// would do, since none of them can fail.
	guards []guard
}

// guard is a leading condition of a rule's when.
type guard struct {
	kind  guardKind
	field string // for guardField: "tool.name", "tool.category", "agent"; for guardArg: the key
	value string
}

type guardKind uint8

const (
	guardField   guardKind = iota + 1 // env field == value
	guardArg                          // args[field] == value (a string)
	guardCommand                      // some shell command is named value
)

// holds reports whether the guard's condition holds for e.
func (g *guard) holds(e *Env) bool {
	switch g.kind {
	case guardField:
		switch g.field {
		case "tool.name":
			return e.Tool.Name == g.value
		case "tool.category":
			return e.Tool.Category == g.value
		case "agent":
			return e.Agent == g.value
		}
	case guardArg:
		s, ok := e.Args[g.field].(string)
		return ok && s == g.value
	case guardCommand:
		for i := range e.Shell.Commands {
			if e.Shell.Commands[i].Name == g.value {
				return true
			}
		}
		return false
	}
	return true
}

// The YAML documents of a rules file.
type fileDoc struct {
	Default    string            `yaml:"default"`
	Protected  []string          `yaml:"protected"`
	Categories map[string]string `yaml:"categories"`
	Rules      []ruleDoc         `yaml:"rules"`
	Tests      []testDoc         `yaml:"tests"`
}

type ruleDoc struct {
	Name     string   `yaml:"name"`
	When     ast.Node `yaml:"when"`
	Decision string   `yaml:"decision"`
	Reason   string   `yaml:"reason"`
}

type testDoc struct {
	Name   string  `yaml:"name"`
	Call   CallDoc `yaml:"call"`
	Expect string  `yaml:"expect"`
}

// CallDoc is a tool call as a rules file's tests and ganglion rules eval
// write it.
type CallDoc struct {
	Tool     string         `yaml:"tool" json:"tool"`
	Args     map[string]any `yaml:"args" json:"args"`
	Agent    string         `yaml:"agent" json:"agent"`
	Instance string         `yaml:"instance" json:"instance"`
	Chain    []string       `yaml:"chain" json:"chain"`
}

// Load reads and compiles the rules file at path, and runs its tests. Every
// error names the file, the line and the column, with the line and a caret.
func Load(path string) (*Rules, error) { return load(path) }

func load(path string, opts ...option) (*Rules, error) {
	data, err := yamlsrc.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return parse(path, data, opts...)
}

// option configures parse.
type option func(*parseConfig)

type parseConfig struct{ workspace string }

// withWorkspace resolves paths against dir when the file's tests run.
func withWorkspace(dir string) option { return func(c *parseConfig) { c.workspace = dir } }

// parse compiles a rules file named name and runs its tests. Every error
// names the file, the line and the column, with the line and a caret.
func parse(name string, data []byte, opts ...option) (*Rules, error) {
	var pc parseConfig
	for _, o := range opts {
		o(&pc)
	}
	// Cheap checks first: the parser's cost grows fast with size and depth.
	if err := yamlsrc.Check(data); err != nil {
		var le *yamlsrc.LimitError
		if errors.As(err, &le) && le.Line > 0 {
			return nil, (&source{name: name, lines: yamlsrc.Lines(data)}).errorf(le.Line, le.Column, "%s", le.Msg)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	src := &source{name: name, lines: yamlsrc.Lines(data)}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, src.yamlError(err)
	}
	var doc fileDoc
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s: the file is empty (it needs default and rules)", name)
	}
	body := f.Docs[0].Body
	src.body = body
	if err := yaml.NodeToValue(body, &doc, yaml.DisallowUnknownField()); err != nil {
		return nil, src.yamlError(err)
	}
	r := &Rules{Name: name, protected: doc.Protected, categories: map[string]pipeline.ToolCategory{}}
	var errs []error
	at := func(path string) (int, int) { return position(body, path) }
	d, ok := parseDecision(doc.Default)
	if !ok {
		l, c := at("$.default")
		errs = append(errs, src.errorf(l, c, "default must be approve, ask or deny, got %q", doc.Default))
	}
	r.Default = d
	for tool, cat := range doc.Categories {
		switch c := pipeline.ToolCategory(cat); c {
		case pipeline.CategoryRead, pipeline.CategoryWrite, pipeline.CategoryExecute, pipeline.CategoryBrowser, pipeline.CategoryMCP, pipeline.CategoryOther:
			r.categories[tool] = c
		default:
			l, c := at("$.categories." + tool)
			errs = append(errs, src.errorf(l, c, "category of %q must be read, write, execute, browser, mcp or other, got %q", tool, cat))
		}
	}
	for i, p := range doc.Protected {
		if !validGlob(p) {
			l, c := at(fmt.Sprintf("$.protected[%d]", i))
			errs = append(errs, src.errorf(l, c, "protected: %q is not a valid glob pattern", p))
		}
	}
	if len(doc.Rules) > maxRules {
		errs = append(errs, fmt.Errorf("%s: %d rules is over the limit of %d", name, len(doc.Rules), maxRules))
		doc.Rules = nil
	}
	names := map[string]bool{}
	for i, rd := range doc.Rules {
		path := fmt.Sprintf("$.rules[%d]", i)
		l, c := at(path)
		label := fmt.Sprintf("rule %d", i+1)
		if rd.Name != "" {
			label = fmt.Sprintf("rule %q", rd.Name)
		}
		if rd.Name == "" {
			errs = append(errs, src.errorf(l, c, "%s has no name", label))
		} else if names[rd.Name] {
			errs = append(errs, src.errorf(l, c, "%s: duplicate name", label))
		}
		names[rd.Name] = true
		dec, ok := parseDecision(rd.Decision)
		if !ok {
			l, c := at(path + ".decision")
			errs = append(errs, src.errorf(l, c, "%s: decision must be approve, ask or deny, got %q", label, rd.Decision))
		}
		w, err := whenOf(rd.When)
		if err != nil {
			errs = append(errs, src.errorf(l, c, "%s: when %v", label, err))
			continue
		}
		when := w.expr
		if len(when) > maxExpressionSize {
			at := src.place(w, 0)
			errs = append(errs, src.errorf(at.Line, at.Column, "%s: when is %d bytes, over the limit of %d", label, len(when), maxExpressionSize))
			continue
		}
		prog, err := r.compile(when)
		if err != nil {
			at, msg := src.exprError(w, err)
			if w.plain && strings.Contains(src.from(src.place(w, 0)), " #") {
				msg += ` (YAML reads " #" and what follows as a comment: quote the expression)`
			}
			errs = append(errs, src.errorf(at.Line, at.Column, "%s: %s", label, msg))
			continue
		}
		r.rules = append(r.rules, rule{name: rd.Name, when: when, decision: dec, reason: rd.Reason, program: prog, guards: leadingGuards(prog.Node())})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// The file's own tests.
	for i, td := range doc.Tests {
		path := fmt.Sprintf("$.tests[%d]", i)
		l, c := at(path)
		label := fmt.Sprintf("test %d", i+1)
		if td.Name != "" {
			label = fmt.Sprintf("test %q", td.Name)
		}
		want, ok := parseDecision(td.Expect)
		if !ok {
			l, c := at(path + ".expect")
			errs = append(errs, src.errorf(l, c, "%s: expect must be approve, ask or deny, got %q", label, td.Expect))
			continue
		}
		res := r.Decide(td.Call.Call(pc.workspace))
		if res.Decision != want {
			errs = append(errs, src.errorf(l, c, "%s failed: %s %s: got %s, want %s (%s)", label, td.Call.Tool, compactJSON(td.Call.Args), res.Decision, want, res.Explanation))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// compile compiles a when expression against the rule environment.
func (r *Rules) compile(when string) (*vm.Program, error) {
	opts := append([]expr.Option{expr.Env(Env{}), expr.AsBool(), expr.MaxNodes(maxNodes)}, r.functionsFor()...)
	return expr.Compile(when, opts...)
}

// ruleWhen is a rule's when: its node and its expression.
type ruleWhen struct {
	node  ast.Node
	expr  string
	plain bool // written without quotes or a block indicator
}

// whenOf reads a rule's when from its node n.
func whenOf(n ast.Node) (ruleWhen, error) {
	if n == nil {
		return ruleWhen{}, errors.New("is missing")
	}
	w := ruleWhen{node: n}
	tok := n.GetToken()
	switch v := n.(type) {
	case *ast.StringNode:
		w.expr, w.plain = v.Value, tok.Type == token.StringType
	case *ast.LiteralNode:
		w.expr = v.Value.Value
	case *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.NullNode:
		// when: true, when: 1 — an expression YAML happened to type.
		w.expr, w.plain = tok.Value, true
	default:
		return ruleWhen{}, fmt.Errorf("must be a string (an expr expression), got %s", n.Type())
	}
	return w, nil
}

// exprError returns where in the file an expr compile error of w is, and
// its message without expr's own snippet: the character expr names, or
// the start of the expression if expr names none.
func (s *source) exprError(w ruleWhen, err error) (yamlsrc.Pos, string) {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return s.place(w, 0), err.Error()
	}
	return s.place(w, max(fe.From, 0)), fe.Message
}

// place returns where character k of w's expression is in the file (its
// end if k is past it), through the style of the scalar that holds it:
// quotes, escapes, folded lines, block indentation. If the scalar cannot be
// read, it returns where the YAML parser says the scalar starts.
func (s *source) place(w ruleWhen, k int) yamlsrc.Pos {
	tok := w.node.GetToken()
	at := yamlsrc.Pos{Line: tok.Position.Line, Column: tok.Position.Column}
	from, indent := at, 0
	if mv := s.keyOf(w.node); mv != nil {
		// From the colon on: the parser's column of a plain scalar is
		// off by the blanks after it.
		colon := mv.Start.Position
		from = yamlsrc.Pos{Line: colon.Line, Column: colon.Column + 1}
		indent = mv.Key.GetToken().Position.Column - 1
	}
	pos, ok := yamlsrc.ScalarPositions(s.lines, from, indent, w.expr)
	if !ok {
		return at
	}
	return pos[min(k, len(pos)-1)]
}

// keyOf returns the mapping entry whose value is n, nil if there is none.
func (s *source) keyOf(n ast.Node) *ast.MappingValueNode {
	if s.keys == nil && s.body != nil {
		s.keys = map[ast.Node]*ast.MappingValueNode{}
		for _, e := range ast.Filter(ast.MappingValueType, s.body) {
			mv := e.(*ast.MappingValueNode)
			s.keys[mv.Value] = mv
		}
	}
	return s.keys[n]
}

// position returns the line and column of the node at path in body.
func position(body ast.Node, path string) (int, int) {
	p, err := yaml.PathString(path)
	if err != nil {
		return 0, 0
	}
	n, err := p.FilterNode(body)
	if err != nil || n == nil {
		return 0, 0
	}
	if mv, ok := n.(*ast.MappingValueNode); ok {
		n = mv.Value
	}
	pos := n.GetToken().Position
	return pos.Line, pos.Column
}

type source struct {
	name  string
	lines []string
	body  ast.Node                           // the parsed file, once it is
	keys  map[ast.Node]*ast.MappingValueNode // each value's entry, built from body when first needed
}

var yamlPos = regexp.MustCompile(`^\[(\d+):(\d+)\] (.*)`)

// yamlError renders a YAML library error as the others: file:line:col,
// the message, the line and a caret.
func (s *source) yamlError(err error) error {
	first, _, _ := strings.Cut(err.Error(), "\n")
	if m := yamlPos.FindStringSubmatch(first); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		return s.errorf(line, col, "%s", m[3])
	}
	return fmt.Errorf("%s: %s", s.name, first)
}

// from returns the text of the line of p from p on.
func (s *source) from(p yamlsrc.Pos) string {
	if p.Line < 1 || p.Line > len(s.lines) {
		return ""
	}
	r := []rune(s.lines[p.Line-1])
	return string(r[min(max(p.Column-1, 0), len(r)):])
}

// errorf is an error at line and column, with the line and a caret.
func (s *source) errorf(line, col int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line <= 0 {
		return fmt.Errorf("%s: %s", s.name, msg)
	}
	return fmt.Errorf("%s:%d:%d: %s\n%s", s.name, line, col, msg, yamlsrc.Snippet(s.lines, line, col))
}

func compactJSON(v any) string {
	b, err := jsonMarshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(bytes.TrimSpace(b))
}

// Rules returns the names of the rules, in file order.
func (r *Rules) RuleNames() []string {
	names := make([]string, len(r.rules))
	for i, ru := range r.rules {
		names[i] = ru.name
	}
	return slices.Clip(names)
}

// leadingGuards returns the guards among the leading conditions of n's
// && chain, up to the first condition that is not one.
func leadingGuards(n exprast.Node) []guard {
	var conj []exprast.Node
	var flatten func(exprast.Node)
	flatten = func(n exprast.Node) {
		if b, ok := n.(*exprast.BinaryNode); ok && (b.Operator == "&&" || b.Operator == "and") {
			flatten(b.Left)
			flatten(b.Right)
			return
		}
		conj = append(conj, n)
	}
	flatten(n)
	var gs []guard
	for _, c := range conj {
		g, ok := asGuard(c)
		if !ok {
			break
		}
		gs = append(gs, g)
	}
	return gs
}

// asGuard recognises a condition a guard can test.
func asGuard(n exprast.Node) (guard, bool) {
	switch v := n.(type) {
	case *exprast.BinaryNode:
		if v.Operator != "==" {
			return guard{}, false
		}
		for _, pair := range [2][2]exprast.Node{{v.Left, v.Right}, {v.Right, v.Left}} {
			s, ok := pair[1].(*exprast.StringNode)
			if !ok {
				continue
			}
			if f := envField(pair[0]); f != "" {
				return guard{kind: guardField, field: f, value: s.Value}, true
			}
			if k := argKey(pair[0]); k != "" {
				return guard{kind: guardArg, field: k, value: s.Value}, true
			}
		}
	case *exprast.BuiltinNode:
		// any(shell.commands, {.name == "x"})
		if v.Name != "any" || len(v.Arguments) != 2 || !isMember(v.Arguments[0], "shell", "commands") {
			return guard{}, false
		}
		pred, ok := v.Arguments[1].(*exprast.PredicateNode)
		if !ok {
			return guard{}, false
		}
		b, ok := pred.Node.(*exprast.BinaryNode)
		if !ok || b.Operator != "==" {
			return guard{}, false
		}
		m, ok := b.Left.(*exprast.MemberNode)
		s, ok2 := b.Right.(*exprast.StringNode)
		if !ok || !ok2 || m.Optional {
			return guard{}, false
		}
		p, ok := m.Node.(*exprast.PointerNode)
		prop, ok2 := m.Property.(*exprast.StringNode)
		if ok && ok2 && p.Name == "" && prop.Value == "name" {
			return guard{kind: guardCommand, value: s.Value}, true
		}
	}
	return guard{}, false
}

// envField names the env field n reads, if a guard can test it.
func envField(n exprast.Node) string {
	if id, ok := n.(*exprast.IdentifierNode); ok && id.Value == "agent" {
		return "agent"
	}
	if isMember(n, "tool", "name") {
		return "tool.name"
	}
	if isMember(n, "tool", "category") {
		return "tool.category"
	}
	return ""
}

// argKey returns KEY for args.KEY.
func argKey(n exprast.Node) string {
	m, ok := n.(*exprast.MemberNode)
	if !ok || m.Optional {
		return ""
	}
	id, ok := m.Node.(*exprast.IdentifierNode)
	prop, ok2 := m.Property.(*exprast.StringNode)
	if ok && ok2 && id.Value == "args" {
		return prop.Value
	}
	return ""
}

func isMember(n exprast.Node, object, property string) bool {
	m, ok := n.(*exprast.MemberNode)
	if !ok || m.Optional {
		return false
	}
	id, ok := m.Node.(*exprast.IdentifierNode)
	prop, ok2 := m.Property.(*exprast.StringNode)
	return ok && ok2 && id.Value == object && prop.Value == property
}

package shell

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// walker turns a syntax tree into a [Script]. It visits every node once, so
// its work is linear in the size of the tree. The first error stops it.
type walker struct {
	src    string
	script Script
	depth  int
	err    *Error
}

func (w *walker) fail(pos syntax.Pos, msg string) {
	if w.err == nil {
		w.err = errorAt(w.src, int(pos.Offset()), msg)
	}
}

// enter opens one level of nesting at n; it reports false, and records the
// error, when that goes past maxDepth. Every enter that returns true is
// paired with a leave.
func (w *walker) enter(n syntax.Node) bool {
	if w.err != nil {
		return false
	}
	if w.depth >= maxDepth {
		w.fail(n.Pos(), fmt.Sprintf("nesting deeper than %d levels", maxDepth))
		return false
	}
	w.depth++
	return true
}

func (w *walker) leave() { w.depth-- }

// add appends c to the script and returns its index, or -1 when that goes
// past maxCommands.
func (w *walker) add(pos syntax.Pos, c Command) int {
	if w.err != nil {
		return -1
	}
	if len(w.script.Commands) >= maxCommands {
		w.fail(pos, fmt.Sprintf("more than %d commands", maxCommands))
		return -1
	}
	w.script.Commands = append(w.script.Commands, c)
	return len(w.script.Commands) - 1
}

// set replaces the command at index i, as returned by add.
func (w *walker) set(i int, c Command) {
	if i >= 0 && w.err == nil {
		w.script.Commands[i] = c
	}
}

// source returns the source text of n.
func (w *walker) source(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	start = min(max(start, 0), len(w.src))
	end = min(max(end, start), len(w.src))
	return w.src[start:end]
}

func (w *walker) stmts(list []*syntax.Stmt) {
	if len(list) > 1 {
		w.script.HasSequence = true
	}
	for _, st := range list {
		if w.err != nil {
			return
		}
		w.stmt(st)
	}
}

func (w *walker) stmt(st *syntax.Stmt) {
	if st.Background || st.Coprocess || st.Disown {
		w.script.HasBackground = true
		w.script.HasSequence = true
		w.add(st.Pos(), Command{Name: "&"})
	}
	if st.Cmd == nil {
		// Only redirections, such as ">file".
		w.add(st.Pos(), Command{})
	} else {
		w.command(st.Cmd)
	}
	w.redirects(st.Redirs)
}

func (w *walker) redirects(list []*syntax.Redirect) {
	for _, r := range list {
		if w.err != nil {
			return
		}
		w.script.HasRedirect = true
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			// r.Word is the delimiter, not expanded; the body is.
			w.checkQuotes(r.Word)
			w.heredoc(r.Hdoc)
		case syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
			// sh reads "cmd &> file" as "cmd &" then "> file".
			w.script.HasBackground = true
			w.script.HasSequence = true
			w.add(r.Pos(), Command{Name: "&"})
			w.word(r.Word, ctxArg)
		default:
			w.word(r.Word, ctxArg)
		}
	}
}

func (w *walker) command(cmd syntax.Command) {
	if w.err != nil {
		return
	}
	switch cmd := cmd.(type) {
	case *syntax.CallExpr:
		w.call(cmd)
	case *syntax.BinaryCmd:
		w.binary(cmd)
	case *syntax.Subshell:
		w.script.HasSubshell = true
		w.add(cmd.Pos(), Command{Name: "("})
		w.body(cmd, cmd.Stmts)
	case *syntax.Block:
		w.script.HasSubshell = true
		w.add(cmd.Pos(), Command{Name: "{"})
		w.body(cmd, cmd.Stmts)
	case *syntax.IfClause:
		w.script.HasControlFlow = true
		w.add(cmd.Pos(), Command{Name: "if"})
		if w.enter(cmd) {
			for c := cmd; c != nil; c = c.Else {
				w.stmts(c.Cond)
				w.stmts(c.Then)
			}
			w.leave()
		}
	case *syntax.WhileClause:
		w.script.HasControlFlow = true
		name := "while"
		if cmd.Until {
			name = "until"
		}
		w.add(cmd.Pos(), Command{Name: name})
		if w.enter(cmd) {
			w.stmts(cmd.Cond)
			w.stmts(cmd.Do)
			w.leave()
		}
	case *syntax.ForClause:
		w.forClause(cmd)
	case *syntax.CaseClause:
		w.script.HasControlFlow = true
		i := w.add(cmd.Pos(), Command{Name: "case"})
		if !w.enter(cmd) {
			return
		}
		text, dyn := w.word(cmd.Word, ctxArg)
		w.set(i, Command{Name: "case", Args: []string{text}, Dynamic: dyn})
		for _, item := range cmd.Items {
			for _, p := range item.Patterns {
				w.word(p, ctxPattern)
			}
			w.stmts(item.Stmts)
		}
		w.leave()
	case *syntax.FuncDecl:
		w.funcDecl(cmd)
	case *syntax.ArithmCmd:
		// sh has no arithmetic command: it runs ((x)) as a subshell in a
		// subshell, running x.
		w.fail(cmd.Pos(), "((...)) is arithmetic in bash but nested subshells in sh; use [ $((...)) -ne 0 ]")
	case *syntax.LetClause:
		w.script.HasExpansion = true
		c := Command{Name: "let", Dynamic: true}
		for _, x := range cmd.Exprs {
			c.Args = append(c.Args, w.source(x))
		}
		w.add(cmd.Pos(), c)
		for _, x := range cmd.Exprs {
			w.arithm(x)
		}
	case *syntax.TestClause:
		i := w.add(cmd.Pos(), Command{Name: "[["})
		var c Command
		c.Name = "[["
		w.test(cmd.X, &c)
		c.Args = append(c.Args, "]]")
		w.set(i, c)
	case *syntax.DeclClause:
		i := w.add(cmd.Pos(), Command{Name: cmd.Variant.Value})
		c := Command{Name: cmd.Variant.Value}
		for _, a := range cmd.Args {
			text, dyn := w.assign(a)
			c.Args = append(c.Args, text)
			c.Dynamic = c.Dynamic || dyn
		}
		w.set(i, c)
	case *syntax.TimeClause:
		c := Command{Name: "time"}
		if cmd.PosixFormat {
			c.Args = []string{"-p"}
		}
		w.add(cmd.Pos(), c)
		if cmd.Stmt != nil {
			w.stmt(cmd.Stmt)
		}
	case *syntax.CoprocClause:
		w.script.HasBackground = true
		i := w.add(cmd.Pos(), Command{Name: "coproc"})
		c := Command{Name: "coproc"}
		if cmd.Name != nil {
			text, dyn := w.word(cmd.Name, ctxArg)
			c.Args, c.Dynamic = []string{text}, dyn
		}
		w.set(i, c)
		if cmd.Stmt != nil {
			w.stmt(cmd.Stmt)
		}
	case *syntax.TestDecl:
		// Bats only; not produced for bash, handled to stay safe.
		w.script.HasFunction = true
		w.add(cmd.Pos(), Command{Name: "@test"})
		w.funcBody(cmd, cmd.Body)
	default:
		w.fail(cmd.Pos(), fmt.Sprintf("unsupported shell construct %T", cmd))
	}
}

// binary walks a list or pipeline. These nest to the left, a | b | c
// being (a | b) | c, and can be as long as the input allows; the walk keeps
// its own stack rather than recursing once per operator.
func (w *walker) binary(cmd *syntax.BinaryCmd) {
	w.binaryOp(cmd.Op)
	todo := []*syntax.Stmt{cmd.Y, cmd.X}
	for len(todo) > 0 && w.err == nil {
		st := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		b, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || st.Background || st.Coprocess || st.Disown || len(st.Redirs) > 0 {
			w.stmt(st)
			continue
		}
		w.binaryOp(b.Op)
		todo = append(todo, b.Y, b.X)
	}
}

func (w *walker) binaryOp(op syntax.BinCmdOperator) {
	switch op {
	case syntax.AndStmt:
		w.script.HasAnd = true
	case syntax.OrStmt:
		w.script.HasOr = true
	case syntax.Pipe:
		w.script.HasPipe = true
	case syntax.PipeAll:
		// |& is 2>&1 |.
		w.script.HasPipe = true
		w.script.HasRedirect = true
	}
}

// body walks the statements of a construct that nests them.
func (w *walker) body(n syntax.Node, list []*syntax.Stmt) {
	if w.enter(n) {
		w.stmts(list)
		w.leave()
	}
}

func (w *walker) call(cmd *syntax.CallExpr) {
	i := w.add(cmd.Pos(), Command{})
	var c Command
	for _, a := range cmd.Assigns {
		text, dyn := w.assign(a)
		c.Env = append(c.Env, text)
		c.Dynamic = c.Dynamic || dyn
	}
	words := make([]string, 0, len(cmd.Args))
	for _, arg := range cmd.Args {
		text, dyn := w.word(arg, ctxArg)
		words = append(words, text)
		c.Dynamic = c.Dynamic || dyn
	}
	switch {
	case len(words) == 0:
		// Assignments alone: no command runs, but the shell state changes.
	case len(c.Env) > 0:
		c.Name = "env"
		c.Args = append(slices.Clone(c.Env), words...)
	default:
		c.Name = words[0]
		if len(words) > 1 {
			c.Args = words[1:]
		}
	}
	w.set(i, c)
}

func (w *walker) forClause(cmd *syntax.ForClause) {
	w.script.HasControlFlow = true
	name := "for"
	if cmd.Select {
		name = "select"
	}
	i := w.add(cmd.Pos(), Command{Name: name})
	if !w.enter(cmd) {
		return
	}
	c := Command{Name: name}
	switch loop := cmd.Loop.(type) {
	case *syntax.WordIter:
		c.Args = []string{loop.Name.Value}
		if loop.InPos.IsValid() {
			c.Args = append(c.Args, "in")
		}
		for _, item := range loop.Items {
			text, dyn := w.word(item, ctxArg)
			c.Args = append(c.Args, text)
			c.Dynamic = c.Dynamic || dyn
		}
	case *syntax.CStyleLoop:
		w.script.HasExpansion = true
		c.Args = []string{w.source(loop)}
		c.Dynamic = true
		w.arithm(loop.Init)
		w.arithm(loop.Cond)
		w.arithm(loop.Post)
	}
	w.set(i, c)
	w.stmts(cmd.Do)
	w.leave()
}

func (w *walker) funcDecl(cmd *syntax.FuncDecl) {
	w.script.HasFunction = true
	c := Command{Name: "function"}
	if cmd.Name != nil {
		c.Args = append(c.Args, cmd.Name.Value)
	}
	for _, n := range cmd.Names {
		c.Args = append(c.Args, n.Value)
	}
	w.add(cmd.Pos(), c)
	w.funcBody(cmd, cmd.Body)
}

// funcBody walks a function body. A { ...; } body is part of the definition
// syntax and is not listed as a group of its own.
func (w *walker) funcBody(n syntax.Node, body *syntax.Stmt) {
	if body == nil || !w.enter(n) {
		return
	}
	if block, ok := body.Cmd.(*syntax.Block); ok && !body.Background && !body.Coprocess && !body.Disown {
		w.stmts(block.Stmts)
		w.redirects(body.Redirs)
	} else {
		w.stmt(body)
	}
	w.leave()
}

// assign renders an assignment as "NAME=value" (or "NAME+=value"), and
// reports whether it is dynamic, in which case it is its source text. The
// arguments of declare, export and the like are assignments too, and may
// also be options and bare names.
func (w *walker) assign(a *syntax.Assign) (string, bool) {
	if a.Name == nil {
		// A bare argument of declare: an option, a name, or an expansion.
		return w.word(a.Value, ctxArg)
	}
	if a.Naked {
		if a.Index != nil {
			w.arithm(a.Index)
			return w.source(a), true
		}
		return a.Name.Value, false
	}
	dyn := false
	if a.Index != nil {
		w.arithm(a.Index)
		dyn = true
	}
	if a.Array != nil {
		// Array elements undergo the same expansions as command words.
		for _, el := range a.Array.Elems {
			w.arithm(el.Index)
			w.word(el.Value, ctxArg)
		}
		dyn = true
	}
	val := ""
	if a.Value != nil {
		var vdyn bool
		val, vdyn = w.word(a.Value, ctxAssign)
		dyn = dyn || vdyn
	}
	if dyn {
		return w.source(a), true
	}
	op := "="
	if a.Append {
		op = "+="
	}
	return a.Name.Value + op + val, false
}

// test renders the expression of a [[ ]] clause into c.Args. Like
// binary, it keeps its own stack for chains of operators.
func (w *walker) test(x syntax.TestExpr, c *Command) {
	type item struct {
		x   syntax.TestExpr
		tok string
	}
	todo := []item{{x: x}}
	for len(todo) > 0 && w.err == nil {
		it := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch x := it.x.(type) {
		case nil:
			if it.tok != "" {
				c.Args = append(c.Args, it.tok)
			}
		case *syntax.BinaryTest:
			switch x.Op {
			case syntax.AndTest, syntax.OrTest, syntax.TsBefore, syntax.TsAfter, syntax.TsReMatch:
				w.fail(x.OpPos, fmt.Sprintf("%s inside [[ ]] is read as a separate command or a redirection by sh; use [ ] or test", x.Op))
				return
			}
			switch x.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				// Arithmetic comparisons evaluate their operands.
				for _, o := range []syntax.TestExpr{x.X, x.Y} {
					if wd, ok := o.(*syntax.Word); ok {
						w.operand(wd)
					} else {
						w.script.HasSubstitution = true
					}
				}
			}
			todo = append(todo, item{x: x.Y}, item{tok: x.Op.String()}, item{x: x.X})
		case *syntax.UnaryTest:
			if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
				// -v a[$(id)] evaluates the subscript.
				w.script.HasSubstitution = true
			}
			if x.Op == syntax.TsParen {
				w.fail(x.OpPos, "( inside [[ ]] is a syntax error in sh; use [ ] or test")
				return
			}
			todo = append(todo, item{x: x.X}, item{tok: x.Op.String()})
		case *syntax.ParenTest:
			w.fail(x.Lparen, "( inside [[ ]] is a syntax error in sh; use [ ] or test")
			return
		case *syntax.Word:
			// No pathname expansion or word splitting inside [[ ]].
			text, dyn := w.word(x, ctxPattern)
			c.Args = append(c.Args, text)
			c.Dynamic = c.Dynamic || dyn
		default:
			w.fail(x.Pos(), fmt.Sprintf("unsupported test expression %T", x))
		}
	}
}

// arithm walks an arithmetic expression for the substitutions and
// expansions it holds. Like binary, it keeps its own stack for chains of
// operators.
func (w *walker) arithm(x syntax.ArithmExpr) {
	todo := []syntax.ArithmExpr{x}
	for len(todo) > 0 && w.err == nil {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch x := x.(type) {
		case nil:
		case *syntax.BinaryArithm:
			todo = append(todo, x.Y, x.X)
		case *syntax.UnaryArithm:
			todo = append(todo, x.X)
		case *syntax.FlagsArithm:
			todo = append(todo, x.X)
		case *syntax.ParenArithm:
			if w.enter(x) {
				w.arithm(x.X)
				w.leave()
			}
		case *syntax.Word:
			w.operand(x)
			w.word(x, ctxPattern)
		default:
			w.fail(x.Pos(), fmt.Sprintf("unsupported arithmetic expression %T", x))
		}
	}
}

// checkQuotes refuses the $'...' strings of a word that is not otherwise
// walked, such as a here-document delimiter.
func (w *walker) checkQuotes(wd *syntax.Word) {
	if wd == nil {
		return
	}
	for _, p := range wd.Parts {
		if q, ok := p.(*syntax.SglQuoted); ok && q.Dollar {
			w.checkDollarQuote(q)
		}
	}
}

// checkDollarQuote refuses a $'...' string holding \'. bash reads
// $'a\'b' as one string, where sh ends the string at the escaped quote
// and reads what follows it as code: the two would run different
// commands.
func (w *walker) checkDollarQuote(q *syntax.SglQuoted) {
	for i := 0; i < len(q.Value); i++ {
		if q.Value[i] != '\\' || i+1 == len(q.Value) {
			continue
		}
		i++
		if q.Value[i] == '\'' {
			w.fail(q.Pos(), `$'...' holding \' ends at different places in bash and sh; use '...' or "..."`)
			return
		}
	}
}

// operand records an arithmetic operand. bash evaluates the value of a
// variable met in arithmetic as an expression in turn, and an array
// subscript there can hold a command substitution: with _ holding
// a[$(id)], as it does after `true 'a[$(id)]'`, $((_)) runs id. An
// operand other than a number is therefore counted as a substitution.
func (w *walker) operand(x *syntax.Word) {
	if lit := x.Lit(); lit == "" || lit[0] < '0' || lit[0] > '9' {
		w.script.HasSubstitution = true
	}
}

// heredoc walks a here-document body, in which only $ and ` are special.
func (w *walker) heredoc(body *syntax.Word) {
	if body == nil {
		return
	}
	for _, p := range body.Parts {
		w.part(p)
	}
}

// part walks a word part other than a literal or a quoted string, setting
// flags and listing the commands it nests.
func (w *walker) part(p syntax.WordPart) {
	if w.err != nil {
		return
	}
	switch p := p.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.part(q)
		}
	case *syntax.CmdSubst:
		w.script.HasSubstitution = true
		w.body(p, p.Stmts)
	case *syntax.ProcSubst:
		w.script.HasSubstitution = true
		w.body(p, p.Stmts)
	case *syntax.ParamExp:
		w.script.HasExpansion = true
		if w.enter(p) {
			w.paramExp(p)
			w.leave()
		}
	case *syntax.ArithmExp:
		if p.Bracket {
			w.fail(p.Pos(), "$[...] is arithmetic in bash but words in sh; use $((...))")
			return
		}
		w.script.HasExpansion = true
		if w.enter(p) {
			w.arithm(p.X)
			w.leave()
		}
	case *syntax.ExtGlob:
		// Without shopt -s extglob, which sh -c cannot have set, these
		// are syntax errors, except that "!(cmd)" at the start of a
		// command runs cmd in a negated subshell.
		w.fail(p.Pos(), fmt.Sprintf("%s...) is an extended glob in bash only; sh reads it differently", p.Op))
	case *syntax.BraceExp:
		w.script.HasExpansion = true
		for _, el := range p.Elems {
			w.word(el, ctxPattern)
		}
	default:
		w.fail(p.Pos(), fmt.Sprintf("unsupported word part %T", p))
	}
}

func (w *walker) paramExp(p *syntax.ParamExp) {
	if p.NestedParam != nil {
		w.part(p.NestedParam)
	}
	all := false // [@] or [*]
	if idx, ok := p.Index.(*syntax.Word); ok {
		lit := idx.Lit()
		all = lit == "@" || lit == "*"
	}
	if p.Excl && p.Names == 0 && !all {
		// ${!x} expands the variable named by the value of x, and
		// evaluates the subscript of a name such as a[$(id)].
		w.script.HasSubstitution = true
	}
	if !all {
		w.arithm(p.Index)
	}
	if p.Slice != nil {
		w.arithm(p.Slice.Offset)
		w.arithm(p.Slice.Length)
	}
	if p.Repl != nil {
		w.word(p.Repl.Orig, ctxPattern)
		w.word(p.Repl.With, ctxPattern)
	}
	if p.Exp != nil {
		switch {
		case p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull:
			// bash evaluates variables met in arithmetic, array
			// subscripts included, so an assigned value can run code:
			// git log ${x:='a[$(id)]'}$((x)) runs id.
			w.fail(p.Pos(), fmt.Sprintf("${name%svalue} assigns a variable inside a word, and bash can run what it holds; assign before the command", p.Exp.Op))
			return
		case p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P":
			// Prompt expansion performs the command substitutions of
			// the value.
			w.fail(p.Pos(), "${name@P} runs the command substitutions held in the value of name")
			return
		}
		w.word(p.Exp.Word, ctxPattern)
	}
}

// wordCtx says which expansions apply to a word where it appears.
type wordCtx int

const (
	// ctxArg is a command word: tilde, brace and pathname expansion apply.
	ctxArg wordCtx = iota
	// ctxAssign is an assignment value: tilde expansion applies after the
	// = and after each :, but neither brace nor pathname expansion.
	ctxAssign
	// ctxPattern is a pattern or operand that is matched rather than
	// expanded to file names: case patterns, [[ ]] operands, the words
	// inside ${...} and arithmetic.
	ctxPattern
)

// word returns the value of wd with quotes removed and reports false when
// it is a plain literal; otherwise it returns the source text of wd and
// true. Either way it sets the flags for, and lists the commands of,
// everything nested in wd.
func (w *walker) word(wd *syntax.Word, ctx wordCtx) (string, bool) {
	if wd == nil || w.err != nil {
		return "", false
	}
	var b strings.Builder
	dynamic := false
	for _, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				// $'...' decodes escapes in bash, is "$" then a
				// quoted string in dash: not a literal either way.
				dynamic = true
				w.checkDollarQuote(p)
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				// $"..." is translated by the locale in bash.
				dynamic = true
			}
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(lit.Value))
				} else {
					dynamic = true
					w.part(q)
				}
			}
		default:
			dynamic = true
			w.part(p)
		}
	}
	if w.expands(wd, ctx) {
		w.script.HasExpansion = true
		dynamic = true
	}
	if dynamic {
		return w.source(wd), true
	}
	return b.String(), false
}

// expands reports whether the unquoted literal text of wd asks for tilde,
// brace or pathname expansion where it appears.
func (w *walker) expands(wd *syntax.Word, ctx wordCtx) bool {
	if len(wd.Parts) == 0 {
		return false
	}
	if first, ok := wd.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(first.Value, "~") {
		return true
	}
	// Tilde expansion also applies after = and : in assignments; bash
	// applies it to arguments that look like assignments as well.
	if ctx == ctxAssign || (ctx == ctxArg && looksLikeAssign(wd)) {
		prev := byte(0)
		if ctx == ctxAssign {
			prev = '=' // the value follows the =
		}
		for _, part := range wd.Parts {
			lit, ok := part.(*syntax.Lit)
			if !ok {
				prev = 0
				continue
			}
			for i := 0; i < len(lit.Value); i++ {
				ch := lit.Value[i]
				if ch == '~' && (prev == '=' || prev == ':') {
					return true
				}
				if ch == '\\' {
					i++
					ch = 0
				}
				prev = ch
			}
		}
	}
	if ctx != ctxArg {
		return false
	}
	if hasGlob(wd) {
		return true
	}
	if !slices.ContainsFunc(wd.Parts, func(p syntax.WordPart) bool {
		lit, ok := p.(*syntax.Lit)
		return ok && strings.ContainsRune(lit.Value, '{')
	}) {
		return false
	}
	// SplitBraces replaces the parts of the word it is given, so hand it
	// a copy; it copies the literals it splits. It reports true for words
	// such as {} and {a} that bash leaves alone: look for what it found.
	split := &syntax.Word{Parts: slices.Clone(wd.Parts)}
	syntax.SplitBraces(split)
	return slices.ContainsFunc(split.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	})
}

// looksLikeAssign reports whether wd starts with NAME=.
func looksLikeAssign(wd *syntax.Word) bool {
	lit, ok := wd.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	for i := 0; i < len(lit.Value); i++ {
		ch := lit.Value[i]
		switch {
		case ch == '=' && i > 0:
			return true
		case ch == '_' || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z':
		case '0' <= ch && ch <= '9' && i > 0:
		default:
			return false
		}
	}
	return false
}

// hasGlob reports whether the unquoted literal parts of wd hold an
// unescaped *, ? or a [ closed later by an unescaped ].
func hasGlob(wd *syntax.Word) bool {
	open := false
	for _, part := range wd.Parts {
		lit, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		for i := 0; i < len(lit.Value); i++ {
			switch lit.Value[i] {
			case '\\':
				i++
			case '*', '?':
				return true
			case '[':
				open = true
			case ']':
				if open {
					return true
				}
			}
		}
	}
	return false
}

// unescape removes the backslashes of an unquoted literal: \x is x.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes of a literal inside double quotes,
// where a backslash only escapes $, `, ", \ and newline.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

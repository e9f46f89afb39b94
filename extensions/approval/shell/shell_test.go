package shell_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/expr-lang/expr"

	"github.com/ganglion-dev/ganglion/extensions/approval/shell"
)

// cmd is a literal command.
func cmd(name string, args ...string) shell.Command {
	return shell.Command{Name: name, Args: args}
}

// dyn is a dynamic command.
func dyn(name string, args ...string) shell.Command {
	c := cmd(name, args...)
	c.Dynamic = true
	return c
}

// gitRule is the allow rule of the package documentation.
const gitRule = `all(shell.commands, {.name == "git" && .args[0] in ["status", "diff", "log"]}) && !shell.hasRedirect && !shell.hasSubstitution`

// allowsGit applies the logic of gitRule in Go.
func allowsGit(s shell.Script) bool {
	for _, c := range s.Commands {
		if c.Name != "git" || len(c.Args) == 0 || !slices.Contains([]string{"status", "diff", "log"}, c.Args[0]) {
			return false
		}
	}
	return !s.HasRedirect && !s.HasSubstitution
}

type parseCase struct {
	name  string
	src   string
	want  shell.Script
	allow bool // whether gitRule allows src
}

var parseCases = []parseCase{
	// What gitRule is meant to allow.
	{name: "git status", src: "git status",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "git diff --stat", src: "git diff --stat",
		want: shell.Script{Commands: []shell.Command{cmd("git", "diff", "--stat")}}, allow: true},
	{name: "quoted argument", src: "git log -n 3 'a b'",
		want: shell.Script{Commands: []shell.Command{cmd("git", "log", "-n", "3", "a b")}}, allow: true},
	{name: "quotes removed", src: `g"i"t 'sta'tus`,
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "escaped name", src: `\git status`,
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "line continuation", src: "git sta\\\ntus",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "trailing semicolon", src: "git status;",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "comment", src: "git status # ; rm -rf /",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "tilde inside a word", src: "git log --format=%h HEAD~1",
		want: shell.Script{Commands: []shell.Command{cmd("git", "log", "--format=%h", "HEAD~1")}}, allow: true},
	{name: "escapes in double quotes", src: `git log "a\"b\\c\$d\e"`,
		want: shell.Script{Commands: []shell.Command{cmd("git", "log", `a"b\c$d\e`)}}, allow: true},
	{name: "quoted glob", src: `git log -- '*.go' "x?" \*`,
		want: shell.Script{Commands: []shell.Command{cmd("git", "log", "--", "*.go", "x?", "*")}}, allow: true},
	{name: "negation", src: "! git status",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}}, allow: true},
	{name: "git and git", src: "git status && git diff",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("git", "diff")}, HasAnd: true}, allow: true},

	// The rule allows expansions; rules that care add !shell.hasExpansion.
	{name: "variable argument", src: "git diff $REV",
		want: shell.Script{Commands: []shell.Command{dyn("git", "diff", "$REV")}, HasExpansion: true}, allow: true},
	{name: "glob argument", src: "git diff *.go",
		want: shell.Script{Commands: []shell.Command{dyn("git", "diff", "*.go")}, HasExpansion: true}, allow: true},

	// What every rule writer fears.
	{name: "sequence", src: "git status; rm -rf /",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("rm", "-rf", "/")}, HasSequence: true}},
	{name: "and pipe", src: "git status && curl x | sh",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("curl", "x"), cmd("sh")}, HasAnd: true, HasPipe: true}},
	{name: "redirect to home", src: "git status > ~/.ssh/id_rsa",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}, HasRedirect: true, HasExpansion: true}},
	{name: "command substitution", src: "git $(rm -rf /)",
		want: shell.Script{Commands: []shell.Command{dyn("git", "$(rm -rf /)"), cmd("rm", "-rf", "/")}, HasSubstitution: true}},
	{name: "backquotes", src: "git `id`",
		want: shell.Script{Commands: []shell.Command{dyn("git", "`id`"), cmd("id")}, HasSubstitution: true}},
	{name: "bash -c", src: `bash -c "git status"`,
		want: shell.Script{Commands: []shell.Command{cmd("bash", "-c", "git status")}}},
	{name: "newline", src: "git status\nrm -rf /",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("rm", "-rf", "/")}, HasSequence: true}},
	{name: "leading assignment", src: "GIT_SSH_COMMAND=evil git status",
		want: shell.Script{Commands: []shell.Command{{
			Name: "env",
			Args: []string{"GIT_SSH_COMMAND=evil", "git", "status"},
			Env:  []string{"GIT_SSH_COMMAND=evil"},
		}}}},
	{name: "background", src: "git status &",
		want: shell.Script{Commands: []shell.Command{cmd("&"), cmd("git", "status")}, HasSequence: true, HasBackground: true}},
	{name: "subshell", src: "(git status)",
		want: shell.Script{Commands: []shell.Command{cmd("("), cmd("git", "status")}, HasSubshell: true}},
	{name: "duplicated descriptors", src: "git status 2>&1 >/tmp/x",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}, HasRedirect: true}},
	{name: "substitution in double quotes", src: `git "$(id)"`,
		want: shell.Script{Commands: []shell.Command{dyn("git", `"$(id)"`), cmd("id")}, HasSubstitution: true}},
	{name: "here-document", src: "git status <<EOF\nhello\nEOF",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status")}, HasRedirect: true}},
	{name: "or", src: "git status || rm -rf /",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("rm", "-rf", "/")}, HasOr: true}},
	{name: "eval", src: `eval "git status"`,
		want: shell.Script{Commands: []shell.Command{cmd("eval", "git status")}}},
	{name: "IFS", src: "git ${IFS}status",
		want: shell.Script{Commands: []shell.Command{dyn("git", "${IFS}status")}, HasExpansion: true}},
	{name: "substitution in an option", src: "git log --format=$(id)",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "--format=$(id)"), cmd("id")}, HasSubstitution: true}},
	{name: "group", src: "{ git status; }",
		want: shell.Script{Commands: []shell.Command{cmd("{"), cmd("git", "status")}, HasSubshell: true}},
	{name: "pipe to tee", src: "git status | tee x",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("tee", "x")}, HasPipe: true}},
	{name: "xargs", src: "xargs git status",
		want: shell.Script{Commands: []shell.Command{cmd("xargs", "git", "status")}}},

	// More of the same.
	{name: "sh -c", src: "sh -c 'git status'",
		want: shell.Script{Commands: []shell.Command{cmd("sh", "-c", "git status")}}},
	{name: "wrappers", src: "sudo git status; command git status; env git status; timeout 5 git status",
		want: shell.Script{Commands: []shell.Command{
			cmd("sudo", "git", "status"), cmd("command", "git", "status"),
			cmd("env", "git", "status"), cmd("timeout", "5", "git", "status"),
		}, HasSequence: true}},
	{name: "git without arguments", src: "git",
		want: shell.Script{Commands: []shell.Command{cmd("git")}}},
	{name: "substitution in a here-document", src: "git status <<EOF\n$(id)\nEOF",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("id")}, HasRedirect: true, HasSubstitution: true}},
	{name: "quoted here-document", src: "cat <<'EOF'\n$(id)\nEOF",
		want: shell.Script{Commands: []shell.Command{cmd("cat")}, HasRedirect: true}},
	{name: "here-string", src: `git status <<< "$(id)"`,
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("id")}, HasRedirect: true, HasSubstitution: true}},
	{name: "ampersand redirect", src: "git status &> /dev/null",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("&")}, HasSequence: true, HasBackground: true, HasRedirect: true}},
	{name: "pipe with stderr", src: "git status |& tee x",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status"), cmd("tee", "x")}, HasPipe: true, HasRedirect: true}},
	{name: "process substitution", src: "diff <(git show a) >(cat)",
		want: shell.Script{Commands: []shell.Command{dyn("diff", "<(git show a)", ">(cat)"), cmd("git", "show", "a"), cmd("cat")}, HasSubstitution: true}},
	{name: "substitution in a default", src: "git log ${X:-$(id)}",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "${X:-$(id)}"), cmd("id")}, HasExpansion: true, HasSubstitution: true}},
	{name: "substitution in arithmetic", src: "git log -n $((1 + $(id)))",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "-n", "$((1 + $(id)))"), cmd("id")}, HasExpansion: true, HasSubstitution: true}},
	{name: "nested substitution", src: "echo $(a $(b))",
		want: shell.Script{Commands: []shell.Command{dyn("echo", "$(a $(b))"), dyn("a", "$(b)"), cmd("b")}, HasSubstitution: true}},
	{name: "dynamic name", src: "$CMD status",
		want: shell.Script{Commands: []shell.Command{dyn("$CMD", "status")}, HasExpansion: true}},
	{name: "dollar quotes", src: `git log $'a\nb'`,
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", `$'a\nb'`)}}, allow: true},
	{name: "brace expansion", src: "git log {a,b} {} x{1..3}",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "{a,b}", "{}", "x{1..3}")}, HasExpansion: true}, allow: true},
	{name: "not a brace expansion", src: `find . -name x -exec rm {} \;`,
		want: shell.Script{Commands: []shell.Command{cmd("find", ".", "-name", "x", "-exec", "rm", "{}", ";")}}},
	{name: "tilde", src: "git log ~other/x",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "~other/x")}, HasExpansion: true}, allow: true},
	{name: "assignment only", src: "PATH=/tmp/evil; git status",
		want: shell.Script{Commands: []shell.Command{{Env: []string{"PATH=/tmp/evil"}}, cmd("git", "status")}, HasSequence: true}},
	{name: "redirection only", src: "> x",
		want: shell.Script{Commands: []shell.Command{{}}, HasRedirect: true}},
	{name: "dynamic assignment", src: "A=$(id) B=~/x git status",
		want: shell.Script{Commands: []shell.Command{{
			Name:    "env",
			Args:    []string{"A=$(id)", "B=~/x", "git", "status"},
			Env:     []string{"A=$(id)", "B=~/x"},
			Dynamic: true,
		}, cmd("id")}, HasSubstitution: true, HasExpansion: true}},
	{name: "export", src: "export PATH=/tmp/evil GIT_DIR",
		want: shell.Script{Commands: []shell.Command{cmd("export", "PATH=/tmp/evil", "GIT_DIR")}}},
	{name: "if", src: "if git status; then git diff; fi",
		want: shell.Script{Commands: []shell.Command{cmd("if"), cmd("git", "status"), cmd("git", "diff")}, HasControlFlow: true}},
	{name: "while", src: "while true; do git status; done",
		want: shell.Script{Commands: []shell.Command{cmd("while"), cmd("true"), cmd("git", "status")}, HasControlFlow: true}},
	{name: "for", src: "for f in *.go; do git diff \"$f\"; done",
		want: shell.Script{Commands: []shell.Command{dyn("for", "f", "in", "*.go"), dyn("git", "diff", `"$f"`)}, HasControlFlow: true, HasExpansion: true}},
	{name: "case", src: "case $x in a*) git status;; esac",
		want: shell.Script{Commands: []shell.Command{dyn("case", "$x"), cmd("git", "status")}, HasControlFlow: true, HasExpansion: true}},
	{name: "function shadowing git", src: "git() { rm -rf /; }; git status",
		want: shell.Script{Commands: []shell.Command{cmd("function", "git"), cmd("rm", "-rf", "/"), cmd("git", "status")}, HasFunction: true, HasSequence: true}},
	{name: "test", src: "[[ -f x ]] && git status",
		want: shell.Script{Commands: []shell.Command{cmd("[[", "-f", "x", "]]"), cmd("git", "status")}, HasAnd: true}},
	{name: "time", src: "time git status",
		want: shell.Script{Commands: []shell.Command{cmd("time"), cmd("git", "status")}}},
	{name: "let", src: "let x=1+2",
		want: shell.Script{Commands: []shell.Command{dyn("let", "x=1+2")}, HasExpansion: true, HasSubstitution: true}},
	{name: "arithmetic on numbers", src: "git log -n $((1 + 0x2 * 2#10))",
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "-n", "$((1 + 0x2 * 2#10))")}, HasExpansion: true}, allow: true},
	{name: "arithmetic on the last argument", src: "git status 'a[$(id)]'; git log $((_))",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status", "a[$(id)]"), dyn("git", "log", "$((_))")},
			HasSequence: true, HasExpansion: true, HasSubstitution: true}},
	{name: "indirect expansion", src: "git status 'a[$(id)]'; git log ${!_}",
		want: shell.Script{Commands: []shell.Command{cmd("git", "status", "a[$(id)]"), dyn("git", "log", "${!_}")},
			HasSequence: true, HasExpansion: true, HasSubstitution: true}},
	{name: "array subscript", src: `git log ${a[_]} "${b[@]}" ${c[1]}`,
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", "${a[_]}", `"${b[@]}"`, "${c[1]}")},
			HasExpansion: true, HasSubstitution: true}},
	{name: "array keys", src: `git log "${!b[@]}" ${c[1]} ${d:1:2}`,
		want: shell.Script{Commands: []shell.Command{dyn("git", "log", `"${!b[@]}"`, "${c[1]}", "${d:1:2}")},
			HasExpansion: true}, allow: true},
	{name: "arithmetic test", src: "[[ $_ -eq 1 ]]",
		want: shell.Script{Commands: []shell.Command{dyn("[[", "$_", "-eq", "1", "]]")}, HasExpansion: true, HasSubstitution: true}},
}

func TestParse(t *testing.T) {
	program, err := expr.Compile(gitRule, expr.Env(map[string]any{"shell": shell.Script{}}), expr.AsBool())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shell.Parse(tc.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.src, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tc.src, got, tc.want)
			}
			if allow := allowsGit(got); allow != tc.allow {
				t.Errorf("Parse(%q): Go rule allows = %v, want %v", tc.src, allow, tc.allow)
			}
			// The same rule in expr-lang, through the expr tags. A
			// run-time error, such as .args[0] of a command without
			// arguments, is a refusal.
			out, err := expr.Run(program, map[string]any{"shell": got})
			if allow := err == nil && out == true; allow != tc.allow {
				t.Errorf("Parse(%q): expr rule allows = %v (%v), want %v", tc.src, allow, err, tc.allow)
			}
		})
	}
}

var errorCases = []struct {
	name, src, want string
}{
	{"empty", "", "shell: empty command"},
	{"blank", " \n\t ", "shell: empty command"},
	{"comment only", "# git status", "shell: empty command"},
	{"dangling and", "git status &&", "shell: 1:12: `&&` must be followed by a statement"},
	{"unclosed quote", "git log 'x", "shell: 1:9: reached EOF without closing quote `'`"},
	{"unclosed substitution", "git\n  log $(id", "shell: 2:7: reached EOF without matching `$(` with `)`"},
	{"stray paren", "git status)", "shell: 1:11: a command can only contain words and redirects; encountered `)`"},
	{"invalid UTF-8", "git \xff", "shell: 1:5: invalid UTF-8 encoding"},
	{"NUL", "git\x00 status", "shell: 1:4: NUL byte in command"},
	{"carriage return", "git status\r\nrm -rf /", "shell: 1:11: carriage return in command"},
	{"dollar quote with escaped quote", "git status $'\\' ; rm -rf /\ngit \\''",
		`shell: 1:12: $'...' holding \' ends at different places in bash and sh; use '...' or "..."`},
	{"test with or", "[[ x || rm ]]",
		"shell: 1:6: || inside [[ ]] is read as a separate command or a redirection by sh; use [ ] or test"},
	{"test with regex", "[[ x =~ a|b ]]",
		"shell: 1:6: =~ inside [[ ]] is read as a separate command or a redirection by sh; use [ ] or test"},
	{"test with parens", "[[ ( -f x ) ]]", "shell: 1:4: ( inside [[ ]] is a syntax error in sh; use [ ] or test"},
	{"arithmetic command", "((x))", "shell: 1:1: ((...)) is arithmetic in bash but nested subshells in sh; use [ $((...)) -ne 0 ]"},
	{"bracket arithmetic", "echo $[1+\nrm - rf]", "shell: 1:6: $[...] is arithmetic in bash but words in sh; use $((...))"},
	{"assigning expansion", "git log ${x:='a[$(id)]'}$((x))",
		"shell: 1:9: ${name:=value} assigns a variable inside a word, and bash can run what it holds; assign before the command"},
	{"prompt expansion", "git log ${x@P}", "shell: 1:9: ${name@P} runs the command substitutions held in the value of name"},
	{"extended glob", "!(rm -rf /)", "shell: 1:1: !(...) is an extended glob in bash only; sh reads it differently"},
	{"too long", strings.Repeat("a", shell.MaxBytes+1), "shell: command is 65537 bytes long, more than the 65536 allowed"},
	{"too many commands", strings.Repeat("a;", shell.MaxCommands+1), "shell: 1:2001: more than 1000 commands"},
	{"too many in a pipeline", strings.Repeat("a|", shell.MaxCommands) + "a", "shell: 1:2001: more than 1000 commands"},
	{"too deep", strings.Repeat("( ", shell.MaxDepth+1) + "a" + strings.Repeat(")", shell.MaxDepth+1),
		"shell: 1:201: nesting deeper than 100 levels"},
	{"too deep substitutions", strings.Repeat("$(", shell.MaxDepth+1) + "a" + strings.Repeat(")", shell.MaxDepth+1),
		"shell: 1:201: nesting deeper than 100 levels"},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shell.Parse(tc.src)
			if err == nil {
				t.Fatalf("Parse(%.40q) = %+v, want error %q", tc.src, got, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%.40q) error\n got %q\nwant %q", tc.src, err, tc.want)
			}
			var e *shell.Error
			if !errors.As(err, &e) {
				t.Errorf("Parse(%.40q) error is %T, want *shell.Error", tc.src, err)
			}
		})
	}
}

// TestParseLimitsAccept checks that the limits are not off by one.
func TestParseLimitsAccept(t *testing.T) {
	deep := strings.Repeat("( ", shell.MaxDepth) + "a" + strings.Repeat(")", shell.MaxDepth)
	s, err := shell.Parse(deep)
	if err != nil {
		t.Fatalf("nesting of %d: %v", shell.MaxDepth, err)
	}
	if len(s.Commands) != shell.MaxDepth+1 {
		t.Errorf("nesting of %d: %d commands, want %d", shell.MaxDepth, len(s.Commands), shell.MaxDepth+1)
	}
	many := strings.Repeat("a;", shell.MaxCommands)
	if s, err := shell.Parse(many); err != nil || len(s.Commands) != shell.MaxCommands {
		t.Errorf("%d commands: %d commands, %v", shell.MaxCommands, len(s.Commands), err)
	}
	long := "git log " + strings.Repeat("x", shell.MaxBytes-len("git log "))
	if _, err := shell.Parse(long); err != nil {
		t.Errorf("%d bytes: %v", len(long), err)
	}
}

// hostile are inputs of the largest size allowed that drive the parser as
// deep, or make it work as hard, as we know how.
func hostile() map[string]string {
	n := shell.MaxBytes
	r := strings.Repeat
	return map[string]string{
		"parens":               r("(", n),
		"arithmetic parens":    "echo $((" + r("(", n-10),
		"bracket arithmetic":   "echo $[" + r("(", n-10),
		"balanced parens":      r("(", n/2) + r(")", n/2),
		"substitutions":        r("$(", n/2),
		"quoted substitutions": r(`"$(`, n/3),
		"parameter defaults":   r("${a:-", n/5),
		"indexes":              "${a[" + r("b[", n/2-4),
		"groups":               r("{ ", n/2),
		"ifs":                  r("if a; then ", n/11),
		"unary minus":          "echo $((" + r("- ", n/2-10) + "1))",
		"assignments":          "echo $((" + r("a=", n/2-10) + "1))",
		"test negations":       "[[ " + r("! ", n/2-10) + "a ]]",
		"and list":             r("a&&", n/3),
		"pipeline":             r("a|", n/2),
		"here-documents":       "a" + r(" <<a", n/4-1),
		"words":                "echo " + r("a ", n/2-5),
		"backquotes":           "echo " + r("`a` ", n/4-5),
		"arithmetic sum":       "echo $((" + r("a+", n/2-10) + "1))",
	}
}

// TestParseHostile checks that hostile inputs are refused or parsed
// quickly.
func TestParseHostile(t *testing.T) {
	for name, src := range hostile() {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := shell.Parse(src)
			if d := time.Since(start); d > time.Second {
				t.Errorf("Parse took %v (error %v)", d, err)
			}
			// The guard on the parser, rather than the walk of its
			// tree, refuses these.
			switch name {
			case "parens", "arithmetic parens", "substitutions", "unary minus", "test negations":
				if err == nil || !strings.HasSuffix(err.Error(), "nesting deeper than 100 levels") {
					t.Errorf("Parse error = %v, want nesting deeper than 100 levels", err)
				}
			}
		})
	}
}

func TestParseConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, tc := range parseCases {
				got, err := shell.Parse(tc.src)
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Parse(%q) = %+v, %v", tc.src, got, err)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkParse(b *testing.B) {
	for _, src := range []string{
		"git status",
		"git log --format=$(id) | tee x && rm -rf / || (cd /tmp; ls *.go) > out 2>&1 &",
	} {
		b.Run(fmt.Sprintf("%d bytes", len(src)), func(b *testing.B) {
			for b.Loop() {
				if _, err := shell.Parse(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for name, src := range hostile() {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				shell.Parse(src)
			}
		})
	}
}

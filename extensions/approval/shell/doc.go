// Package shell analyses the command line of an execute_command tool call,
// which is run with `sh -c`, so that approval rules can judge it.
//
// [Parse] turns the command line into a [Script], which rules written in
// expr-lang see as shell. A rule that allows read-only git commands:
//
//	all(shell.commands, {.name == "git" && .args[0] in ["status", "diff", "log"]})
//	  && !shell.hasRedirect && !shell.hasSubstitution
//
// Parse uses the parser of mvdan.cc/sh/v3/syntax with the bash grammar,
// never regular expressions, and lists what the shell would run, not what
// the command line looks like.
//
// # Safe by default
//
// The listing is built so that a rule of the form all(shell.commands, ...)
// that names only the programs it trusts cannot be fooled:
//
//   - Every command is listed, wherever it is: after ;, &&, || or a
//     newline, in a pipeline, inside $(...), `...`, <(...) and >(...)
//     (also within double quotes, here-documents, ${...} and $((...))),
//     in subshells, groups, function bodies and the conditions and
//     bodies of if, while, until, for and case. An enclosing command
//     comes before the commands nested in its words.
//   - A command with leading assignments is listed as env would run it:
//     GIT_SSH_COMMAND=x git status has Name "env" and Args
//     ["GIT_SSH_COMMAND=x", "git", "status"], and Env
//     ["GIT_SSH_COMMAND=x"].
//   - Commands that run other commands are not unwrapped: bash -c "git
//     status" has Name "bash" and Args ["-c", "git status"]; so are sh,
//     eval, xargs, exec, env, sudo, nice, timeout, nohup, command, builtin
//     and any other.
//   - Constructs that are not simple commands are listed too, under names
//     a rule would not allow by accident; see below.
//
// The entries that are not simple commands:
//
//	&           a statement run in the background, cmd &; also cmd &> file,
//	            which sh reads as cmd & then > file
//	(           a subshell, ( ... )
//	{           a group, { ...; }
//	if, while, until, case
//	for, select Args: the variable, "in" and the items
//	function    a function definition; Args: its name
//	[[          a bash test; Args: its words and operators, then "]]"
//	(empty)     a statement of only assignments (in Env) or redirections
//
// Keywords and builtins that take arguments keep their name: time, coproc,
// let, declare, export, local, readonly, typeset.
//
// A word's value is the text the shell would pass once quotes are removed:
// 'a b' is a b, "x" is x, g"i"t is git, \; is ;. A word that is not a plain
// literal — it holds $VAR, ${...}, $(...), `...`, $((...)), a glob (*, ?,
// [...]), a leading ~, a brace expansion ({a,b}) or $'...' quoting — is
// kept as its source text, e.g. "$(id)", and makes its command Dynamic.
//
// The Has* flags of [Script] describe the whole script, nested parts
// included, so a rule can also refuse any redirection or substitution
// outright. HasSubstitution also covers the bash expansions that can run a
// command substitution held in a variable: arithmetic on a variable, as in
// $((x)) or ${a[i]}, and indirection, ${!x}. The rule above allows git log
// $REV and git diff *.go, whose words expand at run time; add
// !shell.hasExpansion, or none(shell.commands, .dynamic), to refuse them.
//
// The listing says what runs, not what a program does with its arguments.
// git diff --output=FILE writes a file; the bash builtins that take a
// variable name (test -v, printf -v, read, unset, declare) evaluate an array
// subscript in it, command substitutions included. Allow only the
// arguments you have checked.
//
// Examples (Name [Args], flags):
//
//	git status                   git [status]
//	git status; rm -rf /         git [status], rm [-rf /]; hasSequence
//	git $(rm -rf /)              git [$(rm -rf /)] dynamic, rm [-rf /]; hasSubstitution
//	git status > out             git [status]; hasRedirect
//	git status &                 & [], git [status]; hasBackground, hasSequence
//	(git status)                 ( [], git [status]; hasSubshell
//	eval "git status"            eval [git status]
//	FOO=1 git status             env [FOO=1 git status] with Env [FOO=1]
//
// # sh is not always bash
//
// sh is bash on some systems and dash or another POSIX shell on others.
// Parse refuses, with an error, the constructs that bash and POSIX sh
// split into different commands, so that a rule never judges a reading the
// shell does not make:
//
//   - $'...' holding \' (bash ends the string later than sh does);
//   - [[ ]] holding &&, ||, <, >, =~ or parentheses (sh runs a command
//     named [[ and reads those as operators and redirections);
//   - ((...)) arithmetic commands (nested subshells in sh) and $[...];
//   - extended globs such as !(...) and @(...);
//   - carriage returns, which the parser takes for blanks and sh does not.
//
// It also refuses two expansions through which a word can run code that
// appears nowhere as a substitution: ${name@P}, which performs the command
// substitutions held in the value of name, and ${name=value} and
// ${name:=value}, which assign a value that bash then evaluates in
// arithmetic, where an array subscript can hold a command substitution:
// git log ${x:='a[$(id)]'}$((x)) runs id.
//
// Other bash-only syntax, such as <(...), <<< or arrays, is a syntax error
// in sh, which then runs nothing from that line on.
//
// # Limits
//
// Parse refuses a command longer than 64 KiB, one that lists more than
// 1,000 commands and one nested deeper than 100 levels,
// counting groups, bodies, substitutions, expansions and parentheses. It
// checks the nesting while the parser runs, so that a hostile command line
// costs little time and memory: parsing takes time roughly linear in the
// length of the command.
//
// # Errors
//
// All errors are of type [*Error], rendered as "shell: line:col: message";
// an empty command, or one of only whitespace and comments, is an error.
//
// # Concurrency
//
// [Parse] is safe for concurrent use. A [Script] is a plain value.
package shell

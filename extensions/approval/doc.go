// Package approval is the built-in approval extension: a toolCall
// middleware that decides, before a tool runs, whether to approve the call,
// deny it, or ask a human, with rules written as expr expressions
// (https://expr-lang.org) in a YAML file:
//
//	default: ask
//	protected: ["**/.env*"]
//	rules:
//	  - name: reads are fine
//	    when: tool.category == "read" && none(paths, {protected(#)})
//	    decision: approve
//	  - name: safe git
//	    when: >
//	      tool.name == "execute_command" &&
//	      all(shell.commands, {.name == "git" && .args[0] in ["status", "diff"]}) &&
//	      !shell.hasRedirect && !shell.hasSubstitution
//	    decision: approve
//	tests:
//	  - call: {tool: execute_command, args: {command: "git status && rm -rf /"}}
//	    expect: ask
//
// # Decisions
//
// Every rule is evaluated; among those that match, the strictest decision
// wins: deny, then ask, then approve. When none matches, the file's default
// applies. A rule that fails to evaluate counts as deny (fail closed) and is
// reported in an "approval.rule_error" event ([RuleErrorEvent]). Every
// decision is published as "approval.decided" ([DecidedEvent]) with the
// rules that matched and an explanation. A
// denied call does not run: the model reads "tool call denied: <why>".
//
// # The rule environment
//
// See [Env]: tool (name, category), args, agent, instance, turn, step,
// paths (path-like arguments, relative to the workspace), shell (the
// parsed command of execute_command: see package shell), shellError,
// chain (depth, agents), and the functions glob(pattern, path),
// protected(path) (the file's protected globs) and under(path, dir).
// Categories are read, write, execute, browser, mcp (and
// other), with per-tool overrides under categories:.
//
// # Loading
//
// [Load] compiles every rule (a rule that does not compile or is not
// boolean is refused with the file, the rule, the line and the column, and
// a caret) and runs the file's tests (a failing test refuses the file).
// Limits: 1 MiB per file, 10,000 rules, 16 KiB and 5,000 nodes per
// expression; expr's own memory budget bounds what an expression
// allocates when it runs (a huge range fails, and so denies).
//
// The extension reloads the file when it changes: the next tool call uses
// the new rules; an edit that does not load leaves the rules in force and
// publishes "approval.reload_failed" ([ReloadFailedEvent]).
//
// # Speed
//
// Decide skips a rule whose leading conditions are simple comparisons
// that the call fails (tool.name == "x", tool.category == "y",
// agent == "z", args.k == "v", any(shell.commands, {.name == "c"})),
// which is what evaluating it would conclude, without running it:
// BenchmarkApproval decides against 1,000 rules in about 10 µs.
//
// # Ask
//
// An ask pauses the turn through the runtime's pause ledger
// (api.Pending.PauseCall) as a pending item of kind "approval": the call gets a placeholder result, and the turn
// ends paused after its step. Answering "approve" resumes the turn and runs
// the call, once, before the model is called again; its result replaces
// the placeholder. "deny" (or a rejection, with its reason) resumes the
// turn without running it, and so does no answer within the timeout
// (config: {timeout: 1h}).
//
// # Consecutive mistakes
//
// Tool calls that fail in a row (a tool error, malformed arguments) are
// counted per instance; a success resets the count. At mistake_limit
// (default 3) the turn pauses after the step on a pending item of kind
// "mistakes", and a human
// answers with guidance the model reads when it resumes, or rejects to
// stop the task.
//
// # Delegated turns
//
// chain.depth and chain.agents describe the agents behind the turn, the
// first first: the delegation ancestry (call_agent, call_team_agent), then
// the callers waiting on it (ctx.agents.request). A rule can deny what a
// delegated turn may do.
//
// The callers' rules apply too. For every agent in the chain that loads
// this extension, its rules judge the call as well (with the same call:
// agent is still the one making it), and the strictest decision of all
// wins. So a child's own rules can only make a decision stricter: a caller
// that denies deploys denies them to every agent it delegates to, however
// deep. A caller's matches appear in the result as "caller:rule", and the
// explanation names the caller whose rules decided.
package approval

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
// # Settings
//
// The extension's config in an agent's extensions list:
//
//	extensions:
//	  - name: approval
//	    config:
//	      rules: rules.yaml      # required; relative to the config file
//	      timeout: 1h            # how long an ask waits; no answer denies
//	      mistake_limit: 3       # failed tool calls in a row that pause (at least 1)
//	      repetition_limit: 3    # identical calls in a row that pause (at least 2)
//
// 0 or absent is the default; a limit below its minimum is refused with
// an error that names the setting.
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
// A human may also edit the call: approve it with other arguments
// (Runtime.Edit, or ganglion answer ID edit '{"path":"b.txt"}'). The
// runtime checks them against the tool's schema first, and refuses an edit
// that does not fit, naming where, with the item left open. The call then
// runs once with the edited arguments; the history keeps the model's call
// as it was, and the call's result starts with "called with arguments a
// human edited: {...}" and carries them in its metadata
// ("edited_arguments"). The rules judge the edited call again
// when it runs: a human's approval answers an ask, and never overrides a
// deny, so an edit that a deny rule covers (a protected path) is denied.
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
// # Repeated calls
//
// A model stuck in a loop calls the same tool with the same arguments
// again and again. Calls are counted per instance: a call of the same tool
// with the same arguments as the instance's previous call (compared as
// canonical JSON, so key order and spacing do not matter) counts up, any
// other call starts the count again, and so does the first call of a turn
// that handles a user message (a person who asks for the same thing again
// is not a loop). The call that reaches repetition_limit (default 3; at
// least 2; raise it for an agent that polls) does not run: it would most
// likely give the same result a third time, or do the same thing a third
// time. The turn pauses after the step on an item of kind "repetition"
// that names the tool, the arguments and the count, and an
// "approval.repetition_limit" event ([RepetitionLimitEvent]) is published.
// A human answers with guidance, which the model reads when the turn
// resumes (the call's result is "not run: ... the user says: ..."), or
// rejects it to stop the task. The item has no deadline: only a human
// unsticks a stuck agent. After the pause the count starts again, so the
// model may make the call once more if the guidance says so. Counts live
// in memory, like the mistakes' (a restart starts them again), for up to
// 4,096 instances per agent.
//
// The check looks at what the model asks for, before the rules: a
// repeated call pauses whether the rules would approve it, ask a human or
// deny it (a model that retries a denied call is as stuck). A call a human
// approved (or edited) runs in the resume turn without being counted
// again: it was counted when the model made it.
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

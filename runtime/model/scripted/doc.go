// Package scripted is the offline model provider: a [Model] reads its
// responses from a YAML script keyed by agent, turn and step, so any scenario
// runs offline and deterministically. It is the runtime's embedded default
// model (provider "scripted" in the config) and the engine of most tests.
// Create one with [Load] or [Parse]; it implements [model.Provider], the
// interface defined in package runtime/model. Request below is the
// [model.Request] being answered.
//
// # Script format
//
// A script is one YAML document. Unknown keys are errors. The file
// testdata/example.yaml in this package is a commented example.
//
//	chunk_size: 0                  # optional
//	agents:                        # required: at least one agent
//	  assistant:                   # the agent's name, as in Request.Agent
//	    turns:                     # entries chosen by turn number or by match
//	      - steps:                 # step k answers Request.Step == k
//	          - reasoning: "Let me check."
//	            text: "Let me look."
//	            tool_calls:
//	              - name: read_file
//	                id: call_1
//	                args: {path: notes.txt}
//	              - name: broken
//	                arguments: '{"path": '
//	            usage: {input_tokens: 10, output_tokens: 5}
//	          - text: "The file says: {{ .LastMessage }}"
//	      - match: "(?i)weather"
//	        steps:
//	          - error: "simulated provider failure"
//	      - kind: resume               # the turn after a pause was answered
//	        steps:
//	          - text: "Approved; the file says: {{ .ToolResult }}"
//	    fallback:
//	      steps:
//	        - text: "I have nothing scripted for that."
//
// The keys, level by level:
//
//   - chunk_size (integer, default 0): 0 streams each text and reasoning in
//     one chunk; N > 0 splits them into chunks of at most N bytes, cut at
//     UTF-8 boundaries (a chunk holds at least one whole character, so a
//     character longer than N bytes makes a longer chunk).
//   - agents (mapping): agent name → agent.
//   - agent.turns (sequence of entries) and agent.fallback (one entry,
//     optional). An agent needs turns, a fallback or both.
//   - entry.match (string, optional): a Go regexp (package regexp syntax)
//     matched against the turn's input. Not allowed on the fallback.
//   - entry.kind (string, optional): the kind of turn the entry answers,
//     Request.InputKind: user_message (a user's message), agent_request
//     (another agent's request: call_agent, ctx.agents), delegation_report
//     (the reports of the tasks the agent delegated) or resume (the turn
//     after a pause was answered: a question, an approval, a dependency).
//     Not allowed on the fallback. With match, both must hold.
//   - entry.steps (sequence, at least one step).
//   - step.reasoning, step.text (strings, optional): streamed as reasoning
//     and text chunks. A string containing "{{" is a template (see below).
//     An empty string streams nothing.
//   - step.tool_calls (sequence, optional): the calls the step asks for.
//   - tool_call.name (string, required).
//   - tool_call.id (string, optional): unique within the step; default
//     "call_<turn>_<step>_<n>" with Request.Turn, Request.Step and n counting
//     the step's calls from 1.
//   - tool_call.args (mapping, optional): encoded to one JSON object at load,
//     keys in the script's order. Without args or arguments the arguments
//     are "{}".
//   - tool_call.arguments (string, optional): the raw argument text, streamed
//     verbatim, even when it is not valid JSON (to test malformed calls). A
//     call takes args or arguments, not both.
//   - step.usage (mapping, optional): input_tokens, output_tokens,
//     cache_read_tokens, cache_write_tokens (non-negative integers), streamed
//     as a usage chunk.
//   - step.error (string, optional, not empty): the stream ends with an
//     error chunk whose Err's text is this message.
//
// A step must hold at least one of text, reasoning, tool_calls, usage and
// error. YAML anchors, aliases and merge keys (<<) work, but a key may not
// come both from a merge and from the mapping itself, and a script may not
// expand to more than 262144 nodes through its aliases.
//
// # Choosing a response
//
// The turn's input is the Content of the last message in Request.Messages
// whose Role is user ("" if there is none); it stays the same across the
// steps of a turn. For a request, [Model.Stream] looks up the agent named
// Request.Agent and picks its entry:
//
//  1. the first entry with a match or a kind whose conditions hold: its
//     regexp matches the input, its kind is Request.InputKind (a request
//     without an InputKind takes no entry with a kind);
//  2. else the Request.Turn-th entry with neither (entries with a match or
//     a kind do not count: the plain entries are turns 1, 2, 3, ... in file
//     order);
//  3. else the fallback.
//
// Request.Step k then selects the entry's k-th step. Turns are numbered per
// instance, whatever their kind: a resume or a report is a turn of its own,
// which a fallback would answer from its first step again. An agent that
// pauses or delegates therefore scripts that turn with a kind.
//
// # What each kind of turn receives
//
// Every turn's input is a user message in the history; what it holds:
//
//   - user_message: the user's text.
//   - agent_request: the caller's message (call_agent's message, the text
//     of ctx.agents.request).
//   - delegation_report: the reports of the delegated tasks, once all have
//     come: a notice restoring the delegation context ("[System notice:
//     delegation context restored]", the original request, the
//     delegations), then "[Delegation report]" (one task) or "[Merged
//     report of N parallel delegations]", then per task a heading "## AGENT,
//     task ID" (with " (failed)" when it failed) and its answer.
//   - resume: what the answers to the paused turn's items say, one
//     paragraph each, for example
//     `Answer to your question "Which plan?": Pro`,
//     "A human approved the call of read_file; it ran." or
//     "A human denied the call of read_file; it did not run.". A call that
//     waited for an approval has run (or been refused) before the resume
//     turn's first step: its result stands in the history where the
//     paused step's result was, and .ToolResult shows it.
//
// # Chunks
//
// A step streams, in this order: its reasoning, its text, then for each tool
// call a [model.KindToolCallStart], one [model.KindToolCallDelta] holding all
// the arguments (left out when raw arguments are empty) and a
// [model.KindToolCallEnd], then a [model.KindUsage] chunk if usage is set, and
// last a [model.KindError] chunk if error is set.
//
// Chunks are computed at load, so a call to Stream costs one small
// allocation, plus one per tool call whose default id depends on
// Request.Turn (in a match or fallback entry). Only a step with a template
// is rendered per call.
//
// # Templates
//
// A text or reasoning containing "{{" is a Go text/template, parsed at load.
// It sees these fields:
//
//	.Agent        Request.Agent
//	.Instance     Request.InstanceKey
//	.Turn         Request.Turn
//	.Step         Request.Step
//	.Kind         Request.InputKind: user_message, agent_request, ...
//	.Input        the turn's input (the last user message's content)
//	.LastMessage  the content of the last message, whatever its role
//	.ToolResult   the content of the last tool result in the history ("" if none)
//
// A template that fails when executed ends the stream with a
// [model.KindError] chunk naming the template's position.
//
// # Errors
//
// [Load] and [Parse] reject a bad script with an error whose first line is
// "file:line:col: message", followed by the source lines with a caret under
// the column. [Model.Stream] returns an error, not a chunk, when the script
// has no response for the request: an unknown agent, a turn with no entry and
// no fallback, or a step beyond the entry's steps. The texts are stable, for
// example:
//
//	scripted model: no agent "x" in script.yaml (agents: a, b)
//	scripted model: agent "assistant" has no turn 3 in script.yaml (2 turns, no fallback)
//	scripted model: agent "assistant" has no turn 3 in script.yaml (2 turns, 1 entry with match or kind that did not apply, no fallback)
//	scripted model: agent "assistant" turn 1 has no step 4 in script.yaml (3 steps)
package scripted

// Package cassette records a session of the runtime into a file and plays
// it back offline, bit for bit: the model's answers, the tools' results,
// the clock and the IDs the session used.
//
// A [Recorder] writes a cassette as the session runs; a [Player] replays
// one. Both are a [Tape], which the runtime takes with runtime.WithTape:
//
//	rec, err := cassette.Create("session.cassette")
//	...
//	rt, err := runtime.New(ctx, runtime.WithConfigFile("ganglion.yaml"), runtime.WithTape(rec))
//	... // run the session
//	rt.Close()
//	err = rec.Close() // the first write error, if any
//
// A session to record starts from an empty store (runtime.WithMemoryStore),
// as its replay does: a conversation that began before the recording
// would be sent to the model in full, and diverge.
//
// Replaying puts a [Player] in the recorder's place. The player answers
// each model call with the recorded response, after comparing the request
// the runtime sends now with the recorded one: at the first difference it
// stops the turn with a [*Divergence] that says which call, which message
// and which field differ (or, with [Lenient], it goes on with the
// recorded answer and keeps every divergence: [Player.Divergences]).
// Tools that act on the world (the built-in file and command tools, and
// Go tools given with runtime.WithTool) are doubles: they return the
// recorded result without running. Tools that are code under test (an
// extension's tools, and the runtime's delegation tools) run, and their
// results are compared with the recording.
//
// IDs and the clock replay as recorded: an ID is keyed by what it is for
// (the task of a turn's call, the pending item of a step), so parallel
// turns get theirs whatever order they run in; clock readings replay in
// order, which is exact for one instance's turns and may hand two
// parallel turns each other's readings.
//
// Package cassettetest drives a replay from a test: it issues the
// recorded inputs, collects the transcript and compares it with a golden
// file. [Cassette.Script] turns a recording into a script of the scripted
// model, and [Cassette.Calls] lists the tool calls the model asked for,
// for approval rules to decide again.
//
// # Format
//
// A cassette is UTF-8 text, one JSON object a line (JSON Lines), so that a
// change to a session shows as a change of a few lines in a diff. Every
// line has a "k" (kind) key; the first line is the header:
//
//	{"k":"cassette","version":1,"start":"2026-11-27T10:00:00Z"}
//
// and the lines after it, in the order the session made them:
//
//   - input: what the session was given, through the runtime's API: op
//     "send" (agent, instance, input), "ask" (agent, instance, text), or a
//     pending item's resolution, "answer", "edit", "skip", "provide" or
//     "reject" (id, text). A provided value is never written: text is
//     "[secret]", and the recorder masks the value wherever else it
//     would appear.
//   - model: one model call and its response: call (its number), the
//     model (the label of an extension's model, or none for the agent's
//     own), agent, instance, turn_id, step, the request's parameters
//     (model_name, system, max_output_tokens), the messages the model
//     was sent, and the tools it was offered. To keep cassettes small and
//     their diffs local, messages lists only what follows the first same
//     messages of the previous call for the same agent, instance and
//     model, and tools is left out when the catalog did not change since
//     that call. A provider that refused the call has open_error (kind,
//     provider, status, message) and no chunks.
//   - chunk: one streamed piece of a model call's response: call, ms (the
//     time since the request, in milliseconds), and the chunk's kind with
//     its text, tool_call_id, tool_name, arguments, usage or error. The
//     chunks of a call follow its model line.
//   - tool: one tool run: agent, instance, turn_id, step, call_id, name,
//     arguments, and its result's content and is_error (or error, the
//     error the tool returned instead, or no_result), and ms.
//   - id: an ID the runtime made (a task's, a pending item's): key, what
//     it was made for, and id.
//   - clock: the clock readings since the last line, in ns, each the
//     nanoseconds since the reading before it (the first since start).
//   - event: an event the session published, without its time (the clock
//     lines have it): topic, agent, instance, turn_id, source, data.
//     Streamed model deltas are left out: the chunks hold them.
//   - mcp_tools: an MCP server's tool listing (server, tools), written
//     when it changed: a replay lists the server's tools from it, without
//     the server (as the session's listing ended).
//
// A reader refuses a cassette of a later version, and a line it cannot
// read, with its line number.
//
// # Secrets
//
// Provided secrets are never written: the runtime hands the tape only
// values it has masked already (tool results, inputs, the history the
// model sees), and the recorder masks every provided secret again in
// every line. API keys are not part of a request. What a tool returns is
// recorded as the tool returned it, less the provided secrets: a
// toolCall middleware under test (a redactor) must see what it masks, so
// a tool that prints a secret the runtime was never given puts it in the
// cassette. Read a cassette before you publish it.
package cassette

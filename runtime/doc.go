// Package runtime is the Ganglion runtime an app embeds: it hosts agents,
// runs their turns, persists their instances, and publishes what happens.
//
// Build one with [New] from a config ([WithConfigFile] or [WithConfig]) and
// send it input with [Runtime.Send]:
//
//	rt, err := runtime.New(ctx, runtime.WithConfigFile("ganglion.yaml"))
//	...
//	defer rt.Close()
//	res, err := rt.Send(ctx, "assistant", "default", runtime.UserMessage("hello"))
//
// An agent is a named definition: system prompt, model, tools, extensions
// and limits. An instance is one conversation of an agent, keyed by (agent,
// instance key), created on first use and kept in the store. A turn handles
// one input until the model answers in text, max_steps is reached, a
// middleware stops it, or it fails; each of its steps is one model call plus
// the tool calls it asks for.
//
// A turn that needs a human ends paused, and the instance refuses input
// ([ErrPaused]) until [Runtime.Answer] or its kin resolve the pending items;
// the last one runs the resume turn. Models delegate to other agents with
// call_agent: a delegation is a durable [Task], and a root task's answer
// goes to its requester's [Channel]; [Runtime.Ask] waits for it. A process
// that stopped leaves nothing half done: [New] finishes it unless given
// [WithoutRecovery]. A config with a cluster block runs on several processes
// over NATS JetStream, each instance owned by one of them, in a program that
// imports package runtime/cluster.
//
// A [Runtime] is safe for concurrent use. Turns of one instance run one at a
// time in arrival order; turns of different instances run in parallel.
//
// The whole picture (options, errors, pauses, delegation, crashes, tracing,
// cluster mode) is in docs/embedding.md; the config's keys in
// runtime/config/REFERENCE.md.
package runtime

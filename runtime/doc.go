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
// and limits. An instance is one conversation of an agent, keyed by
// (agent, instance key); it is created on first use and persisted in the
// store, so it survives restarts. A turn handles one input event until the
// model answers in text, the agent reaches max_steps, a middleware stops it,
// or it fails; it is a loop of steps, each one model call plus the tool calls
// it asks for (run concurrently when there are several).
//
// The pieces live in sub-packages: config (the YAML file), model (the
// provider interface and the scripted model), tool (the tool registry,
// argument checking and the workspace tools), store (badger and in-memory
// persistence) and events (the bus). Middleware and the Extension API are in
// the pipeline and extensions packages.
//
// # Concurrency
//
// A [Runtime] is safe for concurrent use. Turns of one instance run one at
// a time in arrival order; turns of different instances run in parallel.
//
// # Errors
//
// Send returns [ErrClosed] after Close, an error wrapping [ErrUnknownAgent]
// for an agent the config does not define, and for a failed turn a result
// with finish reason error (or aborted, when the caller's context ended)
// together with an error that names the agent, the instance and the turn —
// and, when an extension failed, the extension and its hook.
package runtime

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
// # Pausing
//
// A turn that needs a human ends with finish reason paused: an extension
// (the built-in protocol extension, later approval rules) stores a pending
// item in the ledger through its API. The instance then refuses new input
// with [ErrPaused] until the item is resolved with [Runtime.Answer],
// [Runtime.Skip], [Runtime.Provide] or [Runtime.Reject] — from this
// process or a later one. The extension's pending kind says what the
// resolution means; when the paused turn has no open item left, the call
// runs a resume turn (input kind resume) whose input tells the model what
// was answered, and returns its result. A deadline that passes is handled
// by a timer while the runtime runs and by [New] at start-up
// ([Runtime.ExpirePending] does it on demand). A resume is recorded by its
// own input message, committed before anything else of the resume turn, so
// a crash never loses or repeats one: New resumes what a stopped process
// left undone.
//
// Provided secrets are sealed with AES-256-GCM in the store (the key:
// [WithSecretKey], [SecretKeyEnv], or the key file of [WithSecretKeyFile]),
// reach execute_command as environment variables, and are redacted from
// every tool result.
//
// # Agents calling agents
//
// Middleware calls other agents through the turn's and step's Agents
// (request waits for the answer, send does not); the runtime routes the
// call through its [Transport], spawns the target instance, adds the
// caller's metadata, and refuses cycles ([ErrCycle]) and chains deeper
// than the config's agent_calls.max_depth ([ErrDepth]).
//
// Models delegate with the call_agent and call_team_agent tools. A turn that delegated finishes with reason delegated and a
// [Task] stored for its input; each delegation is a child task whose
// turn starts when the delegating turn ends. A child's answer is
// reported to its parent; when the parent's last report is in, its agent
// gets one merged report, after a reminder of what it delegated, and the
// root task's final answer goes to its requester's [Channel]:
// [Runtime.Ask] waits for it. Tasks are durable: [New] starts again the
// task turns a stopped process left unfinished ([WithoutRecovery] turns
// that off, [Runtime.Recover] does it on demand), and
// [Runtime.WaitTasks] waits for the background task turns.
//
// # Crashes
//
// A step commits atomically: the model's reply before any tool it asks for
// runs, the step's tool results together with the tasks they announce, and
// a question with its pending item ([pipeline.StepContext.WatchReply]). A
// tool call the history shows without a result, because the process died
// while it ran, is never run again: when its instance loads it gets an
// error result marked [MetaInterrupted], and a [events.TurnInterrupted]
// event is published. A task's turn cut short, and a resume turn cut short
// (by a crash, or by [Runtime.Shutdown] when its time is up), continue from
// their next step (input metadata "continues"), on the instance's next
// owner. Every call carries a stable
// [pipeline.ToolCallContext.IdempotencyKey]. [New] finishes what a stopped
// process left open unless given [WithoutRecovery]; [Runtime.Recover] does
// it on demand, for every stored instance.
//
// # Context condensation
//
// The model sees an instance's effective history: the stored history
// without the messages marked truncated, with each summary in place of
// the messages it condenses (the marks are message metadata, see
// pipeline.MetaTruncated and its neighbours). [Runtime.History] returns
// the full history, [Runtime.EffectiveHistory] the effective one. When a
// provider reports that the context window was exceeded, the runtime
// leaves out the oldest messages until 75 % remain and tries again, at
// most 3 times.
//
// Middleware sees the same window through [pipeline.StepContext.Window]
// (the effective messages with token counts and what must stay, and ways to
// truncate or summarise) and calls models outside the conversation through
// [pipeline.StepContext.Models], the usage charged to the turn. The
// built-in extension condense (package extensions/condense) keeps the
// history within the window with them before the provider refuses it.
//
// The pieces live in sub-packages: config (the YAML file), model (the
// provider interface and the providers; model/scripted is the offline
// one) and tool (the tool registry, argument checking and the workspace
// tools). The layers below the runtime are packages of their own, which
// extensions use without it: pipeline (middleware, the step's Window and
// Models), store (badger and in-memory persistence), events (the bus and
// its payload types), ledger (the pending items of paused turns) and
// extensions (the Extension API; extensions/standard lists the built-ins).
//
// # Tracing
//
// With [WithTracerProvider], or a telemetry: block in the config, or only
// OTEL_EXPORTER_OTLP_ENDPOINT in the environment, every turn is a span
// ("invoke_agent AGENT"), with a span for each step, each model call
// ("chat MODEL", with token usage and the time to the first chunk), each
// tool call ("execute_tool TOOL") and each extension layer ("HOOK
// EXTENSION", marked when a fail_open layer was skipped), after the
// OpenTelemetry GenAI semantic conventions. A turn that ctx.agents calls
// runs under the calling layer; a delegated task's turns run under the
// call that delegated it, from the trace context stored with the task,
// also after a restart; a resume turn links to the turn that paused.
// What extensions publish during a turn (approval decisions,
// condensation, pauses) are events of its span. Message text, tool
// arguments and results are in spans only with telemetry.content, and
// provided secrets never. [WithMeterProvider] (or the same config)
// records the metrics: turn and model-call durations, tokens, tool calls,
// extension layer failures and the pending items open. Close exports
// what is buffered.
//
// # Concurrency
//
// A [Runtime] is safe for concurrent use. Turns of one instance run one at
// a time in arrival order; turns of different instances run in parallel.
//
// # Cluster mode
//
// A config with a cluster block ([config.Cluster]) makes several processes
// run it as one system over NATS JetStream: they share the store
// (package store/jetstream); each instance's turns run on the one process
// that holds its lease, wherever they are sent from (Send, Ask, agent
// calls, delegated tasks, the answers to pending items); events reach
// every process's bus, marked with the process they happened on
// (events.Event.Process); and a process that dies has its instances and
// their tasks taken over by the others once its leases expire. A former
// owner that stalled past its lease cannot write over the new owner's: its
// commits carry the instance's fence (store.Store.Fence), which the new
// owner raised. Task budgets add up across processes. Every process needs
// the same [SecretKeyEnv]. RATIONALE.md, "Cluster mode: one owner per
// instance", says how, and what is not done yet.
//
// # Errors
//
// Send returns [ErrClosed] after Close (and once [Runtime.Shutdown] began,
// or for a turn it cut), an error wrapping [ErrUnknownAgent]
// for an agent the config does not define, one wrapping
// [ErrAgentUnavailable] for an agent that failed to load ([WithPartialLoad]),
// and for a failed turn a result
// with finish reason error (or aborted, when the caller's context ended)
// together with an error that names the agent, the instance and the turn —
// and, when an extension failed, the extension and its hook. Send on a
// paused instance returns an error wrapping [ErrPaused] that names the
// pending items. A resume turn whose task failed (a required dependency
// rejected or never provided) returns an error wrapping [ErrTaskFailed].
// Send and Ask refuse, before anything runs, an instance key that
// [store.ValidateInstanceKey] refuses (an error matching
// [store.ErrInvalidName]) and metadata that sets a key the runtime
// reserves (matching [pipeline.ErrReservedMetadata]): those keys are the
// runtime's own marks, and input from outside never carries them.
package runtime

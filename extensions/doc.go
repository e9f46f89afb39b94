// Package extensions is Ganglion's extension host: the one Extension API
// through which native Go extensions and WebAssembly modules alike register
// middleware, tools, state, event handlers and logging.
//
// An extension is loaded per agent. The runtime looks up each `name:` of an
// agent's config in a [Registry], calls the [Factory] with the extension's
// settings, and calls [Extension.Register] with an [API] bound to that agent:
//
//	reg := extensions.NewRegistry()
//	reg.Register("hello", func(cfg extensions.Config) (extensions.Extension, error) {
//		return extensions.Func(func(api *extensions.API) error {
//			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
//				api.Logger.Info("turn", "input", t.Input().Text)
//				return t.Next(ctx)
//			})
//			return nil
//		}), nil
//	})
//
// Middleware order is the order of the agent's extensions list, then each
// layer's priority. An extension's on_error setting (fail_closed or
// fail_open) decides whether its failures fail the turn or skip its layer.
//
// # Pausing for a human
//
// [API.Pending] lets an extension pause a turn on something a human must
// answer. In Register it declares the kinds of item it creates
// ([Pending.Handle] with a [PendingKind]: what an answer, edit, skip, provide,
// reject or timeout means); in a step middleware it stores an item with
// [Pending.Pause] and stops the turn with finish reason paused. The
// runtime keeps the item in its ledger, calls the kind's Resolve when a
// human acts — also in a later process — and resumes the instance once the
// turn has no open item left. An [Outcome] may carry a [Secret], which the
// runtime keeps sealed and gives commands as an environment variable;
// [API.Secrets] reads one back only if the extension's config grants it.
//
// A toolCall middleware pauses the call itself with [Pending.PauseCall]:
// in the resume turn the kind's Resume gives the call its result through
// a [ResumeCall] — running it ([ResumeCall.Run]), running it with the
// arguments a human edited ([ResumeCall.RunWith], for an [ActionEdit],
// which the runtime checks against the tool's schema before Resolve sees
// it), or deciding it without running it ([ResumeCall.Result]).
//
// # The context window and models
//
// A step middleware reads the window its model is about to be sent with
// [pipeline.StepContext.Window] (the effective messages with token counts,
// which must stay, and ways to leave messages out or summarise them), and
// calls a model outside the conversation with [pipeline.StepContext.Models],
// the usage charged to the turn. [API.Models] opens a model of the
// extension's own from its settings; the condense extension is built on
// these alone.
//
// Built-in extensions live in sub-packages (audit; protocol, which pauses
// on questions and dependencies; approval, which gates tool calls by rules;
// condense, which keeps the context within the window), each an ordinary
// extension; standard lists them for the runtime. The WASM loader lives in
// a sub-package too.
package extensions

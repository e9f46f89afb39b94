// Package audit is a built-in extension that logs every tool call of an
// agent and counts its turns and tool calls in the extension's state.
//
// Enable it in an agent's config:
//
//	extensions:
//	  - name: audit
//	    config:
//	      log_arguments: false   # default; arguments may hold secrets
//
// Each tool call is logged at info level with its tool, call ID, duration
// and the size of its result (result_bytes), never the result itself: a
// tool's output may quote files or environments. At debug level a second
// record, "tool call result", shows the first 200 bytes of the result as
// the runtime hands it on, with provided secrets already masked. A call
// that a middleware inside audit fails is logged at warn level with its
// error.
//
// Its state per instance is a [Counts] object, readable with
// `Runtime.ExtensionState(ctx, agent, instance, "audit")`.
package audit

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
// Its state per instance is a [Counts] object, readable with
// `Runtime.ExtensionState(ctx, agent, instance, "audit")`.
package audit

// Package condense is the built-in extension that keeps an agent's context
// inside its model's window. Before each model call its step middleware
// reads the turn's [pipeline.Window]; when the count, corrected by what the
// provider reported for the previous call, passes the window less a buffer
// and the reserved answer, it has a summariser (the agent's own model, a
// model of its own, or another agent) summarise the messages since the last
// summary, and puts the summary in their place. When there is too little to
// summarise, the summary fails, or the window is still too full, it has the
// runtime truncate the oldest messages instead. Messages that must stay (the
// task, pinned messages, what open pending items and delegations need, the
// newest) are never condensed.
//
// It uses only the Extension API (the step's Window and Models, ctx.agents
// and Events): a third party could have written it.
//
// Its settings, all optional:
//
//	summariser     self (default: the agent's model), model, or agent
//	model          the summariser model, with summariser: model; the
//	               fields of an agent's model (provider, name, ...)
//	agent          the summariser agent, with summariser: agent
//	context_window overrides the model's context_window (required
//	               somewhere: without a window the extension does
//	               nothing)
//	buffer         share of the window kept free; default 0.10
//	min_messages   fewest messages worth a summary; default 5
//	keep           share of the messages truncation keeps; default 0.75
//	keep_recent    newest messages never summarised; default 2
//	timeout        bound on a summary; default 60s
//
// Each summary is published as a context.condensed event with the message
// counts and the estimated token counts before and after.
package condense

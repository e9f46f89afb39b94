// Package server is the HTTP API of a [runtime.Runtime], so that people
// and programs outside the process can talk to its agents and answer what
// they wait for. [New] returns an [http.Handler]; `ganglion serve` runs
// it, and an app mounts it in its own mux:
//
//	srv, err := server.New(rt, server.WithToken(token))
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//	mux.Handle("/v1/", srv)
//
// It uses only the runtime's public API.
//
// # Calls
//
// Every path starts with /v1/; bodies and answers are JSON.
//
//	GET  /v1/health                                     {"status": "ok"}: the process answers; needs no token
//	GET  /v1/ready                                      {"status": "ready"}, or 503: the runtime serves; needs no token
//	GET  /v1/agents                                     the agents (description, team, tools, why one is unavailable) and the teams
//	GET  /v1/agents/{agent}/instances                   the agent's stored instances
//	POST /v1/agents/{agent}/instances/{key}/messages    {"text": ..., "metadata": {...}}: a turn; its result
//	GET  /v1/agents/{agent}/instances/{key}/history     the stored messages (?effective=true: what the model sees)
//	GET  /v1/agents/{agent}/instances/{key}/usage       the model usage of its turns
//	GET  /v1/agents/{agent}/instances/{key}/events      the instance's events, as a stream
//	GET  /v1/events                                     every event, as a stream (?agent=, ?instance=, ?topic=)
//	GET  /v1/pending                                    open pending items (?all=true: resolved ones too; ?agent=, ?instance=)
//	GET  /v1/pending/{id}                               one item
//	POST /v1/pending/{id}/answer                        {"answer": ...}
//	POST /v1/pending/{id}/skip                          an optional question takes its default
//	POST /v1/pending/{id}/provide                       {"value": ...}: a dependency's value, a secret
//	POST /v1/pending/{id}/reject                        {"reason": ...}
//	POST /v1/pending/{id}/edit                          {"arguments": {...}}: approve a call with other arguments
//	GET  /v1/tasks                                      the open delegation tasks (?agent=, ?instance=)
//	GET  /v1/gui/{client}/answers                       a browser client's answers, as a stream ([WithGUI])
//
// An action on an item answers with the item as it is then ("item", left
// out when the item cannot be read after the action, as while the server
// stops) and the result of the turn it resumed. A provided value is never
// in an answer, an event or a log.
//
// # Input
//
// A body is one JSON object: an unknown field, or anything but white
// space after the object ({"text": "x"} {"text": "y"}), is refused with
// invalid_request, which says where. A message's optional metadata may
// hold channel, replyTo and requester (see Browser clients), and keys of
// the client's own, best under a prefix ("myapp.ticket"): no key with a
// '.' is ever the runtime's. The keys the runtime gives meaning to are
// reserved, and a message that sets one is refused, before it is stored,
// with invalid_request naming the key: the effective history's marks
// (truncated, summary, condensed_by, pinned), the marks of crashes and
// pauses (interrupted, awaits, edited_arguments, continues, turn_id,
// resumes, pending, failed), delegation's (taskId, parentTaskId,
// taskChain, reported, team) and an agent call's (chain, callerAgent,
// callerInstanceKey, callerTurnId, callSource); [pipeline.CheckMetadata]
// lists them. An instance key in a path that addresses an instance for a
// turn must pass [store.ValidateInstanceKey] (no control or invisible
// characters, no / \ * >, no space at either end, not . or ..), or the
// call is refused with invalid_name; reads (history, usage) also take the
// keys of instances stored before that rule.
//
// # Streams
//
// Event streams are server-sent events: each has an ID, its topic as the
// event name, and the event (see package events) as its data. A client
// that reconnects with the Last-Event-ID header (or ?last_event_id=) gets
// every event it missed, as long as the server's backlog (10,000 events by
// default, [WithBacklog]) still holds it; past that it gets a "gap" event
// first. An ID from another server process is refused: the client reads
// the history and the pending items again. A stream sends a comment every
// 15 s while nothing happens. No client, however slow, holds up a turn or
// another client: each reads the backlog at its own pace.
//
// POST .../messages with "Accept: text/event-stream" (or ?stream=true)
// streams the instance's events while the turn runs (model text deltas,
// tool calls and results, pauses, retries, condensation, delegations),
// then a "result" event with the turn's result, or an "error" event. When
// the turn delegated, the stream goes on with the delegation events and
// the instance's merged-report turns, and ends with an "answer" event:
// the task.answered event of the task, the chain's final answer. A
// client that goes away while its turn runs aborts the turn, as a
// cancelled context aborts [runtime.Runtime.Send].
//
// # Errors
//
// A failed call answers {"error": {"code", "status", "message"}} (and
// "result", when a turn ran). The codes: unauthorized (401),
// invalid_request, invalid_action, invalid_name (400), not_found,
// unknown_agent (404), paused, already_resolved, task_failed (409: the
// action was taken and the task it was for failed, as a rejected required
// dependency fails it), too_large (413),
// agent_unavailable, closed, unavailable, outcome_unknown (503), timeout
// (504), internal (500). The message says what was wrong and what to do.
//
// A transient failure carries a Retry-After header, in seconds, and the
// same as "retry_after" in its body: unavailable (the store did not
// answer: a NATS server is down, or its cluster elects a leader, for
// about 5 s) and closed (the process is stopping; in a cluster another
// takes its instances over). A call that failed so did nothing, unless a
// turn ran (its "result" has a turn_id): a GET, an action on a pending
// item (one that was applied is refused as already_resolved) and a
// message whose turn did not start may be sent again as they are.
// outcome_unknown (a write the store never confirmed, or a call whose
// process stopped or lost the instance before it answered: it may have
// been done) has no Retry-After: look at the history or the item first.
//
// # Browser clients
//
// [GUI] is the "gui" channel ([ChannelGUI]): a message sent with the
// metadata {"channel": "gui", "replyTo": CLIENT} has its task's answer,
// however long the delegation chain behind it takes, pushed to CLIENT's
// answer stream as an "answer" event (a runtime.Report). A client that is
// away gets the answers kept for it when it opens its stream again, also
// from a server started since. Server-sent events, not a WebSocket: the
// answers flow one way, the messages go as ordinary POSTs, and a browser's
// EventSource reconnects by itself.
//
// # Webhooks
//
// [WithWebhooks] posts notifications to URLs: pending.created,
// pending.resolved, task.answered and turn.failed, each {"type",
// "timestamp", "data"} and signed as Standard Webhooks say (see
// [Webhook]). They go through an outbox directory: written before they
// are sent, deleted once a receiver took them (2xx), tried again with a
// growing wait otherwise, and sent by the next server on the same
// directory after a stop. One event has one ID (webhook-id), the same on
// every try and when the runtime publishes the event again after a
// restart; once taken, an event is not sent again. A receiver that took
// a notification whose answer was lost gets it once more, with the same
// ID: receivers deduplicate by it, as the standard asks. An event the
// process published just before it died, before the outbox held it, is
// not sent. A redirect is not followed, to another host or the same: the
// signed notification goes only to the URL configured, and a 3xx answer
// is a failed try, retried as any other, with a warning that names its
// Location.
//
// # The web console
//
// Any path outside /v1/ serves the web console: one page, its script and
// its style, embedded. It asks for the token, keeps it in the tab's
// session storage, and sends it in the Authorization header of every
// call, never in a cookie or a URL, so another site cannot make a request
// in the console's name; a Content-Security-Policy allows only the
// server's own script, style and API, and no framing.
//
// # Security
//
// [WithToken] makes every call but /v1/health and /v1/ready need "Authorization: Bearer
// TOKEN"; a call without it is answered 401, with where to find the token
// when [WithTokenHint] says it. [Server.Guard] puts an app's own handlers
// behind the same token (ganglion serve mounts its MCP endpoint so).
// Request bodies are bounded (1 MiB).
package server

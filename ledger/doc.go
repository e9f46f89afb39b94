// Package ledger is Ganglion's pause ledger: the one place where the items
// a paused turn waits for — a question, a dependency, a tool approval — are
// kept, with the instance, turn, step and tool call they belong to, their
// status and their timestamps.
//
// An item is created pending and open, and resolved once: answered,
// provided, rejected, skipped, timed out or failed. The one exception is a
// timeout that keeps the item open (a required question still waits for its
// answer); it can then be resolved once more. When all items of a paused
// turn are closed, the runtime resumes the turn and marks them with the
// resuming turn's ID ([Ledger.MarkResumed]). A second answer, an answer to an
// unknown item or an answer meant for another instance is refused and
// changes nothing. Every change is published on the event bus
// ("pending.created", "pending.answered", ..., and "pending.resumed" when
// the paused turn resumes).
//
// The ledger persists through the runtime's store, so items survive a
// restart, with their deadlines (ExpiresAt); the runtime expires them by
// resolving them with status timeout, also after the process was down.
// What a resolution means for the paused turn (how it resumes) belongs to
// the extension that created the item.
//
// Items never hold secrets: a provided dependency's value is kept apart,
// encrypted, by the code that receives it.
package ledger

// Package ledger keeps the items a paused turn waits for (a question, a
// dependency, a tool approval) with where they belong, their status and
// their times, in the runtime's store, so they survive a restart. An item
// is resolved once; a second answer, or one for another instance, is
// refused and changes nothing. Items never hold secrets. The lifecycle and
// its events: docs/extensions.md, "The pause ledger".
package ledger

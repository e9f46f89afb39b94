// Package pause keeps the pending items of turns that wait for a human:
// the extensions' kinds of them (extensions.PendingHost), the hook by
// which a turn pauses and a resume turn resumes its calls (engine.Hook),
// the humans' actions on an item (Act), the resumes the store failed to
// save, tried again, and the loop that expires items whose deadline
// passed. The runtime embeds one Pauses and reaches it through its
// methods; Pauses reach the runtime only through Env.
package pause

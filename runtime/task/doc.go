// Package task holds the records of delegation: a [Task] as stored while
// it is open, what it remembers of its delegations and their reports, the
// [Report] of a root task's answer and the [Channel] that takes it to its
// requester, and what a tree of tasks has spent ([Spend]). The runtime
// makes and runs the tasks; package runtime names these types too.
package task

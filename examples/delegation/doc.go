// Command delegation is a delegation chain, offline. Agents hand
// work to other agents with the call_agent tool; a child works on its task
// after its parent's turn ends, and its report comes back to the parent as a
// new message. Runtime.Ask returns the root agent's final answer, however
// long the chain.
//
// It runs two scenarios with the scripted model and the in-memory store:
//
//  1. A parallel fan-out: lead calls call_agent three times in one step
//     (researcher, coder, reviewer). The three work concurrently, and lead
//     gets ONE merged report of all three, then answers.
//  2. A chain three deep: planner delegates to architect, which delegates
//     to engineer. The engineer answers, and the reports come back link by
//     link: architect answers from engineer's report, planner from
//     architect's.
//
// For each it prints the conversations, the reports the agents received,
// the final answer, and the task.* events (task.delegated, task.completed,
// task.answered).
//
//	go run ./examples/delegation
package main

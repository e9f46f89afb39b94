package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
)

// taskID matches the random task IDs, which the test redacts.
var taskID = regexp.MustCompile(`task_[0-9a-f]{12}`)

func TestDelegation(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	const want = `== 1. Parallel fan-out: lead delegates to three agents in one step

> Ship the CSV export of the orders table. (Ask lead/fanout)

lead's conversation:
  user: Ship the CSV export of the orders table.
  assistant: call_agent {"agent_id":"researcher","message":"Find the CSV dialect our users' spreadsheets expect."}
             call_agent {"agent_id":"coder","message":"Implement the CSV export of the orders table."}
             call_agent {"agent_id":"reviewer","message":"Review the CSV export change for edge cases."}
  tool: Delegated to researcher as task task_…. …
  tool: Delegated to coder as task task_…. …
  tool: Delegated to reviewer as task task_…. …
  assistant: I delegated research, code and review; I will answer when their reports are in.
  user: [System notice: delegation context restored] …
  assistant: Ship it: the CSV export follows RFC 4180, is implemented with streaming writes, and the review appro …

the report lead received:
  [System notice: delegation context restored]
  This is where you were when you delegated 3 task(s):
  - Original requester: user
  - Original request: Ship the CSV export of the orders table.
  - Delegations:
    1. researcher: Find the CSV dialect our users' spreadsheets expect.
    2. coder: Implement the CSV export of the orders table.
    3. reviewer: Review the CSV export change for edge cases.
  Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.
  
  ---
  [Merged report of 3 parallel delegations]
  
  ## researcher, task task_…
  RFC 4180: comma separators, CRLF line ends, quotes doubled.
  
  ## coder, task task_…
  Implemented: streaming writes, one row per order.
  
  ## reviewer, task task_…
  Approved: embedded quotes and newlines are escaped.

final answer of lead (task task_…):
  Ship it: the CSV export follows RFC 4180, is implemented with streaming writes, and the review approved it.

events:
  task.delegated  lead/fanout → researcher: "Find the CSV dialect our users' spreadsheets expect." (pending 3)
  task.delegated  lead/fanout → coder: "Implement the CSV export of the orders table." (pending 3)
  task.delegated  lead/fanout → reviewer: "Review the CSV export change for edge cases." (pending 3)
  task.completed  coder/fanout, reports to its parent: "Implemented: streaming writes, one row per order."
  task.completed  researcher/fanout, reports to its parent: "RFC 4180: comma separators, CRLF line ends, quotes doubled."
  task.completed  reviewer/fanout, reports to its parent: "Approved: embedded quotes and newlines are escaped."
  task.completed  lead/fanout, root task: answers its requester: "Ship it: the CSV export follows RFC 4180, is implemented with streaming writes, and the review approved it."
  task.answered   lead/fanout → user on channel api (delivered true)

== 2. A chain three deep: planner → architect → engineer

> Make the pricing page fast. (Ask planner/chain)

architect's conversation:
  user: Design a cache for the pricing service.
  assistant: call_agent {"agent_id":"engineer","message":"Build a read-through LRU cache in front of the pricing service."}
  tool: Delegated to engineer as task task_…. …
  assistant: The engineer is on it.
  user: [System notice: delegation context restored] …
  assistant: Design: a read-through LRU cache; the engineer built it and its tests pass.

the report architect received:
  [System notice: delegation context restored]
  This is where you were when you delegated 1 task(s):
  - Original requester: planner/chain
  - Original request: Design a cache for the pricing service.
  - Delegations:
    1. engineer: Build a read-through LRU cache in front of the pricing service.
  Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.
  
  ---
  [Delegation report]
  
  ## engineer, task task_…
  Built the LRU cache; 12 tests pass.

planner's conversation:
  user: Make the pricing page fast.
  assistant: call_agent {"agent_id":"architect","message":"Design a cache for the pricing service."}
  tool: Delegated to architect as task task_…. …
  assistant: The architect is on it.
  user: [System notice: delegation context restored] …
  assistant: Plan done: the architect's design is built and its tests pass.

the report planner received:
  [System notice: delegation context restored]
  This is where you were when you delegated 1 task(s):
  - Original requester: user
  - Original request: Make the pricing page fast.
  - Delegations:
    1. architect: Design a cache for the pricing service.
  Every task you delegated has now reported back. Answer from these reports; do not claim any result they do not contain.
  
  ---
  [Delegation report]
  
  ## architect, task task_…
  Design: a read-through LRU cache; the engineer built it and its tests pass.

final answer of planner (task task_…):
  Plan done: the architect's design is built and its tests pass.

events:
  task.delegated  planner/chain → architect: "Design a cache for the pricing service." (pending 1)
  task.delegated  architect/chain → engineer: "Build a read-through LRU cache in front of the pricing service." (pending 1)
  task.completed  engineer/chain, reports to its parent: "Built the LRU cache; 12 tests pass."
  task.completed  architect/chain, reports to its parent: "Design: a read-through LRU cache; the engineer built it and its tests pass."
  task.completed  planner/chain, root task: answers its requester: "Plan done: the architect's design is built and its tests pass."
  task.answered   planner/chain → user on channel api (delivered true)
`
	if got := taskID.ReplaceAllString(out.String(), "task_…"); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}

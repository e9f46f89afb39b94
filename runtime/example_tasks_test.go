package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/runtime"
)

// A turn that delegates (call_agent) makes its input a task, which waits
// ([runtime.TaskWaiting]) for its children's reports; a child that asks a
// human is paused ([runtime.TaskPaused]) until the question is answered. A
// report over 2,000 characters is saved in a file under the outputs
// directory (WithOutputsDir; by default the config's outputs), and the
// report names the file.
func ExampleRuntime_Task() {
	outputs, err := os.MkdirTemp("", "outputs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(outputs)
	long := strings.Repeat("All measured. ", 200) // 2,800 characters
	rt := exampleRuntime(`
agents:
  - name: lead
    tools: [call_agent]
  - name: surveyor
  - name: asker
    extensions: [{name: protocol}]
`, fmt.Sprintf(`
agents:
  lead:
    turns:
      - match: "Merged report"
        steps: [{text: "All reported."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, id: d1, args: {agent_id: surveyor, message: "measure the site"}}
            - {name: call_agent, id: d2, args: {agent_id: asker, message: "ask the budget"}}
        - text: "Delegated."
  surveyor:
    fallback: {steps: [{text: %q}]}
  asker:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: What is the budget?
              required: true
              [/USER_QUESTION]
      - steps: [{text: "Budget: {{ .LastMessage }}"}]
`, long), runtime.WithOutputsDir(outputs))
	defer rt.Close()

	ctx := context.Background()
	res, err := rt.Send(ctx, "lead", "site-1", runtime.UserMessage("plan the build"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("turn:", res.FinishReason)
	if err := rt.WaitTasks(ctx); err != nil { // the surveyor reported, the asker asks
		log.Fatal(err)
	}
	root, err := rt.Task(ctx, res.TaskID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("root task:", root.State, root.State == runtime.TaskWaiting, "pending:", root.Pending)
	for _, r := range root.Context.Responses {
		fmt.Printf("report of %s: saved under the outputs directory: %t\n", r.FromAgent, filepath.Dir(r.File) == outputs)
	}
	for _, d := range root.Context.Delegations {
		child, err := rt.Task(ctx, d.ChildTaskID)
		switch {
		case errors.Is(err, runtime.ErrNoTask):
			fmt.Printf("%s's task: done\n", d.DelegatedTo)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s's task: %s\n", d.DelegatedTo, child.State)
		}
	}

	items, err := rt.Pending(ctx, ledger.Filter{Agent: "asker", Open: true})
	if err != nil || len(items) != 1 {
		log.Fatal(items, err)
	}
	if _, err := rt.Answer(ctx, items[0].ID, "40,000"); err != nil {
		log.Fatal(err)
	}
	if err := rt.WaitTasks(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = rt.Task(ctx, res.TaskID)
	fmt.Println("root task done:", errors.Is(err, runtime.ErrNoTask))
	history, err := rt.History(ctx, "lead", "site-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lead:", history[len(history)-1].Content)
	// Output:
	// turn: delegated
	// root task: waiting true pending: 1
	// report of surveyor: saved under the outputs directory: true
	// surveyor's task: done
	// asker's task: paused
	// root task done: true
	// lead: All reported.
}

package approval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// A rule's when expression reads the call through the fields of Env by
// their expr names: tool, args, paths, shell, chain. A program that vets
// calls itself (as `ganglion rules test` does) loads the rules and decides.
func ExampleEnv() {
	dir, err := os.MkdirTemp("", "approval-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rules := filepath.Join(dir, "rules.yaml")
	err = os.WriteFile(rules, []byte(`
default: ask
rules:
  - name: reads, but no secrets
    when: 'tool.category == "read" && none(paths, {glob("**/.env*", #)})'
    decision: approve
  - name: no writes from a delegated agent
    when: tool.category == "write" && chain.depth > 0
    decision: deny
    reason: only the agent the user talks to writes
`), 0o644)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := approval.Load(rules)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []approval.Call{
		{Tool: "read_file", Args: []byte(`{"path": "src/main.go"}`), Workspace: dir},
		{Tool: "read_file", Args: []byte(`{"path": "config/.env.local"}`), Workspace: dir},
		{Tool: "write_file", Args: []byte(`{"path": "notes.md"}`), Chain: []string{"lead"}, Workspace: dir},
	} {
		res := r.Decide(c)
		switch res.Decision {
		case approval.Approve:
			fmt.Println(c.Tool, "runs:", res.Explanation)
		case approval.Ask:
			fmt.Println(c.Tool, "waits for a human:", res.Explanation)
		case approval.Deny:
			fmt.Println(c.Tool, "is refused:", res.Explanation)
		}
	}
	// Output:
	// read_file runs: rule "reads, but no secrets" decides approve
	// read_file waits for a human: no rule matched: the default, ask
	// write_file is refused: rule "no writes from a delegated agent" decides deny: only the agent the user talks to writes
}

// An app follows the extension's decisions through the runtime's events;
// each topic has its payload type. Here one turn reads a file (approved)
// and then runs rm (denied); then the rules file is broken by an edit, and the
// next call keeps the rules in force and says why.
func Example_events() {
	dir, err := os.MkdirTemp("", "approval-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			panic(err)
		}
	}
	write("notes.txt", "remember the milk\n")
	write("script.yaml", `
agents:
  a:
    fallback:
      steps:
        - tool_calls: [{name: read_file, id: r, args: {path: notes.txt}}]
        - tool_calls: [{name: execute_command, id: x, args: {command: "rm -rf build"}}]
        - text: "done"
`)
	write("rules.yaml", `
default: ask
rules:
  - name: reads
    when: tool.category == "read"
    decision: approve
  - name: no rm
    when: tool.name == "execute_command" && any(shell.commands, {.name == "rm"})
    decision: deny
`)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`
model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    tools: [read_file, execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	bus := events.NewBus()
	bus.Subscribe("approval.*", func(ev events.Event) {
		switch d := ev.Data.(type) {
		case approval.DecidedEvent:
			fmt.Printf("%s: %s (%s)\n", d.Tool, d.Decision, d.Explanation)
		case approval.RuleErrorEvent:
			fmt.Printf("%s: a rule failed, counted as deny: %s\n", d.Tool, d.Error)
		case approval.ReloadFailedEvent:
			fmt.Printf("%s is not reloaded, the rules in force stay\n", filepath.Base(d.File))
		case approval.MistakeLimitEvent:
			fmt.Printf("%s failed %d times in a row: a human is asked\n", d.Tool, d.Failures)
		case approval.RepetitionLimitEvent:
			fmt.Printf("%s called %d times alike: a human is asked\n", d.Tool, d.Calls)
		}
	})
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithEvents(bus))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("tidy up")); err != nil {
		fmt.Println(err)
	}
	write("rules.yaml", "default: approve\nrules:\n  - name: broken\n    when: tool.name ==\n    decision: deny\n")
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("again")); err != nil {
		fmt.Println(err)
	}
	// Output:
	// read_file: approve (rule "reads" decides approve)
	// execute_command: deny (rule "no rm" decides deny)
	// rules.yaml is not reloaded, the rules in force stay
	// read_file: approve (rule "reads" decides approve)
	// execute_command: deny (rule "no rm" decides deny)
}

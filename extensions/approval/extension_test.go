package approval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/events"
)

const script = `
agents:
  a:
    fallback:
      steps:
        - tool_calls:
            - {name: read_file, id: r, args: {path: notes.txt}}
            - {name: execute_command, id: x, args: {command: "rm -rf build"}}
        - text: "done"
`

const firstRules = `
default: ask
rules:
  - name: reads
    when: tool.category == "read"
    decision: approve
  - name: no rm
    when: tool.name == "execute_command" && any(shell.commands, {.name == "rm"})
    decision: deny
    reason: rm is not allowed
`

// TestApprovalExtension: approve runs the tool, deny returns the reason to
// the model; an edit of the rules file takes effect at the next call, and
// a broken edit leaves the rules in force and says why in an event.
func TestApprovalExtension(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	write("ws/notes.txt", "remember the milk\n")
	write("script.yaml", script)
	write("rules.yaml", firstRules)
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
workspace: ws
agents:
  - name: a
    tools: [read_file, execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var topics []string
	bus := events.NewBus()
	bus.Subscribe("approval.*", func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		d, _ := ev.Data.(map[string]any)
		topics = append(topics, strings.TrimSpace(fmt.Sprint(ev.Topic, " ", d["tool"], " ", d["decision"])))
	})
	rt, err := runtime.New(context.Background(), runtime.WithConfig(cfg), runtime.WithMemoryStore(), runtime.WithEvents(bus))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	results := func() map[string]string {
		t.Helper()
		msgs, err := rt.History(context.Background(), "a", "k")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range msgs {
			if m.ToolCallID != "" {
				out[m.ToolCallID] = m.Content
			}
		}
		return out
	}
	send := func() {
		t.Helper()
		if _, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage("go")); err != nil {
			t.Fatal(err)
		}
	}

	send()
	got := results()
	if !strings.Contains(got["r"], "remember the milk") {
		t.Errorf("approved read_file = %q", got["r"])
	}
	if want := `tool call denied: rule "no rm" decides deny: rm is not allowed`; got["x"] != want {
		t.Errorf("denied execute_command = %q\nwant %q", got["x"], want)
	}

	// An edit: reads are now asked, and commands are fine.
	write("rules.yaml", "default: approve\nrules:\n  - name: ask reads\n    when: tool.category == \"read\"\n    decision: deny\n    reason: no reading today\n")
	send()
	got = results()
	if want := `tool call denied: rule "ask reads" decides deny: no reading today`; got["r"] != want {
		t.Errorf("after the edit, read_file = %q\nwant %q", got["r"], want)
	}

	// A broken edit: the rules in force stay, and an event says why.
	write("rules.yaml", "default: approve\nrules:\n  - name: broken\n    when: tool.name ==\n    decision: deny\n")
	send()
	if got = results(); !strings.HasPrefix(got["r"], "tool call denied: rule \"ask reads\"") {
		t.Errorf("after a broken edit, read_file = %q, want the previous rules' decision", got["r"])
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(topics, "\n")
	for _, want := range []string{"approval.decided read_file approve", "approval.decided execute_command deny", "approval.reload_failed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %q:\n%s", want, joined)
		}
	}
}

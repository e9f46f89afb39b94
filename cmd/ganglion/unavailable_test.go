package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnavailableAgent: a module that fails to load makes its own agent
// unusable, and only it: the other agents run, and histories read.
func TestUnavailableAgent(t *testing.T) {
	cfg := strings.Replace(testConfig, "  - name: second\n", "  - name: second\n    extensions: [{name: bad, wasm: bad.wasm}]\n", 1)
	dir := project(t, cfg)
	b, err := os.ReadFile(filepath.Join("..", "..", "extensions", "wasm", "testdata", "refuse_fuel.wasm"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "bad.wasm"), b, 0o644))
	data := filepath.Join(t.TempDir(), "d")
	const named = `agent "second": extension "bad"`
	const logged = `agent=second` // the log line at start names it

	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a line it holds
		stderrHave string
	}{
		{"other agent runs", []string{"run", dir, "--data", data, "hi"}, exitOK, "echo hi", logged},
		{"its history reads", []string{"history", dir, "--data", data}, exitOK, "echo hi", logged},
		{"broken agent's history reads", []string{"history", dir, "--data", data, "--agent", "second"}, exitOK, "", "no messages stored"},
		{"pending lists", []string{"pending", dir, "--data", data}, exitOK, "", ""},
		{"tasks lists", []string{"tasks", dir, "--data", data}, exitOK, "", ""},
		{"resume has nothing waiting", []string{"resume", dir, "--data", data}, exitOK, "", "nothing is left open"},
		{"broken agent refuses", []string{"run", dir, "--data", data, "--agent", "second", "hi"}, exitError, "", "agent unavailable: " + named},
		{"the error says why", []string{"run", dir, "--data", data, "--agent", "second", "hi"}, exitError, "", "invalid global index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.stdout) {
				t.Errorf("stdout = %q, want it to hold %q", r.stdout, tt.stdout)
			}
			if !strings.Contains(r.stderr, tt.stderrHave) {
				t.Errorf("stderr = %q, want it to hold %q", r.stderr, tt.stderrHave)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("stderr holds a Go stack trace: %s", r.stderr)
			}
		})
	}
}

const waitingConfig = `model: {provider: scripted, script: script.yaml}
agents:
  - name: lead
    tools: [call_agent]
  - name: coder
    extensions: [{name: protocol}, {name: guard, wasm: guard.wasm}]
`

const waitingScript = `agents:
  lead:
    turns:
      - kind: delegation_report
        steps: [{text: "final: {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write it"}}]
        - text: "delegated"
  coder:
    turns:
      - steps:
          - text: |
              [USER_QUESTION]
              category: choice
              question: Which language?
              options: [Go, Rust]
              required: true
              [/USER_QUESTION]
    fallback: {steps: [{text: "coder wrote it in {{ .Input }}"}]}
`

// TestUnavailableAgentWork: a chain that waits on an agent whose module
// then fails to load waits intact, resume says so, and it finishes once
// the module loads again.
func TestUnavailableAgentWork(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(waitingConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(waitingScript), 0o644))
	module := func(name string) {
		b, err := os.ReadFile(filepath.Join("..", "..", "extensions", "wasm", "testdata", name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, "guard.wasm"), b, 0o644))
	}
	data := filepath.Join(t.TempDir(), "d")

	module("noop.wasm")
	if r := runCLI(t, "", "run", dir, "--data", data, "build it"); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (coder asks)\n%s\n%s", r.code, exitPaused, r.stdout, r.stderr)
	}
	r := runCLI(t, "", "pending", dir, "--data", data, "--json")
	items := parsePending(t, r.stdout)
	if len(items) != 1 {
		t.Fatalf("pending: %d items, want 1:\n%s", len(items), r.stdout)
	}
	id := items[0].ID

	module("refuse_fuel.wasm")
	r = runCLI(t, "", "resume", dir, "--data", data)
	if r.code != exitError || !strings.Contains(r.stderr, `agent "coder" failed to load, and its work waits (1 tasks, 1 pending items); fix it and run ganglion resume again: agent "coder": extension "guard"`) {
		t.Errorf("resume: exit %d, stderr %q; want exit %d naming coder and what waits", r.code, r.stderr, exitError)
	}
	r = runCLI(t, "", "answer", dir, "--data", data, id, "Rust")
	if r.code != exitError || !strings.Contains(r.stderr, `pending item "`+id+`": agent unavailable: agent "coder": extension "guard"`) {
		t.Errorf("answer: exit %d, stderr %q; want exit %d naming coder", r.code, r.stderr, exitError)
	}
	r = runCLI(t, "", "pending", dir, "--data", data, "--json")
	if items := parsePending(t, r.stdout); len(items) != 1 || items[0].ID != id || items[0].Status != "pending" {
		t.Fatalf("pending after the refused answer: %+v", items)
	}

	module("noop.wasm")
	r = runCLI(t, "", "answer", dir, "--data", data, id, "Rust")
	if r.code != exitOK || !strings.Contains(r.stdout, "final: ") || !strings.Contains(r.stdout, "coder wrote it in") {
		t.Errorf("answer once coder loads: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const delegationConfig = `model:
  provider: scripted
  script: script.yaml
agents:
  - name: lead
    tools: [call_agent]
    extensions: [{name: protocol}]
  - name: coder
    extensions: [{name: protocol}]
  - name: tester
`

const delegationScript = `agents:
  lead:
    turns:
      - kind: delegation_report
        steps: [{text: "Both done: the parser is written and tested."}]
    fallback:
      steps:
        - tool_calls:
            - {name: call_agent, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, args: {agent_id: tester, message: "test the parser"}}
        - text: "Delegated."
  coder:
    turns:
      - match: "ask first"
        steps:
          - text: |
              [USER_QUESTION]
              category: clarification
              question: Which grammar?
              required: true
              [/USER_QUESTION]
    fallback: {steps: [{text: "parser written"}]}
  tester: {fallback: {steps: [{text: "all tests pass"}]}}
`

func delegationProject(t *testing.T, script string) (dir, data string) {
	t.Helper()
	dir = t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(delegationConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644))
	return dir, filepath.Join(dir, "data")
}

// TestRunDelegation: ganglion run waits for the merged report's answer,
// showing the delegations and reports as they happen; no task is left.
func TestRunDelegation(t *testing.T) {
	dir, data := delegationProject(t, delegationScript)
	r := runCLI(t, "", "run", dir, "--data", data, "build a parser")
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"[task] lead → coder: write the parser\n",
		"[task] lead → tester: test the parser\n",
		"[task] coder reported: parser written\n",
		"[task] tester reported: all tests pass\n",
		"Delegated.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.HasSuffix(r.stdout, "Both done: the parser is written and tested.\n") {
		t.Errorf("stdout does not end with the final answer:\n%s", r.stdout)
	}
	r = runCLI(t, "", "tasks", dir, "--data", data)
	if r.code != exitOK || r.stdout != "" || r.stderr != "no open tasks\n" {
		t.Errorf("tasks: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunDelegationPaused: a child that asks a human stops the chain; run
// exits paused naming the item, tasks lists the open tasks, and answering
// the item sees the chain through to the final answer.
func TestRunDelegationPaused(t *testing.T) {
	script := strings.Replace(delegationScript, `message: "write the parser"`, `message: "ask first, then write the parser"`, 1)
	dir, data := delegationProject(t, script)
	r := runCLI(t, "", "run", dir, "--data", data, "build a parser")
	if r.code != exitPaused {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitPaused, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`\[paused\] coder/default: (p-[0-9a-f]+) question: Which grammar\? \(required\)\n`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("stderr does not name the child's question:\n%s", r.stderr)
	}
	id := m[1]

	r = runCLI(t, "", "tasks", dir, "--data", data)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 3 {
		t.Fatalf("tasks: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`(?m)^TASK +AGENT/INSTANCE +STATE +PENDING +PARENT +SPENT +REQUESTER +REQUEST$`,
		`(?m)^task_[0-9a-f]{12} +lead/default +waiting +1 +- +2 delegations, 2 turns, 0 tokens +user@cli +build a parser$`,
		`(?m)^task_[0-9a-f]{12} +coder/default +paused +0 +task_[0-9a-f]{12} +0 delegations, 1 turns, 0 tokens +lead/default +ask first, then write the parser$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("tasks does not match %s:\n%s", want, r.stdout)
		}
	}

	r = runCLI(t, "", "answer", dir, "--data", data, id, "LL(1)")
	if r.code != exitOK {
		t.Fatalf("answer: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "answer to an earlier request (\"build a parser\") from lead/default:\nBoth done") {
		t.Errorf("answer does not print the chain's final answer:\n%s", r.stdout)
	}
	r = runCLI(t, "", "tasks", dir, "--data", data)
	if r.stderr != "no open tasks\n" {
		t.Errorf("tasks after the answer: %s%s", r.stdout, r.stderr)
	}
}

package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunSameThroughServer: ganglion run on a config that a running serve
// holds behaves as it does on its own: the same output, line for line,
// and the same exit code. An interactive run asks inline for what its turn
// waits for (its agent's items and those of the agents it delegated to,
// not every agent's), takes the typed line as the answer, and streams the
// resumed turn; a one-message run names only its turn's items.
func TestRunSameThroughServer(t *testing.T) {
	t.Parallel()
	strictFirst := [][]string{{"run", "--agent", "strict", "where?"}}
	tests := []struct {
		name    string
		project func(t *testing.T) string
		setup   [][]string // commands run first, in the project
		args    []string   // after run DIR
		stdin   string
		code    int
	}{
		{"approval approved", approvalProject, nil, nil, "read it\napprove\n", exitOK},
		{"approval denied", approvalProject, nil, nil, "read it\ndeny\n", exitOK},
		{"question answered, then a message", pendingProject, strictFirst, []string{"--agent", "asker"}, "price it\nfreemium\nthanks\n", exitOK},
		{"invalid answer asks again", pendingProject, nil, []string{"--agent", "asker"}, "price it\npremium\nSubscription\n", exitOK},
		{"input ends at the prompt", pendingProject, strictFirst, []string{"--agent", "asker"}, "price it\n", exitPaused},
		{"paused before", pendingProject, [][]string{{"run", "--agent", "asker", "price it"}}, []string{"--agent", "asker"}, "hello\nAd-based\n", exitOK},
		{"required dependency rejected", pendingProject, nil, []string{"--agent", "keeper"}, "deploy\n\n", exitOK},
		{"delegated question", func(t *testing.T) string {
			if oneByOne == delegationScript {
				t.Fatal("oneByOne did not change delegationScript")
			}
			dir, _ := delegationProject(t, oneByOne)
			return dir
		}, nil, nil, "build a parser\nLL(1)\n", exitOK},
		{"the lead asks after the report", func(t *testing.T) string {
			dir, _ := delegationProject(t, leadAsks)
			return dir
		}, nil, nil, "build a parser\nyes\n", exitOK},
		{"one message, paused", pendingProject, strictFirst, []string{"--agent", "asker", "price it"}, "", exitPaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got [2]string
			for i, served := range []bool{false, true} {
				dir := tt.project(t)
				if served {
					_, _, stop := startServe(t, dir)
					defer stop()
				}
				for _, args := range tt.setup {
					exe(t, dir, "", append([]string{args[0], dir}, args[1:]...)...)
				}
				r := exe(t, dir, tt.stdin, append([]string{"run", dir}, tt.args...)...)
				if r.code != tt.code {
					t.Errorf("served %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", served, r.code, tt.code, r.stdout, r.stderr)
				}
				got[i] = transcript(dir, r)
			}
			golden(t, "run_same_"+strings.NewReplacer(" ", "_", ",", "").Replace(tt.name), "", got[0])
			if got[1] != got[0] {
				t.Errorf("through the server:\n%s\non its own:\n%s", got[1], got[0])
			}
		})
	}
}

// oneByOne is delegationScript with the lead's delegations one a step,
// so that their tool lines come in one order, and a coder that asks.
var oneByOne = strings.Replace(delegationScript, `        - tool_calls:
            - {name: call_agent, args: {agent_id: coder, message: "write the parser"}}
            - {name: call_agent, args: {agent_id: tester, message: "test the parser"}}
`, `        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "ask first, then write the parser"}}]
        - tool_calls: [{name: call_agent, args: {agent_id: tester, message: "test the parser"}}]
`, 1)

// leadAsks: the lead delegates, and its report turn asks a human before
// it answers; the resumed turn's answer is the chain's.
const leadAsks = `agents:
  lead:
    turns:
      - kind: delegation_report
        steps:
          - text: |
              The coder is done.
              [USER_QUESTION]
              category: confirmation
              question: Ship it?
              options: [yes, no]
              required: true
              [/USER_QUESTION]
      - kind: resume
        steps: [{text: "Shipped. {{ .Input }}"}]
    fallback:
      steps:
        - tool_calls: [{name: call_agent, args: {agent_id: coder, message: "write the parser"}}]
        - text: "Delegated."
  coder: {fallback: {steps: [{text: "parser written"}]}}
  tester: {fallback: {steps: [{text: "unused"}]}}
`

// transcript is a run's output with the names that change from run to
// run replaced: the project directory, pending item and task IDs.
func transcript(dir string, r result) string {
	s := "stdout:\n" + r.stdout + "stderr:\n" + r.stderr
	s = strings.ReplaceAll(s, dir, "$DIR")
	s = regexp.MustCompile(`p-[0-9a-f]{12}`).ReplaceAllString(s, "$$ID")
	return regexp.MustCompile(`task_[0-9a-f]{12}`).ReplaceAllString(s, "$$TASK")
}

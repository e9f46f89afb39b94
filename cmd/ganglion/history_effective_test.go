package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

const condenseConfig = `workspace: workspace
model:
  provider: scripted
  script: script.yaml
  context_window: 400
  max_output_tokens: 50
agents:
  - name: a
    extensions: [{name: condense}]
  - name: b
    extensions: [{name: condense}]
`

// condenseScript: a summarises; b's summaries fail, so b truncates.
const condenseScript = `agents:
  a:
    turns:
      - match: "^(user|assistant): "
        steps: [{text: "The user listed facts 1 to 7."}]
    fallback:
      steps: [{text: "Noted {{ .Input }}"}]
  b:
    turns:
      - match: "^(user|assistant): "
        steps: [{error: "summary model down"}]
    fallback:
      steps: [{text: "Noted {{ .Input }}"}]
`

func fact(n int) string {
	return fmt.Sprintf("fact %d: the quick brown fox jumps over the lazy dog number %d", n, n)
}

// TestHistoryEffective: history prints the full history, with what the
// model no longer sees marked; --effective prints what it sees.
func TestHistoryEffective(t *testing.T) {
	dir := project(t, condenseConfig)
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(condenseScript), 0o644))
	data := filepath.Join(t.TempDir(), "d")
	for _, agent := range []string{"a", "b"} {
		for n := 1; n <= 8; n++ {
			if r := runCLI(t, "", "run", dir, "--data", data, "--agent", agent, fact(n)); r.code != exitOK {
				t.Fatalf("run %s %d: exit %d: %s", agent, n, r.code, r.stderr)
			}
		}
	}
	noted := func(n int) string { return "Noted " + fact(n) }
	summary := "user (from condense): [Summary of the earlier conversation]\n  The user listed facts 1 to 7.\n"
	var fullA, fullB, effB strings.Builder
	fmt.Fprintf(&fullA, "user: %s\n", fact(1))
	fmt.Fprintf(&fullB, "user: %s\n", fact(1))
	fmt.Fprintf(&effB, "user: %s\n", fact(1))
	for n := 1; n <= 7; n++ {
		if n < 7 {
			fmt.Fprintf(&fullA, "assistant [summarised in msg-15]: %s\nuser [summarised in msg-15]: %s\n", noted(n), fact(n+1))
		}
		switch {
		case n == 1:
			fmt.Fprintf(&fullB, "assistant [left out]: %s\nuser [left out]: %s\n", noted(n), fact(n+1))
		case n == 2:
			fmt.Fprintf(&fullB, "assistant [left out]: %s\nuser: %s\n", noted(n), fact(n+1))
			fmt.Fprintf(&effB, "user: %s\n", fact(n+1))
		default:
			fmt.Fprintf(&fullB, "assistant: %s\nuser: %s\n", noted(n), fact(n+1))
			fmt.Fprintf(&effB, "assistant: %s\nuser: %s\n", noted(n), fact(n+1))
		}
	}
	fmt.Fprintf(&fullA, "assistant: %s\nuser: %s\n%sassistant: %s\n", noted(7), fact(8), summary, noted(8))
	fmt.Fprintf(&fullB, "assistant: %s\n", noted(8))
	fmt.Fprintf(&effB, "assistant: %s\n", noted(8))
	effA := fmt.Sprintf("user: %s\n%sassistant: %s\nuser: %s\nassistant: %s\n", fact(1), summary, noted(7), fact(8), noted(8))
	tests := []struct {
		agent     string
		effective bool
		want      string
	}{
		{"a", false, fullA.String()},
		{"a", true, effA},
		{"b", false, fullB.String()},
		{"b", true, effB.String()},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s effective=%v", tt.agent, tt.effective), func(t *testing.T) {
			args := []string{"history", dir, "--data", data, "--agent", tt.agent}
			if tt.effective {
				args = append(args, "--effective")
			}
			r := runCLI(t, "", args...)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if r.stdout != tt.want {
				t.Errorf("history:\n--- got\n%s--- want\n%s", r.stdout, tt.want)
			}
		})
	}

	// --json --effective: the messages the model sees, with their marks and IDs.
	r := runCLI(t, "", "history", dir, "--data", data, "--effective", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 5 {
		t.Fatalf("history --effective --json: exit %d, %d lines:\n%s", r.code, len(lines), r.stdout)
	}
	var m struct {
		ID       string         `json:"id"`
		Role     string         `json:"role"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil || m.ID != "msg-15" || m.Role != "user" ||
		fmt.Sprint(m.Metadata["summary"]) != "map[by:self messages:12]" {
		t.Errorf("second effective message = %+v, %v", m, err)
	}
	// An unknown agent is refused as for the full history.
	r = runCLI(t, "", "history", dir, "--data", data, "--effective", "--agent", "ghost")
	if r.code != exitError || r.stderr != "ganglion: unknown agent \"ghost\" (agents: a, b)\n" {
		t.Errorf("unknown agent: %+v", r)
	}
	r = runCLI(t, "", "history", dir, "--data", data, "--effective", "--instance", "nobody")
	if r.code != exitOK || r.stdout != "" || r.stderr != "no messages stored for agent \"a\" instance \"nobody\"\n" {
		t.Errorf("empty instance: %+v", r)
	}
}

// TestRunShowsCondensing: run tells when the history the model sees was
// condensed.
func TestRunShowsCondensing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml, context_window: 300, max_output_tokens: 20}
agents:
  - name: a
    extensions: [{name: condense}]
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  a:
    turns:
      - match: "^(user|assistant): "
        steps: [{text: "They shared many facts."}]
    fallback:
      steps: [{text: "Noted: {{ .Input }}"}]
`), 0o644))
	var out strings.Builder
	for i := 1; i <= 12; i++ {
		r := runCLI(t, "", "run", dir, "--data", data, fmt.Sprintf("fact %d: the quick brown fox jumps over the lazy dog", i))
		if r.code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
		out.WriteString(r.stdout)
	}
	if !regexp.MustCompile(`(?m)^\[context\] \d+ messages summarised: the model now sees \d+ of \d+$`).MatchString(out.String()) {
		t.Errorf("no [context] line in:\n%s", out.String())
	}
}

// TestRunShowsRetry: run tells when a model call is retried, and never
// shows the key.
func TestRunShowsRetry(t *testing.T) {
	const key = "sk-cli-canary-93b1d7e4"
	t.Setenv("CLI_TEST_KEY", key)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: openai, name: m, base_url: "+srv.URL+", api_key_env: CLI_TEST_KEY}\nagents: [{name: a}]\n"), 0o644))
	for _, args := range [][]string{{}, {"--json"}} {
		r := runCLI(t, "", append([]string{"run", dir, "--data", filepath.Join(dir, "data"), "hi"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Errorf("the key is in the output:\n%s%s", r.stdout, r.stderr)
		}
		if len(args) == 0 && r.stdout != "[retry] rate limited; trying again in 1 ms (1 of 5)\nhello\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
		if len(args) == 1 && !strings.Contains(r.stdout, `"topic":"model.retry"`) {
			t.Errorf("no model.retry event in --json output:\n%s", r.stdout)
		}
		calls.Store(0)
	}
}

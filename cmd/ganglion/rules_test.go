package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestRules(t *testing.T) {
	starter := filepath.Join("..", "..", "examples", "approval", "rules.yaml")
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	must(t, os.WriteFile(broken, []byte("default: ask\nrules:\n  - name: bad\n    when: tool.name ==\n    decision: deny\n"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"rules_check", []string{"rules", "check", starter}, exitOK},
		{"rules_check_broken", []string{"rules", "check", broken}, exitError},
		{"rules_eval_approve", []string{"rules", "eval", starter, "--call", `{"tool":"execute_command","args":{"command":"git status"}}`}, exitOK},
		{"rules_eval_deny", []string{"rules", "eval", starter, "--call", `{"tool":"execute_command","args":{"command":"git status && rm -rf /"}}`}, exitOK},
		{"rules_eval_default", []string{"rules", "eval", starter, "--call", `{"tool":"fetch_url","args":{"url":"https://example.com"}}`}, exitOK},
		{"rules_eval_no_call", []string{"rules", "eval", starter}, exitUsage},
		{"rules_eval_bad_call", []string{"rules", "eval", starter, "--call", `{"tol":"x"}`}, exitUsage},
		{"rules_eval_two_calls", []string{"rules", "eval", starter, "--call", `{"tool":"read_file"} {"tool":"execute_command"}`}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			golden(t, tt.name, dir, r.stdout+r.stderr)
		})
	}
	r := runCLI(t, "", "rules", "eval", starter, "--json", "--call", `{"tool":"read_file","args":{"path":".env"}}`)
	var res struct {
		Decision string
		Matched  []struct{ Rule, Decision string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Decision != "ask" || len(res.Matched) != 1 || res.Matched[0].Rule != "protected files" {
		t.Fatalf("--json = %s (%v)", r.stdout, err)
	}
}

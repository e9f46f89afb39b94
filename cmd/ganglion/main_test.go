package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const testConfig = `workspace: workspace
model:
  provider: scripted
  script: script.yaml
agents:
  - name: helper
    tools: [read_file]
    extensions: [{name: audit}]
  - name: second
`

const testScript = `agents:
  helper:
    turns:
      - match: "(?i)file"
        steps:
          - text: "Reading."
            tool_calls:
              - name: read_file
                args: {path: hello.txt}
          - text: "It says: {{ .LastMessage }}"
      - match: "(?i)escape"
        steps:
          - tool_calls:
              - name: read_file
                args: {path: ../outside.txt}
          - text: "Refused: {{ .LastMessage }}"
    fallback:
      steps:
        - text: "echo {{ .Input }}"
  second:
    fallback:
      steps:
        - text: "second here"
`

// project writes a config directory and returns its path.
func project(t *testing.T, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "workspace", "hello.txt"), []byte("hello world\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(cfg), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(testScript), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// golden compares got with testdata/name.golden, after replacing dir with $DIR.
func golden(t *testing.T, name, dir, got string) {
	t.Helper()
	if dir != "" {
		got = strings.ReplaceAll(got, dir, "$DIR")
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		must(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     func(dir, data string) []string
		stdin    string
		wantCode int
	}{
		{"text answer", func(dir, data string) []string { return []string{"run", dir, "--data", data, "hi there"} }, "", exitOK},
		{"tool call", func(dir, data string) []string { return []string{"run", dir, "--data", data, "read the file"} }, "", exitOK},
		{"escape refused", func(dir, data string) []string { return []string{"run", dir, "--data", data, "try to escape"} }, "", exitOK},
		{"other agent", func(dir, data string) []string {
			return []string{"run", dir, "--agent", "second", "--instance", "x", "--data", data, "hello"}
		}, "", exitOK},
		{"interactive", func(dir, data string) []string { return []string{"run", dir, "--data", data} }, "first\n\nread the file\n/exit\nnot sent\n", exitOK},
		{"unknown agent", func(dir, data string) []string {
			return []string{"run", dir, "--agent", "nobody", "--data", data, "hi"}
		}, "", exitError},
		{"empty message", func(dir, data string) []string { return []string{"run", dir, "--data", data, ""} }, "", exitUsage},
		{"too many args", func(dir, data string) []string { return []string{"run", dir, "a", "b"} }, "", exitUsage},
		{"unknown flag", func(dir, data string) []string { return []string{"run", "--frobnicate", dir} }, "", exitUsage},
		{"bad log level", func(dir, data string) []string { return []string{"run", dir, "--log-level", "loud", "hi"} }, "", exitUsage},
		{"no config", func(dir, data string) []string { return []string{"run", filepath.Join(dir, "workspace"), "hi"} }, "", exitUsage},
		{"unknown command", func(dir, data string) []string { return []string{"fly"} }, "", exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := project(t, testConfig)
			data := filepath.Join(t.TempDir(), "data")
			r := runCLI(t, tt.stdin, tt.args(dir, data)...)
			if r.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			golden(t, "run_"+strings.ReplaceAll(tt.name, " ", "_"), dir, "stdout:\n"+r.stdout+"stderr:\n"+strings.ReplaceAll(r.stderr, data, "$DATA"))
		})
	}
}

func TestRunConfigErrors(t *testing.T) {
	tests := []struct{ name, config string }{
		{"unknown key", strings.Replace(testConfig, "    tools: [read_file]", "    tools: [read_file]\n    colour: blue", 1)},
		{"unknown tool", strings.Replace(testConfig, "tools: [read_file]", "tools: [read_file, reed_file]", 1)},
		{"unknown extension", strings.Replace(testConfig, "{name: audit}", "{name: audti}", 1)},
		{"wrong type", strings.Replace(testConfig, "  - name: second", "  - name: second\n    max_steps: many", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := project(t, tt.config)
			r := runCLI(t, "", "run", dir, "--data", filepath.Join(t.TempDir(), "d"), "hi")
			if r.code != exitError {
				t.Errorf("exit code = %d, want %d", r.code, exitError)
			}
			golden(t, "config_"+strings.ReplaceAll(tt.name, " ", "_"), dir, r.stderr)
		})
	}
}

func TestRunJSON(t *testing.T) {
	dir := project(t, testConfig)
	r := runCLI(t, "", "run", dir, "--data", filepath.Join(t.TempDir(), "d"), "--json", "read the file")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var topics []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Topic, Agent, Instance, Source string
			TurnID                         string `json:"turn_id"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q is not a JSON event: %v", line, err)
		}
		if ev.Agent != "helper" || ev.Instance != "default" || ev.TurnID != "turn-1" {
			t.Errorf("event %q lacks its ids", line)
		}
		topics = append(topics, ev.Topic)
	}
	want := "turn.started message.appended model.delta message.appended tool.started tool.finished message.appended step.finished model.delta message.appended step.finished turn.finished"
	if got := strings.Join(topics, " "); got != want {
		t.Errorf("topics:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunPersists runs two processes' worth of turns on one data directory:
// the second continues the first's conversation.
func TestRunPersists(t *testing.T) {
	dir := project(t, testConfig)
	data := filepath.Join(t.TempDir(), "d")
	for i := range 2 {
		r := runCLI(t, "", "run", dir, "--data", data, "--json", []string{"one", "two"}[i])
		if r.code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, `"turn_id":"turn-`+[]string{"1", "2"}[i]+`"`) {
			t.Errorf("run %d did not continue the conversation:\n%s", i, r.stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	r := runCLI(t, "", "version")
	if r.code != 0 || !regexp.MustCompile(`^ganglion \S+( \(.+\))?\n$`).MatchString(r.stdout) {
		t.Fatalf("version: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestVersionLine: what ganglion version makes of each kind of build info.
func TestVersionLine(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "a7993dc9e04e5c0c7a0e0d3b1a9f3e1f0e9b8c7d"},
		{Key: "vcs.time", Value: "2026-12-06T21:04:11Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	modified := append(slices.Clone(vcs[:4]), debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "ganglion devel"},
		{"go run, no VCS", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "ganglion devel"},
		{"a clone", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261206210411-a7993dc9e04e"}, Settings: vcs},
			"ganglion v0.0.0-20261206210411-a7993dc9e04e (revision a7993dc9e04e5c0c7a0e0d3b1a9f3e1f0e9b8c7d, 2026-12-06T21:04:11Z, go1.26.8)"},
		{"a clone with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261206210411-a7993dc9e04e+dirty"}, Settings: modified},
			"ganglion v0.0.0-20261206210411-a7993dc9e04e+dirty (revision a7993dc9e04e5c0c7a0e0d3b1a9f3e1f0e9b8c7d, 2026-12-06T21:04:11Z, modified, go1.26.8)"},
		{"go install module@v0.3.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}}, "ganglion v0.3.0 (go1.26.8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.bi); got != tt.want {
				t.Errorf("versionLine:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestVersionNamesRevision: a binary built in a clone names the commit it
// was built from, not "devel".
func TestVersionNamesRevision(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): the build records no revision", err)
	}
	// -buildvcs=true: the machine's GOFLAGS may turn stamping off, as a
	// user's does not by default.
	bin := filepath.Join(t.TempDir(), "ganglion")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("error obtaining VCS status")) {
			t.Skipf("git cannot describe this checkout: %s", out)
		}
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("ganglion version: %v", err)
	}
	rev := strings.TrimSpace(string(head))
	if !strings.Contains(string(out), "(revision "+rev) || strings.HasPrefix(string(out), "ganglion devel") {
		t.Errorf("ganglion version = %q, want the module's pseudo-version and revision %s", out, rev)
	}
}

func TestHistory(t *testing.T) {
	dir := project(t, testConfig)
	data := filepath.Join(t.TempDir(), "d")
	for _, msg := range []string{"read the file", "hi there"} {
		if r := runCLI(t, "", "run", dir, "--data", data, msg); r.code != exitOK {
			t.Fatalf("run %q: exit %d: %s", msg, r.code, r.stderr)
		}
	}
	r := runCLI(t, "", "history", dir, "--data", data)
	if r.code != exitOK {
		t.Fatalf("history: exit %d: %s", r.code, r.stderr)
	}
	golden(t, "history", dir, r.stdout)

	r = runCLI(t, "", "history", dir, "--data", data, "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 6 {
		t.Fatalf("history --json: exit %d, %d lines:\n%s", r.code, len(lines), r.stdout)
	}
	var m struct {
		Role      string
		ToolCalls []struct{ Name, Arguments string } `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil || m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Arguments != `{"path":"hello.txt"}` {
		t.Errorf("second message = %+v, %v", m, err)
	}

	r = runCLI(t, "", "history", dir, "--data", data, "--instance", "nobody")
	if r.code != exitOK || r.stdout != "" || r.stderr != "no messages stored for agent \"helper\" instance \"nobody\"\n" {
		t.Errorf("empty instance: %+v", r)
	}
	r = runCLI(t, "", "history", dir, "--data", data, "--agent", "ghost")
	if r.code != exitError || r.stderr != "ganglion: unknown agent \"ghost\" (agents: helper, second)\n" {
		t.Errorf("unknown agent: %+v", r)
	}
}

// TestTurnExit: how a turn's outcome maps to the exit code. Nothing in the
// CLI pauses a turn yet (the protocol extension will), so paused is checked here.
func TestTurnExit(t *testing.T) {
	tests := []struct {
		reason pipeline.FinishReason
		err    error
		want   int
	}{
		{pipeline.FinishText, nil, exitOK},
		{pipeline.FinishMaxSteps, nil, exitOK},
		{pipeline.FinishPaused, nil, exitPaused},
		{pipeline.FinishError, errors.New("model: down"), exitError},
		{pipeline.FinishAborted, context.Canceled, exitError},
	}
	for _, tt := range tests {
		t.Run(string(tt.reason), func(t *testing.T) {
			code := exitOK
			if err := turnExit(&pipeline.TurnResult{FinishReason: tt.reason}, tt.err); err != nil {
				var ce *codeError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a codeError", err)
				}
				code = ce.code
			}
			if code != tt.want {
				t.Errorf("exit code = %d, want %d", code, tt.want)
			}
		})
	}
}

func TestProtocolParse(t *testing.T) {
	input := filepath.Join("testdata", "protocol_input.txt")
	text, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		golden   string
	}{
		{"file", []string{"protocol", "parse", input}, "", exitError, "protocol_parse"},
		{"stdin", []string{"protocol", "parse"}, string(text), exitError, "protocol_parse"},
		{"dash is stdin", []string{"protocol", "parse", "-"}, string(text), exitError, "protocol_parse"},
		{"no blocks", []string{"protocol", "parse"}, "Just prose, with [brackets] and [USER_QUESTION] inline.\n", exitOK, "protocol_parse_none"},
		{"missing file", []string{"protocol", "parse", "nope.txt"}, "", exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.stdin, tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, tt.wantCode, r.stderr)
			}
			if tt.golden != "" {
				golden(t, tt.golden, "", r.stdout)
			}
			switch tt.wantCode {
			case exitError:
				if !strings.HasSuffix(r.stderr, ": 2 protocol error(s)\n") {
					t.Errorf("stderr = %q", r.stderr)
				}
			case exitUsage:
				if r.stderr != "ganglion: open nope.txt: no such file or directory\n" {
					t.Errorf("stderr = %q", r.stderr)
				}
			}
		})
	}
}

// TestCompletion: the completion scripts the README documents are there,
// one per shell, and name the ganglion command.
func TestCompletion(t *testing.T) {
	tests := []struct{ shell, first string }{
		{"bash", "# bash completion V2 for ganglion"},
		{"zsh", "#compdef ganglion"},
		{"fish", "# fish completion for ganglion"},
		{"powershell", "# powershell completion for ganglion"},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			r := runCLI(t, "", "completion", tt.shell)
			if r.code != exitOK || !strings.HasPrefix(r.stdout, tt.first) {
				t.Fatalf("completion %s: exit %d, stdout starts %.60q, want %q; stderr %s", tt.shell, r.code, r.stdout, tt.first, r.stderr)
			}
		})
	}
	if r := runCLI(t, "", "completion", "tcsh"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown command "tcsh" for "ganglion completion"`) {
		t.Errorf("completion tcsh: exit %d, stderr %q; want a usage error naming the shell", r.code, r.stderr)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/internal/secret/secrettest"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// pendingConfig has three agents that pause: asker asks an optional
// question, strict a required one, keeper for a required API key. The data
// directory is inside the project, so the key file that seals secrets is
// the project's secret.key.
const pendingConfig = `workspace: workspace
data: data
model:
  provider: scripted
  script: script.yaml
agents:
  - name: asker
    tools: [execute_command]
    extensions: [{name: protocol}]
  - name: strict
    extensions: [{name: protocol}]
  - name: keeper
    tools: [execute_command]
    extensions: [{name: protocol}]
`

// The texts the scripted model streams when it pauses.
const (
	askText = `Let me ask.
[USER_QUESTION]
category: business
question: What pricing model?
options: [Subscription, Freemium, Ad-based]
default: Freemium
required: false
[/USER_QUESTION]
`
	strictText = `[USER_QUESTION]
category: clarification
question: Which region?
required: true
[/USER_QUESTION]
`
	keyText = `[DEPENDENCY_REQUEST]
type: api_key
name: OPENAI_API_KEY
description: Required for OpenAI API integration
required: true
[/DEPENDENCY_REQUEST]
`
)

// pendingScript: turn 1 pauses, turn 2 (the resume turn) shows what it
// read; keeper's resume and later turns run commands that use the key.
var pendingScript = `agents:
  asker:
    turns:
      - steps:
          - text: |
` + indent(askText, "              ") + `      - steps:
          - text: "Resumed with: {{ .LastMessage }}"
    fallback:
      steps:
        - text: "fallback: {{ .Input }}"
  strict:
    turns:
      - steps:
          - text: |
` + indent(strictText, "              ") + `      - steps:
          - text: "Resumed with: {{ .LastMessage }}"
  keeper:
    turns:
      - steps:
          - text: |
` + indent(keyText, "              ") + `      - steps:
          - text: "Resumed with: {{ .LastMessage }}"
            tool_calls: [{name: execute_command, args: {command: 'echo "key=$OPENAI_API_KEY"'}}]
          - text: "Done: {{ .LastMessage }}"
    fallback:
      steps:
        - text: "Checking."
          tool_calls: [{name: execute_command, args: {command: 'echo "len=${#OPENAI_API_KEY} $OPENAI_API_KEY"'}}]
        - text: "Checked: {{ .LastMessage }}"
`

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// The lines run and answer print on stderr for each item they pause on,
// and what the resume turns say.
const (
	askPaused = "[paused] $ID question: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n" +
		"  answer it: ganglion answer $ID ANSWER, or: ganglion skip $ID\n"
	keyPaused = "[paused] $ID dependency: api_key OPENAI_API_KEY: Required for OpenAI API integration (required)\n" +
		"  provide it: ganglion provide $ID (reads the value from stdin), or: ganglion reject $ID --reason TEXT\n"
	askResumed = "Resumed with: Answer to your question \"What pricing model?\": Freemium\n"
	keyResumed = "Resumed with: The dependency OPENAI_API_KEY (api_key) was provided. Its value is not shown to you: " +
		"execute_command receives it as the environment variable $OPENAI_API_KEY.\n" +
		"[tool] execute_command {\"command\":\"echo \\\"key=$OPENAI_API_KEY\\\"\"}\n" +
		"[tool] execute_command -> key=[secret OPENAI_API_KEY]\n" +
		"Done: key=[secret OPENAI_API_KEY]\n"
)

// pendingProject writes a project of pendingConfig and returns its directory.
func pendingProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(pendingConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(pendingScript), 0o644))
	return dir
}

// pendingJSON is what ganglion pending --json prints per item.
type pendingJSON struct {
	ID, Kind, Agent, Instance, Status string
	Answer, Reason, Message           string
	TurnID                            string `json:"turn_id"`
	ResumedBy                         string `json:"resumed_by"`
	Required, Open                    bool
	Request                           json.RawMessage
}

var pendingIDRE = regexp.MustCompile(`^p-[0-9a-f]{12}$`)

// parsePending decodes the output of ganglion pending --json.
func parsePending(t *testing.T, stdout string) []pendingJSON {
	t.Helper()
	var items []pendingJSON
	for line := range strings.Lines(stdout) {
		var it pendingJSON
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("pending --json line %q: %v", line, err)
		}
		if !pendingIDRE.MatchString(it.ID) {
			t.Errorf("pending item id %q does not look like p-<12 hex>", it.ID)
		}
		items = append(items, it)
	}
	return items
}

// onlyItem lists the items of dir in process, with extra flags, and
// returns the only one.
func onlyItem(t *testing.T, dir string, extra ...string) pendingJSON {
	t.Helper()
	r := runCLI(t, "", append([]string{"pending", dir, "--json"}, extra...)...)
	if r.code != exitOK {
		t.Fatalf("pending --json: exit %d: %s", r.code, r.stderr)
	}
	items := parsePending(t, r.stdout)
	if len(items) != 1 {
		t.Fatalf("pending --json %v: %d items, want 1:\n%s", extra, len(items), r.stdout)
	}
	return items[0]
}

// pauseAgent runs agent in dir (in process) up to its pause and returns
// the item it waits for.
func pauseAgent(t *testing.T, dir, agent string) pendingJSON {
	t.Helper()
	if r := runCLI(t, "", "run", dir, "--agent", agent, "start"); r.code != exitPaused {
		t.Fatalf("run --agent %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", agent, r.code, exitPaused, r.stdout, r.stderr)
	}
	return onlyItem(t, dir)
}

// The binary the end-to-end tests run, built once by cliBinary.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv("GANGLION_TEST_MCP_SERVER") == "1" {
		serveTestMCP() // the test binary as an MCP server, for a config's command
		os.Exit(0)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cliBinary builds ./cmd/ganglion, once per test binary.
func cliBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "ganglion-cli-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ganglion")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build ./cmd/ganglion: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// childEnv is the environment of the CLI processes: without
// GANGLION_SECRET_KEY, so they seal secrets with the project's key file,
// and without the variable the canary is provided as.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, runtime.SecretKeyEnv+"=") && !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			env = append(env, kv)
		}
	}
	return env
}

// exe runs the CLI binary in its own process, in dir, and returns its exit
// code and output.
func exe(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
	default:
		t.Fatalf("ganglion %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// check compares r with a wanted exit code and, unless nil, output, after
// replacing id with $ID.
func check(t *testing.T, what string, r result, code int, stdout, stderr *string, id string) {
	t.Helper()
	norm := func(s string) string {
		if id == "" {
			return s
		}
		return strings.ReplaceAll(s, id, "$ID")
	}
	if r.code != code {
		t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
	}
	if stdout != nil && norm(r.stdout) != *stdout {
		t.Errorf("%s: stdout:\n%s\nwant:\n%s", what, norm(r.stdout), *stdout)
	}
	if stderr != nil && norm(r.stderr) != *stderr {
		t.Errorf("%s: stderr:\n%s\nwant:\n%s", what, norm(r.stderr), *stderr)
	}
}

func ptr(s string) *string { return &s }

// TestPendingQuestionProcesses pauses on an optional question and answers
// it from another process, through the built binary.
func TestPendingQuestionProcesses(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)

	paused := exe(t, dir, "", "run", dir, "What pricing should we use?")
	// The process has exited; the item outlives it.
	r := exe(t, dir, "", "pending", dir, "--json")
	check(t, "pending --json", r, exitOK, nil, ptr(""), "")
	items := parsePending(t, r.stdout)
	if len(items) != 1 {
		t.Fatalf("pending --json: %d items, want 1:\n%s", len(items), r.stdout)
	}
	it := items[0]
	if it.Kind != "question" || it.Status != "pending" || !it.Open || it.Required || it.Agent != "asker" || it.Instance != "default" || it.TurnID != "turn-1" {
		t.Errorf("pending item = %+v", it)
	}
	var req struct {
		Question, Default string
		Options           []string
	}
	if err := json.Unmarshal(it.Request, &req); err != nil || req.Question != "What pricing model?" || req.Default != "Freemium" || strings.Join(req.Options, "|") != "Subscription|Freemium|Ad-based" {
		t.Errorf("request = %s (%v)", it.Request, err)
	}
	id := it.ID
	check(t, "run", paused, exitPaused, ptr(askText), ptr(askPaused), id)

	r = exe(t, dir, "", "pending", dir)
	check(t, "pending", r, exitOK, ptr(
		"ID              AGENT  INSTANCE  KIND      STATUS   REQUEST\n"+
			"$ID  asker  default   question  pending  What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n"), ptr(""), id)

	r = exe(t, dir, "", "answer", dir, id, "freemium") // any case: the canonical option is stored
	check(t, "answer", r, exitOK, ptr(askResumed), ptr("$ID of asker/default answered: Freemium\n"), id)

	r = exe(t, dir, "", "pending", dir)
	check(t, "pending after the answer", r, exitOK, ptr(""), ptr("nothing is pending\n"), id)
	r = exe(t, dir, "", "pending", dir, "--json")
	check(t, "pending --json after the answer", r, exitOK, ptr(""), ptr(""), id)

	r = exe(t, dir, "", "pending", dir, "--all", "--json")
	check(t, "pending --all --json", r, exitOK, nil, ptr(""), id)
	if items := parsePending(t, r.stdout); len(items) != 1 || items[0].ID != id || items[0].Status != "answered" || items[0].Open ||
		items[0].Answer != "Freemium" || items[0].ResumedBy != "turn-2" {
		t.Errorf("pending --all --json = %+v", items)
	}
	r = exe(t, dir, "", "pending", dir, "--all")
	check(t, "pending --all", r, exitOK, ptr(
		"ID              AGENT  INSTANCE  KIND      STATUS    REQUEST\n"+
			"$ID  asker  default   question  answered  What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n"), ptr(""), id)

	// The conversation goes on.
	r = exe(t, dir, "", "run", dir, "thanks")
	check(t, "run after the answer", r, exitOK, ptr("fallback: thanks\n"), ptr(""), id)
}

// TestProvideSecretCanary provides a required API key from stdin, lets
// commands use it in the resume turn and in a later process, and looks for
// its value everywhere it must not be: every output of every command (with
// debug logs and JSON events), the stored history and pending items, and
// every byte of every file of the project, the badger files included.
func TestProvideSecretCanary(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	var raw [16]byte
	rand.Read(raw[:])
	suffix := hex.EncodeToString(raw[:])
	canary := "sk-canary-" + suffix
	// The value in the forms it could take on its way: plain, without its
	// prefix, and base64 (how JSON encodes bytes).
	forms := []string{canary, suffix, base64.StdEncoding.EncodeToString([]byte(canary)), base64.RawURLEncoding.EncodeToString([]byte(canary))}
	var outputs []string
	step := func(what, stdin string, code int, stdout *string, args ...string) result {
		t.Helper()
		r := exe(t, dir, stdin, args...)
		outputs = append(outputs, what+" stdout\x00"+r.stdout, what+" stderr\x00"+r.stderr)
		check(t, what, r, code, stdout, nil, "")
		return r
	}

	r := step("run", "", exitPaused, ptr(keyText), "run", dir, "--agent", "keeper", "--log-level", "debug", "deploy it")
	// The key file is beside the data directory, not in it (its name has
	// changed: secret.key, data.key); it is the only *.key there.
	keys, _ := filepath.Glob(filepath.Join(dir, "*.key"))
	if len(keys) != 1 {
		t.Fatalf("key files beside the data directory: %v, want one", keys)
	}
	keyFile := keys[0]
	key, err := os.ReadFile(keyFile)
	must(t, err)
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	it := parsePending(t, step("pending", "", exitOK, nil, "pending", dir, "--json").stdout)
	if len(it) != 1 || it[0].Kind != "dependency" || it[0].Status != "pending" || !it[0].Required || it[0].Agent != "keeper" {
		t.Fatalf("pending = %+v", it)
	}
	id := it[0].ID
	if want := strings.ReplaceAll(keyPaused, "$ID", id); !strings.Contains(r.stderr, want) {
		t.Errorf("run stderr lacks\n%s\nin:\n%s", want, r.stderr)
	}

	// The value comes from stdin; the resume turn's command receives it,
	// and its output shows the placeholder.
	r = step("provide", canary+"\n", exitOK, ptr(keyResumed), "provide", dir, id, "--log-level", "debug")
	if !strings.Contains(r.stderr, "level=DEBUG") {
		t.Errorf("provide --log-level debug logged nothing:\n%s", r.stderr)
	}
	step("pending after", "", exitOK, ptr(""), "pending", dir, "--json")
	all := parsePending(t, step("pending --all", "", exitOK, nil, "pending", dir, "--all", "--json").stdout)
	if len(all) != 1 || all[0].Status != "provided" || all[0].Open || all[0].Answer != "" || all[0].ResumedBy != "turn-2" {
		t.Errorf("pending --all = %+v", all)
	}

	// Another process reads the secret with the same key file: the command
	// gets a value of the canary's length, and its output is redacted.
	r = step("run --json", "", exitOK, nil, "run", dir, "--agent", "keeper", "--json", "--log-level", "debug", "check the key")
	wantTool := "len=" + strconv.Itoa(len(canary)) + " [secret OPENAI_API_KEY]\n"
	var found bool
	for line := range strings.Lines(r.stdout) {
		var ev struct {
			Topic string
			Data  struct{ Tool, Content string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("run --json line %q: %v", line, err)
		}
		if ev.Topic == "tool.finished" {
			found = true
			if ev.Data.Tool != "execute_command" || ev.Data.Content != wantTool {
				t.Errorf("tool.finished = %+v, want content %q", ev.Data, wantTool)
			}
		}
	}
	if !found {
		t.Errorf("run --json has no tool.finished event:\n%s", r.stdout)
	}
	r = step("history", "", exitOK, nil, "history", dir, "--agent", "keeper", "--json")
	if n := strings.Count(r.stdout, "[secret OPENAI_API_KEY]"); n != 4 { // two tool results, two answers quoting them
		t.Errorf("history --json shows the placeholder %d times, want 4:\n%s", n, r.stdout)
	}
	step("history text", "", exitOK, nil, "history", dir, "--agent", "keeper")

	if got, err := os.ReadFile(keyFile); err != nil || !bytes.Equal(got, key) {
		t.Errorf("the key file changed between commands (%v)", err)
	}
	for _, o := range outputs {
		what, text, _ := strings.Cut(o, "\x00")
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s shows the secret (as %q):\n%s", what, f, text)
			}
		}
	}
	files := secrettest.CheckFiles(t, dir, forms)
	if matches, _ := filepath.Glob(filepath.Join(dir, "data", "*.sst")); len(matches) == 0 || files < 4 {
		t.Errorf("walked %d files, data holds tables %v: the scan saw no badger files", files, matches)
	}
	// Badger compresses its tables (Snappy), so the raw bytes need not show
	// a stored value as it is: read every version of every entry too.
	placeholders, sealed := 0, 0
	secrettest.EachStored(t, filepath.Join(dir, "data"), func(key, value []byte) {
		if bytes.HasSuffix(key, []byte("OPENAI_API_KEY")) && len(value) == len(canary)+29 { // version, nonce, tag
			sealed++
		}
		for _, f := range forms {
			if bytes.Contains(key, []byte(f)) || bytes.Contains(value, []byte(f)) {
				t.Errorf("stored entry %q holds the secret (as %q)", key, f)
			}
		}
		placeholders += bytes.Count(value, []byte("[secret OPENAI_API_KEY]"))
	})
	if placeholders < 4 { // the check sees what the history stores
		t.Errorf("the stored entries show the placeholder %d times, want at least 4", placeholders)
	}
	if sealed != 1 {
		t.Errorf("%d stored entries look like the sealed secret, want 1", sealed)
	}
}

// TestPendingRefusals: what the commands refuse, with exit code and text,
// and that a refusal leaves the item as it was.
func TestPendingRefusals(t *testing.T) {
	const (
		stdinMsg = "the value is read from standard input, never from the command line (it would show in the process list and the shell history)"
		notFound = "ganglion: pending item \"p-000000000000\": not found\n"
	)
	tests := []struct {
		name   string
		agent  string // which agent pauses first
		answer bool   // answer the question before the refused command
		args   func(dir, id string) []string
		stdin  string
		code   int
		stderr string // $ID stands for the item's id
		status string // the item's status afterwards
	}{
		{"answer not an option", "asker", false, func(dir, id string) []string { return []string{"answer", dir, id, "premium"} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: answer \"premium\" must be one of: Subscription, Freemium, Ad-based\n", "pending"},
		{"answer twice", "asker", true, func(dir, id string) []string { return []string{"answer", dir, id, "Subscription"} }, "",
			exitError, "ganglion: pending item \"$ID\": already resolved (it is answered)\n", "answered"},
		{"skip answered", "asker", true, func(dir, id string) []string { return []string{"skip", dir, id} }, "",
			exitError, "ganglion: pending item \"$ID\": already resolved (it is answered)\n", "answered"},
		{"answer unknown id", "asker", false, func(dir, id string) []string { return []string{"answer", dir, "p-000000000000", "Freemium"} }, "",
			exitError, notFound, "pending"},
		{"provide unknown id", "keeper", false, func(dir, id string) []string { return []string{"provide", dir, "p-000000000000"} }, "sk-never-read-123456",
			exitError, notFound, "pending"},
		{"answer missing", "asker", false, func(dir, id string) []string { return []string{"answer", dir, id} }, "",
			exitUsage, "ganglion: want answer [DIR] ID ANSWER: $DIR is DIR, and an argument is missing\n", "pending"},
		{"skip without id", "asker", false, func(dir, id string) []string { return []string{"skip", dir} }, "",
			exitUsage, "ganglion: want skip [DIR] ID: $DIR is DIR, and an argument is missing\n", "pending"},
		{"answer a dependency", "keeper", false, func(dir, id string) []string { return []string{"answer", dir, id, "sk-abcdef-123456"} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: a dependency is provided or rejected, not answered\n", "pending"},
		{"reject a question", "asker", false, func(dir, id string) []string { return []string{"reject", dir, id, "--reason", "no"} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: a question is answered or skipped, not rejected\n", "pending"},
		{"provide value on argv", "keeper", false, func(dir, id string) []string { return []string{"provide", dir, id, "sk-argv-123456"} }, "",
			exitUsage, "ganglion: want provide [DIR] ID; " + stdinMsg + "\n", "pending"},
		{"provide ID VALUE", "keeper", false, func(dir, id string) []string { return []string{"provide", id, "sk-argv-123456"} }, "",
			exitUsage, "ganglion: want provide [DIR] ID, and $ID holds no ganglion.yaml; " + stdinMsg + "\n", "pending"},
		{"provide empty", "keeper", false, func(dir, id string) []string { return []string{"provide", dir, id} }, "\n",
			exitError, "ganglion: pending item \"$ID\": invalid action: value for \"OPENAI_API_KEY\" cannot be empty: the dependency is required\n", "pending"},
		{"provide not a key", "keeper", false, func(dir, id string) []string { return []string{"provide", dir, id} }, "sk canary with spaces\n",
			exitError, "ganglion: pending item \"$ID\": invalid action: value for \"OPENAI_API_KEY\" is not a valid API key: only letters, digits, _ and - are allowed\n", "pending"},
		{"skip required question", "strict", false, func(dir, id string) []string { return []string{"skip", dir, id} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: a required question cannot be skipped\n", "pending"},
		{"answer required empty", "strict", false, func(dir, id string) []string { return []string{"answer", dir, id, " "} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: an answer is required\n", "pending"},
		{"run paused instance", "asker", false, func(dir, id string) []string { return []string{"run", dir, "are you there?"} }, "",
			exitError, "ganglion: agent \"asker\" instance \"default\" is paused: it waits for pending item $ID (see ganglion pending; answer, skip, provide or reject it first)\n", "pending"},
		{"reject required dependency", "keeper", false, func(dir, id string) []string { return []string{"reject", dir, id, "--reason", "we have no key"} }, "",
			exitOK, "$ID of keeper/default rejected: the dependency OPENAI_API_KEY was required, so the agent's task failed: required dependency OPENAI_API_KEY was rejected: we have no key\n", "rejected"},
		// A reason, like an answer or a config line, is not a usage error
		// whatever its words ("requires ", "accepts " are cobra's).
		{"reject with usage-like reason", "keeper", false, func(dir, id string) []string {
			return []string{"reject", dir, id, "--reason", "it requires approval"}
		}, "",
			exitOK, "$ID of keeper/default rejected: the dependency OPENAI_API_KEY was required, so the agent's task failed: required dependency OPENAI_API_KEY was rejected: it requires approval\n", "rejected"},
		{"answer with usage-like text", "asker", false, func(dir, id string) []string { return []string{"answer", dir, id, "accepts cash"} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: answer \"accepts cash\" must be one of: Subscription, Freemium, Ad-based\n", "pending"},
		{"edit a question", "asker", false, func(dir, id string) []string { return []string{"answer", dir, id, "edit", `{"answer":"Freemium"}`} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: a question item cannot be edited: only an item that holds a paused tool call can\n", "pending"},
		{"edit a dependency", "keeper", false, func(dir, id string) []string { return []string{"answer", dir, id, "edit", `{}`} }, "",
			exitError, "ganglion: pending item \"$ID\": invalid action: a dependency item cannot be edited: only an item that holds a paused tool call can\n", "pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := pendingProject(t)
			it := pauseAgent(t, dir, tt.agent)
			if tt.answer {
				if r := runCLI(t, "", "answer", dir, it.ID, "Freemium"); r.code != exitOK {
					t.Fatalf("first answer: exit %d: %s", r.code, r.stderr)
				}
			}
			r := runCLI(t, tt.stdin, tt.args(dir, it.ID)...)
			r.stderr = strings.ReplaceAll(r.stderr, dir, "$DIR")
			check(t, tt.name, r, tt.code, nil, ptr(tt.stderr), it.ID)
			after := onlyItem(t, dir, "--all")
			if after.Status != tt.status {
				t.Errorf("afterwards the item is %s, want %s", after.Status, tt.status)
			}
			if tt.code == exitUsage && r.stdout != "" {
				t.Errorf("a usage error printed on stdout: %q", r.stdout)
			}
		})
	}
}

// TestPendingFailedTaskUnpauses: after a required dependency is rejected,
// the task failed and the instance takes messages again.
func TestPendingFailedTaskUnpauses(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	it := pauseAgent(t, dir, "keeper")
	if r := runCLI(t, "", "reject", dir, it.ID, "--reason", "no"); r.code != exitOK {
		t.Fatalf("reject: exit %d: %s", r.code, r.stderr)
	}
	r := runCLI(t, "", "run", dir, "--agent", "keeper", "go on")
	want := "Checking.\n[tool] execute_command {\"command\":\"echo \\\"len=${#OPENAI_API_KEY} $OPENAI_API_KEY\\\"\"}\n[tool] execute_command -> len=0\nChecked: len=0 \n"
	check(t, "run after the failure", r, exitOK, ptr(want), ptr(""), "")
}

// TestRunInteractivePending: an interactive run asks for what a paused
// turn waits for on stderr and reads the answer from the next line.
func TestRunInteractivePending(t *testing.T) {
	const (
		askPrompt = "[paused] $ID question: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\nanswer (empty line skips): "
		keyPrompt = "[paused] $ID dependency: api_key OPENAI_API_KEY: Required for OpenAI API integration (required)\nvalue (empty to reject): "
	)
	tests := []struct {
		name           string
		agent          string
		stdin          string
		code           int
		stdout, stderr string
		status         string // the item's status afterwards
	}{
		{"answer", "asker", "first message\nfreemium\n", exitOK,
			askText + askResumed, askPrompt, "answered"},
		{"answer, then more messages", "asker", "first message\nFREEMIUM\nthanks\n", exitOK,
			askText + askResumed + "fallback: thanks\n", askPrompt, "answered"},
		{"invalid answer asks again", "asker", "first message\npremium\nSubscription\n", exitOK,
			askText + "Resumed with: Answer to your question \"What pricing model?\": Subscription\n",
			askPrompt + "ganglion: pending item \"$ID\": invalid action: answer \"premium\" must be one of: Subscription, Freemium, Ad-based\n" + askPrompt, "answered"},
		{"empty line skips", "asker", "first message\n\n", exitOK,
			askText + "Resumed with: Your question \"What pricing model?\" was skipped; go on with the default: Freemium\n", askPrompt, "skipped"},
		{"input ends at the prompt", "asker", "first message\n", exitPaused,
			askText, askPrompt, "pending"},
		{"exit at the prompt", "asker", "first message\n/exit\nFreemium\n", exitPaused,
			askText, askPrompt, "pending"},
		{"dependency value", "keeper", "deploy\nsk-interactive-0123456789\n", exitOK,
			keyText + keyResumed, keyPrompt, "provided"},
		{"empty value rejects", "keeper", "deploy\n\n", exitOK,
			keyText, keyPrompt + "ganglion: agent \"keeper\" instance \"default\" turn-2: task failed: required dependency OPENAI_API_KEY was rejected: declined at the prompt\n", "rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := pendingProject(t)
			r := runCLI(t, tt.stdin, "run", dir, "--agent", tt.agent)
			it := onlyItem(t, dir, "--all")
			check(t, tt.name, r, tt.code, ptr(tt.stdout), ptr(tt.stderr), it.ID)
			if it.Status != tt.status {
				t.Errorf("afterwards the item is %s, want %s", it.Status, tt.status)
			}
		})
	}
}

// TestRunInteractivePausedBefore: an interactive run on an instance a
// previous process left paused asks for the item first.
func TestRunInteractivePausedBefore(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	it := pauseAgent(t, dir, "asker")
	r := runCLI(t, "hello\nAd-based\nthanks\n", "run", dir)
	check(t, "interactive run", r, exitOK,
		ptr("Resumed with: Answer to your question \"What pricing model?\": Ad-based\nfallback: thanks\n"),
		ptr("ganglion: the agent is paused; answer first, then send your message again\n"+
			"[paused] $ID question: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\nanswer (empty line skips): "), it.ID)
}

// TestConfigErrorExitCode: a config error exits 1 even when the source
// lines it quotes hold the words run takes for cobra's usage errors.
func TestConfigErrorExitCode(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	cfg := strings.Replace(pendingConfig, "  - name: strict\n", "  - name: strict\n    description: accepts questions, requires answers\n    tools: [reed_file]\n", 1)
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(cfg), 0o644))
	for _, args := range [][]string{{"run", dir, "hi"}, {"pending", dir}, {"answer", dir, "p-000000000000", "x"}} {
		r := runCLI(t, "", args...)
		if r.code != exitError || !strings.Contains(r.stderr, `agent "strict": unknown tool "reed_file"`) {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", args[0], r.code, exitError, r.stderr)
		}
	}
}

// approvalProject writes a project whose agent reads a.txt, a read that
// needs a human's approval, and returns its directory.
func approvalProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "workspace", "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "workspace", "b.txt"), []byte("beta\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(`default: approve
rules:
  - name: reads need a human
    when: tool.name == "read_file"
    decision: ask
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`workspace: workspace
data: data
model: {provider: scripted, script: script.yaml}
agents:
  - name: reader
    tools: [read_file]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  reader:
    turns:
      - steps:
          - tool_calls: [{name: read_file, id: r1, args: {path: a.txt}}]
      - steps:
          - text: "Read: {{ .LastMessage }}"
`), 0o644))
	return dir
}

// TestPendingApprovalEdit: ganglion answer ID edit ARGS approves the call
// with the edited arguments, through the built binary; an edit that does
// not match the tool's schema exits 1 with what is wrong and where, and
// leaves the item open. The history keeps both versions.
func TestPendingApprovalEdit(t *testing.T) {
	t.Parallel()
	dir := approvalProject(t)
	r := exe(t, dir, "", "run", dir, "read the file")
	check(t, "run", r, exitPaused, nil, nil, "")
	it := onlyItem(t, dir)
	if want := "  approve it: ganglion answer $ID approve, or deny it: ganglion answer $ID deny (or ganglion reject $ID --reason TEXT), " +
		"or approve it with other arguments: ganglion answer $ID edit '{...}'\n"; !strings.Contains(strings.ReplaceAll(r.stderr, it.ID, "$ID"), want) {
		t.Errorf("run's hint does not say how to edit:\n%s\nwant a line\n%s", r.stderr, want)
	}
	for _, args := range [][]string{{"pending", "--help"}, {"answer", "--help"}} {
		r := exe(t, dir, "", args...)
		if !strings.Contains(r.stdout, "approve or deny") || !strings.Contains(r.stdout, `ganglion answer ID edit '{"path":"b.txt"}'`) {
			t.Errorf("%s does not say an approval is answered with approve, deny or edit:\n%s", strings.Join(args, " "), r.stdout)
		}
	}

	const refused = `ganglion: pending item "$ID": invalid action: the edited arguments of the read_file call: arguments do not match the schema:
- (root): additional properties 'file' not allowed
- (root): missing property 'path'
`
	for _, tt := range []struct{ name, args, stderr string }{
		{"schema", `{"file":"b.txt"}`, refused},
		{"type", `{"path":3}`, `ganglion: pending item "$ID": invalid action: the edited arguments of the read_file call: arguments do not match the schema: /path: got number, want string` + "\n"},
		{"not JSON", `{"path":`, `ganglion: pending item "$ID": invalid action: the edited arguments of the read_file call: arguments are not valid JSON: unexpected end of JSON input` + "\n"},
		{"no arguments", ``, `ganglion: pending item "$ID": invalid action: the edited arguments of the read_file call: arguments are not valid JSON: unexpected end of JSON input` + "\n"},
	} {
		r = exe(t, dir, "", "answer", dir, it.ID, "edit", tt.args)
		check(t, "bad edit: "+tt.name, r, exitError, ptr(""), ptr(tt.stderr), it.ID)
		if after := onlyItem(t, dir, "--all"); after.Status != "pending" || !after.Open || after.Answer != "" {
			t.Errorf("after the bad edit (%s) the item is %+v", tt.name, after)
		}
	}

	// From the project directory, without DIR.
	r = exe(t, dir, "", "answer", it.ID, "edit", `{"path": "b.txt"}`)
	check(t, "answer edit", r, exitOK, ptr(
		"[tool] read_file {\"path\":\"b.txt\"}\n"+
			"[tool] read_file -> beta\n"+
			"Read: A human edited the arguments of the call of read_file and approved it with theirs; its result shows them.\n"),
		ptr("$ID of reader/default approved: read_file runs with the arguments you edited: {\"path\":\"b.txt\"}\n"), it.ID)
	if after := onlyItem(t, dir, "--all"); after.Status != "answered" || after.Open || after.Answer != `edit {"path":"b.txt"}` {
		t.Errorf("after the edit the item is %+v", after)
	}

	r = exe(t, dir, "", "history", dir, "--json")
	check(t, "history", r, exitOK, nil, ptr(""), "")
	var call, result string
	var meta any
	for line := range strings.Lines(r.stdout) {
		var m struct {
			Role       string
			Content    string
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID        string
				Arguments string // the JSON text, as a string
			} `json:"tool_calls"`
			Metadata map[string]any
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("history --json line %q: %v", line, err)
		}
		for _, c := range m.ToolCalls {
			if c.ID == "r1" {
				call = c.Arguments
			}
		}
		if m.Role == "tool" && m.ToolCallID == "r1" {
			result, meta = m.Content, m.Metadata["edited_arguments"]
		}
	}
	if call != `{"path":"a.txt"}` {
		t.Errorf("the model's call in the history = %s, want its own arguments", call)
	}
	if want := "called with arguments a human edited: {\"path\":\"b.txt\"}\nbeta\n"; result != want || meta != `{"path":"b.txt"}` {
		t.Errorf("the call's result = %q, %s = %v\nwant %q and the arguments", result, "edited_arguments", meta, want)
	}
}

// TestRunInteractiveEdit: at an interactive run's prompt, "edit ARGS"
// approves an approval with other arguments; a bad edit asks again.
func TestRunInteractiveEdit(t *testing.T) {
	t.Parallel()
	dir := approvalProject(t)
	r := runCLI(t, "read it\nedit {\"path\":3}\nedit {\"path\":\"b.txt\"}\n", "run", dir)
	it := onlyItem(t, dir, "--all")
	const prompt = "[paused] $ID approval: read_file {\"path\":\"a.txt\"}; rules: reads need a human (ask); why: rule \"reads need a human\" decides ask\n" +
		"answer (approve, deny, or edit and the new arguments as JSON): "
	check(t, "interactive edit", r, exitOK,
		ptr("[tool] read_file {\"path\":\"a.txt\"}\n"+
			"[tool] read_file -> waiting for a human's approval (pending item $ID): rule \"reads need a human\" decides ask\n"+
			"[tool] read_file {\"path\":\"b.txt\"}\n"+
			"[tool] read_file -> beta\n"+
			"Read: A human edited the arguments of the call of read_file and approved it with theirs; its result shows them.\n"),
		ptr(prompt+"ganglion: pending item \"$ID\": invalid action: the edited arguments of the read_file call: arguments do not match the schema: /path: got number, want string\n"+prompt), it.ID)
	if it.Status != "answered" || it.Answer != `edit {"path":"b.txt"}` {
		t.Errorf("afterwards the item is %+v", it)
	}
}

// TestPendingRepetition: the same call three times in a row pauses before
// the third runs; run says how to answer; guidance resumes the agent, and
// a rejection stops it, each said for a repetition.
func TestPendingRepetition(t *testing.T) {
	t.Parallel()
	const script = `agents:
  reader:
    turns:
      - steps:
          - tool_calls: [{name: read_file, id: r1, args: {path: a.txt}}]
          - tool_calls: [{name: read_file, id: r2, arguments: '{ "path": "a.txt" }'}]
          - tool_calls: [{name: read_file, id: r3, args: {path: a.txt}}]
          - text: "not reached"
      - steps:
          - text: "Resumed: {{ .LastMessage }}"
`
	tests := []struct {
		name           string
		args           []string // after the item's ID
		stdout, stderr string
	}{
		{"answer", []string{"read b.txt instead"},
			"Resumed: You called read_file with the same arguments 3 times in a row; the last call did not run. The user says: read b.txt instead\n",
			"$ID of reader/default answered: the repeated call of read_file does not run; the model reads your guidance\n"},
		{"reject", []string{"--reason", "it loops"}, "",
			"$ID of reader/default rejected: the agent was stopped, so its task failed: stopped after 3 calls in a row of read_file with the same arguments: it loops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := approvalProject(t)
			must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("default: approve\nrules: []\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644))
			r := runCLI(t, "", "run", dir, "read it")
			r.stderr = strings.ReplaceAll(r.stderr, dir, "$DIR")
			it := onlyItem(t, dir)
			check(t, "run", r, exitPaused, nil, ptr("[paused] $ID repetition: read_file {\"path\":\"a.txt\"} called 3 times in a row, the last not run; answer with guidance for the model\n"+
				"  guide the model: ganglion answer $DIR $ID GUIDANCE, or stop it: ganglion reject $DIR $ID --reason TEXT\n"), it.ID)
			verb := "answer"
			if tt.name == "reject" {
				verb = "reject"
			}
			r = runCLI(t, "", append([]string{verb, dir, it.ID}, tt.args...)...)
			check(t, verb, r, exitOK, ptr(tt.stdout), ptr(tt.stderr), it.ID)
		})
	}
}

// TestEditedCallReadsAsWritten: a call edited with <, > and & in its
// arguments runs, and reads, as the person wrote it: in the CLI's lines,
// in the result the model reads, and in history --json; through a running
// server too, whose client encodes the edit for HTTP.
func TestEditedCallReadsAsWritten(t *testing.T) {
	const (
		edit   = `{"command":"echo edited > out.txt && cat < out.txt"}`
		result = "called with arguments a human edited: " + edit + "\nedited\n"
	)
	cliBinary(t) // built before the commands' deadlines start
	for _, served := range []bool{false, true} {
		t.Run(map[bool]string{false: "here", true: "through serve"}[served], func(t *testing.T) {
			if served && testing.Short() {
				t.Skip("builds the CLI")
			}
			dir := approvalProject(t)
			must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte("default: ask\nrules: []\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(`workspace: workspace
data: data
model: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    tools: [execute_command]
    extensions: [{name: approval, config: {rules: rules.yaml}}]
`), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  ops:
    turns:
      - steps:
          - tool_calls: [{name: execute_command, id: c1, args: {command: "echo hi > out.txt"}}]
      - steps:
          - text: "Done."
`), 0o644))
			r := exe(t, dir, "", "run", dir, "go")
			check(t, "run", r, exitPaused, nil, nil, "")
			it := onlyItem(t, dir)
			if served {
				_, _, stop := startServe(t, dir)
				defer stop()
			}
			r = exe(t, dir, "", "answer", dir, it.ID, "edit", edit)
			check(t, "answer edit", r, exitOK,
				ptr("[tool] execute_command "+edit+"\n[tool] execute_command -> edited\nDone.\n"),
				ptr("$ID of ops/default approved: execute_command runs with the arguments you edited: "+edit+"\n"), it.ID)
			r = exe(t, dir, "", "history", dir, "--json")
			var got string
			for line := range strings.Lines(r.stdout) {
				var m pipeline.Message
				must(t, json.Unmarshal([]byte(line), &m))
				if m.Role == pipeline.RoleTool {
					got = m.Content
				}
				if strings.Contains(line, `\u00`) {
					t.Errorf("history --json escapes: %s", line)
				}
			}
			if got != result {
				t.Errorf("the model reads the call's result as\n%s\nwant\n%s", got, result)
			}
		})
	}
}

// TestHowToAnswerAGuestsItem: the hint for an item of a kind of a guest's
// own names the actions every kind may take: skip only for an optional
// item, edit only for one that holds a paused call.
func TestHowToAnswerAGuestsItem(t *testing.T) {
	tests := []struct {
		name string
		it   ledger.Item
		want string
	}{
		{"required", ledger.Item{ID: "p-1", Kind: "ask", Extension: "gate", Required: true},
			"answer it: ganglion answer p-1 ANSWER, or reject it: ganglion reject p-1 --reason TEXT"},
		{"optional", ledger.Item{ID: "p-1", Kind: "ask", Extension: "gate"},
			"answer it: ganglion answer p-1 ANSWER, skip it: ganglion skip p-1, or reject it: ganglion reject p-1 --reason TEXT"},
		{"a paused call", ledger.Item{ID: "p-1", Kind: "ask", Extension: "gate", Required: true, CallID: "c1"},
			"answer it: ganglion answer p-1 ANSWER, or reject it: ganglion reject p-1 --reason TEXT; " +
				"run the call it holds with other arguments: ganglion answer p-1 edit '{...}'"},
		{"a built-in's", ledger.Item{ID: "p-1", Kind: "question", Extension: "protocol", Required: true},
			"answer it: ganglion answer p-1 ANSWER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := howToAnswer(tt.it, ""); got != tt.want {
				t.Errorf("howToAnswer = %q\nwant %q", got, tt.want)
			}
			if got, want := editable(tt.it), tt.it.CallID != ""; got != want {
				t.Errorf("editable = %v, want %v", got, want)
			}
		})
	}
}

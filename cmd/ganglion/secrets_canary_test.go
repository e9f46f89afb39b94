package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/secret/secrettest"
)

// canaryConfig keeps its data in the project, where the test can read
// every byte of it.
const canaryConfig = `workspace: workspace
data: data
model:
  provider: scripted
  script: script.yaml
agents:
  - name: keeper
    tools: [execute_command]
    extensions: [{name: protocol}, {name: audit}]
`

// canaryCLIScript pauses for an API key and a service URL, then shows both
// to commands: plainly, in a failed command, encoded, and in a URL
// rewritten around its password. A later turn encodes the key again.
const canaryCLIScript = `agents:
  keeper:
    turns:
      - steps:
          - text: |
              [DEPENDENCY_REQUEST]
              type: api_key
              name: OPENAI_API_KEY
              description: the API
              required: true
              [/DEPENDENCY_REQUEST]
              [DEPENDENCY_REQUEST]
              type: service
              name: DB
              description: the database URL
              required: true
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "Using them."
            tool_calls:
              - {name: execute_command, id: plain, args: {command: 'echo "key=$OPENAI_API_KEY db=$DB"'}}
              - {name: execute_command, id: failed, args: {command: 'echo "key=$OPENAI_API_KEY"; exit 3'}}
              - name: execute_command
                id: encoded
                args:
                  command: |-
                    printf '%s' "$OPENAI_API_KEY" | base64; printf 'x%s tail' "$OPENAI_API_KEY" | base64 | tr -d '\n'; echo; printf '%s' "$OPENAI_API_KEY" | od -An -v -tx1 | tr -d ' \n'; echo
              - name: execute_command
                id: url
                args:
                  command: |-
                    echo "$DB" | sed 's#@db.example.com:5432#@mirror.example.com#'
          - text: "Done: {{ .LastMessage }}"
    fallback:
      steps:
        - tool_calls: [{name: execute_command, id: later, args: {command: 'printf "xy%s" "$OPENAI_API_KEY" | base64 | tr "+/" "-_"'}}]
        - text: "Later: {{ .LastMessage }}"
`

// TestSecretCanaryCLI provides an API key and a service URL with a
// password through the CLI, lets commands show them plainly and encoded,
// and looks for them in everything the commands print, with --json events
// and --log-level debug (the audit extension's records included), in the
// history, the effective history and the pending listings, and in every
// byte of the data directory and every entry badger holds.
func TestSecretCanaryCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(canaryConfig), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(canaryCLIScript), 0o644))
	var raw [12]byte
	rand.Read(raw[:])
	key := "sk-canary" + hex.EncodeToString(raw[:])
	rand.Read(raw[:])
	dbPW := "db/p@ss:" + hex.EncodeToString(raw[:])
	_, escPW, _ := strings.Cut(url.UserPassword("u", dbPW).String(), ":")
	dbURL := "https://app:" + escPW + "@db.example.com:5432/app"
	hidden := []string{key, dbURL, dbPW, escPW}

	var outputs []string
	step := func(what, stdin string, code int, args ...string) result {
		t.Helper()
		r := runCLI(t, stdin, args...)
		if r.code != code {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, code, r.stdout, r.stderr)
		}
		outputs = append(outputs, what+" stdout\x00"+r.stdout, what+" stderr\x00"+r.stderr)
		return r
	}
	debug := []string{"--json", "--log-level", "debug"}
	step("run", "", exitPaused, append([]string{"run", dir, "--agent", "keeper", "deploy it"}, debug...)...)
	items := parsePending(t, step("pending", "", exitOK, "pending", dir, "--json").stdout)
	if len(items) != 2 {
		t.Fatalf("pending = %+v, want two dependencies", items)
	}
	var resumed result
	for _, it := range items {
		var req struct{ Name string }
		must(t, json.Unmarshal(it.Request, &req))
		value := map[string]string{"OPENAI_API_KEY": key, "DB": dbURL}[req.Name]
		r := step("provide "+req.Name, value+"\n", exitOK, append([]string{"provide", dir, it.ID}, debug...)...)
		if r.stdout != "" {
			resumed = r
		}
	}
	later := step("run later", "", exitOK, append([]string{"run", dir, "--agent", "keeper", "later"}, debug...)...)
	step("history", "", exitOK, "history", dir, "--agent", "keeper", "--json")
	step("history text", "", exitOK, "history", dir, "--agent", "keeper")
	step("history --effective", "", exitOK, "history", dir, "--agent", "keeper", "--effective", "--json")
	step("pending --all", "", exitOK, "pending", dir, "--all", "--json")
	step("pending --all text", "", exitOK, "pending", dir, "--all")

	// What the commands did shows, masked.
	results := map[string]string{}
	for _, r := range []result{resumed, later} {
		for line := range strings.Lines(r.stdout) {
			var ev struct {
				Topic string
				Data  struct {
					CallID  string `json:"call_id"`
					Content string
				}
			}
			must(t, json.Unmarshal([]byte(line), &ev))
			if ev.Topic == "tool.finished" {
				results[ev.Data.CallID] = ev.Data.Content
			}
		}
	}
	for id, want := range map[string]string{
		"plain":  "key=[secret OPENAI_API_KEY] db=[secret DB]\n",
		"failed": "key=[secret OPENAI_API_KEY]\n[exit code 3]",
		"url":    "https://app:[secret DB]@mirror.example.com/app\n",
	} {
		if results[id] != want {
			t.Errorf("tool.finished of %s: content %q, want %q", id, results[id], want)
		}
	}
	if len(results) != 5 {
		t.Errorf("tool.finished events of %d calls, want 5: %q", len(results), results)
	}
	if !strings.Contains(resumed.stderr, "tool call result") || !strings.Contains(resumed.stderr, "[secret OPENAI_API_KEY]") {
		t.Errorf("the debug log has no audit record of a masked result:\n%s", resumed.stderr)
	}
	for _, o := range outputs {
		what, text, _ := strings.Cut(o, "\x00")
		secrettest.Check(t, what, text, hidden)
	}

	files := secrettest.CheckFiles(t, dir, hidden)
	if matches, _ := filepath.Glob(filepath.Join(dir, "data", "*.vlog")); len(matches) == 0 || files < 4 {
		t.Errorf("walked %d files, data holds logs %v: the scan saw no badger files", files, matches)
	}
	if secrettest.CheckStored(t, filepath.Join(dir, "data"), hidden) == 0 {
		t.Error("the data directory holds no entries")
	}
}

package cassettetest_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// A session that reads a file, runs a command, asks a question, pauses,
// is answered, asks for an API key, is given it, and uses it.
const sessionConfig = `
workspace: ws
model: {provider: scripted, script: script.yaml}
agents:
  - name: assistant
    system: You read files.
    tools: [read_file, execute_command]
    extensions: [{name: protocol}, {name: audit}]
`

const sessionScript = `
agents:
  assistant:
    turns:
      - steps:
          - text: "Let me read the notes."
            tool_calls: [{name: read_file, id: c1, args: {path: notes.txt}}]
          - text: "Counting."
            tool_calls: [{name: execute_command, id: c2, args: {command: "wc -w < notes.txt"}}]
          - text: |
              The notes have {{ .LastMessage }} words.
              [USER_QUESTION]
              category: clarification
              question: Shall I summarise them?
              options: [yes, no]
              required: true
              [/USER_QUESTION]
      - steps:
          - text: |
              You said {{ .LastMessage }}. I need a key for that.
              [DEPENDENCY_REQUEST]
              type: api_key
              name: SUMMARY_API_KEY
              description: The summariser's key
              required: true
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "Calling it."
            tool_calls: [{name: execute_command, id: c3, args: {command: 'echo "key=$SUMMARY_API_KEY"'}}]
          - text: "Done: {{ .LastMessage }}"
`

// canary is the secret the session is given; no cassette may hold it.
const canary = "sk-canary-4f1c9a7e2b8d6035"

func sessionInputs() []cassette.Input {
	return []cassette.Input{
		{Op: "send", Agent: "assistant", Instance: "default", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "What is in notes.txt?"}},
		{Op: "answer", Text: "yes"},
		{Op: "provide", Text: canary},
	}
}

// writeSession writes the session's config, script and workspace into a
// new directory and loads the config.
func writeSession(t testing.TB, cfg, script string) (string, *config.File) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"ganglion.yaml": cfg, "script.yaml": script, "ws/notes.txt": "one two three four\n"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// record runs the session live and returns its transcript and cassette.
func record(t *testing.T, cfg *config.File, inputs []cassette.Input) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	res, err := cassettetest.Record(t.Context(), rec, inputs, cassettetest.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return res.Transcript, buf.Bytes()
}

func TestRecordThenReplayGivesTheSameTranscript(t *testing.T) {
	dir, cfg := writeSession(t, sessionConfig, sessionScript)
	live, tape := record(t, cfg, sessionInputs())
	for _, want := range []string{
		`tool.finished assistant/default turn-1 {"arguments":"{\"path\":\"notes.txt\"}","call_id":"c1","content":"one two three four\n"`,
		`"content":"4\n"`, // wc ran
		"-> paused turn-1",
		"-> text_response turn-3",
		"key=[secret SUMMARY_API_KEY]",
	} {
		if !strings.Contains(live, want) {
			t.Errorf("the live transcript lacks %q:\n%s", want, live)
		}
	}
	if bytes.Contains(tape, []byte(canary)) {
		t.Fatalf("the cassette holds the provided secret:\n%s", tape)
	}

	// Offline: no workspace to read, and the scripted model's script gone.
	for _, p := range []string{"ws/notes.txt", "script.yaml"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cassette.Read(bytes.NewReader(tape))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) > 0 {
		t.Errorf("divergences: %v", res.Divergences)
	}
	if res.Transcript != live {
		t.Errorf("the replay's transcript differs from the recording's:\n%s", golden.Diff("recording", "replay", live, res.Transcript))
	}
}

func TestReplayShowsWhereAChangedConfigDiverges(t *testing.T) {
	_, cfg := writeSession(t, sessionConfig, sessionScript)
	_, tape := record(t, cfg, sessionInputs())
	c, err := cassette.Read(bytes.NewReader(tape))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents[0].System = "You read files carefully."
	res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 1 {
		t.Fatalf("divergences: %d, want 1 (the first stops the replay): %v", len(res.Divergences), res.Divergences)
	}
	want := `replay diverged at model call 1 (agent "assistant" instance "default" turn-1 step 1):
  system: recorded "You read files.", now "You read files carefully."`
	if got := res.Divergences[0].Error(); got != want {
		t.Errorf("divergence:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(res.Transcript, "-> error: agent \"assistant\" instance \"default\" turn-1: model: replay diverged at model call 1") {
		t.Errorf("the turn did not stop at the divergence:\n%s", res.Transcript)
	}

	// Lenient: the replay goes on with the recorded answers, and lists
	// every call that differs.
	res, err = cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg, Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Divergences) != 6 {
		t.Errorf("lenient divergences: %d, want one a model call (6):\n%v", len(res.Divergences), res.Divergences)
	}
	if !strings.Contains(res.Transcript, "-> text_response turn-3") {
		t.Errorf("the lenient replay did not finish:\n%s", res.Transcript)
	}
}

// TestCassetteToScript: a cassette converted to the scripted model's
// script runs the session again, live, to the same transcript.
func TestCassetteToScript(t *testing.T) {
	_, cfg := writeSession(t, sessionConfig, sessionScript)
	live, tape := record(t, cfg, sessionInputs())
	c, err := cassette.Read(bytes.NewReader(tape))
	if err != nil {
		t.Fatal(err)
	}
	script := c.Script()
	for _, want := range []string{
		"agents:\n  assistant:\n    turns:\n    - steps:\n      - text: Let me read the notes.\n        tool_calls:\n        - name: read_file\n          id: c1\n          arguments: \"{\\\"path\\\":\\\"notes.txt\\\"}\"",
	} {
		if !strings.Contains(string(script), want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
	_, again := writeSession(t, sessionConfig, string(script))
	res, err := cassettetest.Record(t.Context(), cassette.NewRecorder(io.Discard), sessionInputs(), cassettetest.Options{Config: again})
	if err != nil {
		t.Fatal(err)
	}
	if strip := func(s string) string { return regexp.MustCompile(`p-[0-9a-f]{12}`).ReplaceAllString(s, "p-ID") }; strip(res.Transcript) != strip(live) {
		t.Errorf("the session on the converted script differs:\n%s\nscript:\n%s", golden.Diff("recording", "script", strip(live), strip(res.Transcript)), script)
	}
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRecordThenExtTest is the loop of an extension's author: record a
// session, test it (the golden transcript is written), test it again,
// change the config, see the divergence and the diff, accept the change.
func TestRecordThenExtTest(t *testing.T) {
	dir := project(t, testConfig)
	tape := filepath.Join(dir, "cassettes", "file.cassette")
	must(t, os.MkdirAll(filepath.Dir(tape), 0o755))

	r := runCLI(t, "", "record", tape, dir, "read the file")
	if r.code != 0 || !strings.Contains(r.stdout, "It says: hello world") || !strings.Contains(r.stderr, "recorded the session into "+tape) {
		t.Fatalf("record: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, ".ganglion")); err == nil {
		t.Error("record wrote the data directory; it runs in memory")
	}
	// A missing golden file is written, then matched.
	r = runCLI(t, "", "ext", "test", dir)
	if r.code != 0 || r.stdout != "ok   file.cassette (wrote file.golden)\nok: 1 cassettes\n" {
		t.Fatalf("first ext test: %+v", r)
	}
	gold, err := os.ReadFile(filepath.Join(dir, "cassettes", "file.golden"))
	must(t, err)
	for _, want := range []string{
		`== input 1: send helper/default user_message "read the file"`,
		`-> text_response turn-1: "It says: hello world\n"`,
		"== state helper/default audit\n{\"tool_calls\":1,\"tool_errors\":0,\"turns\":1}",
	} {
		if !strings.Contains(string(gold), want) {
			t.Errorf("the golden transcript lacks %q:\n%s", want, gold)
		}
	}
	// Offline: the file the tool read is gone, and so is the script.
	must(t, os.RemoveAll(filepath.Join(dir, "workspace", "hello.txt")))
	must(t, os.Remove(filepath.Join(dir, "script.yaml")))
	if r = runCLI(t, "", "ext", "test", dir); r.code != 0 || r.stdout != "ok   file.cassette\nok: 1 cassettes\n" {
		t.Fatalf("second ext test: %+v", r)
	}

	// A change the model would see: the divergence says where.
	changed := strings.Replace(testConfig, "  - name: helper\n", "  - name: helper\n    system: Be brief.\n", 1)
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(changed), 0o644))
	r = runCLI(t, "", "ext", "test", dir)
	want := `FAIL file.cassette
  replay diverged at model call 1 (agent "helper" instance "default" turn-1 step 1):
    system: recorded "", now "Be brief."
`
	if r.code != 1 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stderr, "1 of 1 cassettes failed") {
		t.Fatalf("ext test of a changed prompt: code %d\n%s\nwant it to start with:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	// A change the model does not see: the transcript's diff shows it.
	changed = strings.Replace(testConfig, "    extensions: [{name: audit}]\n", "", 1)
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(changed), 0o644))
	r = runCLI(t, "", "ext", "test", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "file.golden differs:") ||
		!strings.Contains(r.stdout, "\n  -== state helper/default audit\n  -{\"tool_calls\":1,\"tool_errors\":0,\"turns\":1}\n") {
		t.Fatalf("ext test without the audit extension: %+v", r)
	}
	if r = runCLI(t, "", "ext", "test", "--update", dir); r.code != 0 || r.stdout != "ok   file.cassette (wrote file.golden)\nok: 1 cassettes\n" {
		t.Fatalf("ext test --update: %+v", r)
	}
	if r = runCLI(t, "", "ext", "test", dir); r.code != 0 {
		t.Fatalf("ext test after the update: %+v", r)
	}
}

func TestExtTestRefusals(t *testing.T) {
	dir := project(t, testConfig)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no cassettes", []string{"ext", "test", dir}, 2, "no cassettes (*.cassette) in " + filepath.Join(dir, "cassettes") + ": record one with\n  ganglion record " +
			filepath.Join(dir, "cassettes", "NAME.cassette") + " " + dir + " \"MESSAGE\""},
		{"no config", []string{"ext", "test", t.TempDir()}, 2, "no ganglion.yaml in "},
		{"bad --run", []string{"ext", "test", "--run", "(", dir}, 2, "--run: error parsing regexp"},
		{"record without file", []string{"record"}, 2, "record takes FILE, then DIR and MESSAGE as run does"},
		{"record with --data", []string{"record", filepath.Join(dir, "x.cassette"), "--data", dir, dir, "hi"}, 2, "--record runs a fresh conversation in memory: it takes no --data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("code %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
	// A broken cassette fails with its line.
	must(t, os.MkdirAll(filepath.Join(dir, "cassettes"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "cassettes", "bad.cassette"), []byte("{\"k\":\"cassette\",\"version\":1,\"start\":\"2026-11-27T10:00:00Z\"}\n{\"k\":\"nope\"}\n"), 0o644))
	r := runCLI(t, "", "ext", "test", dir)
	if want := "FAIL bad.cassette\n  " + filepath.Join(dir, "cassettes", "bad.cassette") + `:2: nope line: unknown kind "nope"`; r.code != 1 || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("broken cassette: %+v\nwant stdout to start with %s", r, want)
	}
}

// TestCassetteScript: a recorded session, as a script, runs again to the
// same answer.
func TestCassetteScript(t *testing.T) {
	dir := project(t, testConfig)
	tape := filepath.Join(dir, "s.cassette")
	if r := runCLI(t, "", "record", tape, dir, "read the file"); r.code != 0 {
		t.Fatalf("record: %+v", r)
	}
	r := runCLI(t, "", "cassette", "script", tape)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "# The scripted model's answers, from a recorded session.\nagents:\n  helper:\n    turns:\n") {
		t.Fatalf("cassette script: %+v", r)
	}
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(r.stdout), 0o644))
	if r := runCLI(t, "", "run", dir, "something else entirely"); r.code != 0 || !strings.Contains(r.stdout, "It says: hello world") {
		t.Errorf("run on the converted script: %+v", r)
	}
	if r := runCLI(t, "", "cassette", "script", filepath.Join(dir, "none.cassette")); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("a missing cassette: %+v", r)
	}
}

// TestRulesTestOnCassettes: a rules file decides the recorded calls; a
// changed rules file shows which decisions changed.
func TestRulesTestOnCassettes(t *testing.T) {
	dir := project(t, testConfig)
	tape := filepath.Join(dir, "s.cassette")
	if r := runCLI(t, "", "record", tape, dir, "read the file"); r.code != 0 {
		t.Fatalf("record: %+v", r)
	}
	rules := filepath.Join(dir, "rules.yaml")
	must(t, os.WriteFile(rules, []byte("default: ask\nrules:\n  - name: reads\n    when: tool.category == \"read\"\n    decision: approve\n"), 0o644))
	r := runCLI(t, "", "rules", "test", rules, tape)
	if r.code != 0 || r.stdout != "ok   s.cassette (wrote s.rules.golden)\n" {
		t.Fatalf("rules test: %+v", r)
	}
	gold, err := os.ReadFile(filepath.Join(dir, "s.rules.golden"))
	must(t, err)
	if want := "helper/default turn-1 step 1 call_1_1_1 read_file {\"path\":\"hello.txt\"}: approve (rule \"reads\" decides approve)\n"; string(gold) != want {
		t.Errorf("decisions:\n%s\nwant:\n%s", gold, want)
	}
	if r = runCLI(t, "", "rules", "test", rules, tape); r.code != 0 || r.stdout != "ok   s.cassette\n" {
		t.Fatalf("rules test again: %+v", r)
	}
	must(t, os.WriteFile(rules, []byte("default: ask\nrules:\n  - name: reads\n    when: tool.category == \"read\"\n    decision: deny\n"), 0o644))
	r = runCLI(t, "", "rules", "test", rules, tape)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL s.cassette\n") ||
		!strings.Contains(r.stdout, "  +helper/default turn-1 step 1 call_1_1_1 read_file {\"path\":\"hello.txt\"}: deny (rule \"reads\" decides deny)\n") {
		t.Fatalf("rules test of changed rules: %+v", r)
	}
	if r = runCLI(t, "", "rules", "test", rules); r.code != 2 {
		t.Errorf("rules test without a cassette: %+v", r)
	}
}

// TestExtTestWritesNoGoldenFromADivergence: a replay that diverged from
// its recording writes no golden file, not even a missing one, nor with
// --update.
func TestExtTestWritesNoGoldenFromADivergence(t *testing.T) {
	dir := project(t, testConfig)
	tape := filepath.Join(dir, "cassettes", "file.cassette")
	if r := runCLI(t, "", "record", tape, dir, "read the file"); r.code != 0 {
		t.Fatalf("record: %+v", r)
	}
	changed := strings.Replace(testConfig, "  - name: helper\n", "  - name: helper\n    system: Be brief.\n", 1)
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(changed), 0o644))
	for _, args := range [][]string{{"ext", "test", dir}, {"ext", "test", "--update", dir}} {
		r := runCLI(t, "", args...)
		if r.code != 1 || !strings.Contains(r.stdout, "  not written: file.golden (the replay diverged)\n") {
			t.Errorf("%v: %+v", args, r)
		}
		if _, err := os.Stat(filepath.Join(dir, "cassettes", "file.golden")); err == nil {
			t.Fatalf("%v wrote the golden file of a diverged replay", args)
		}
	}
}

// TestRecordPaused: a recorded turn that pauses ends the recording there:
// the item lived in memory only, so record says how to record the answer
// (at the prompt) rather than name a command that cannot find it.
func TestRecordPaused(t *testing.T) {
	dir := pendingProject(t)
	tape := filepath.Join(dir, "s.cassette")
	r := runCLI(t, "", "record", tape, dir, "--agent", "asker", "What pricing?")
	r.stderr = strings.ReplaceAll(r.stderr, dir, "$DIR")
	id := regexp.MustCompile(`p-[0-9a-f]{12}`).FindString(r.stderr)
	check(t, "record", r, exitPaused, ptr(askText),
		ptr("[paused] $ID question: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\n"+
			"  the recording ends here, paused: the item lived only in this run's memory, so no command can answer it; "+
			"to record the answer too, record without MESSAGE and answer at the prompt: ganglion record $DIR/s.cassette $DIR --agent asker\n"+
			"ganglion: recorded the session into $DIR/s.cassette\n"), id)
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("record wrote the data directory; it runs in memory")
	}
	// As it says: the answer at the prompt is recorded.
	r = runCLI(t, "What pricing?\nFreemium\n", "record", tape, dir, "--agent", "asker")
	if r.code != exitOK || !strings.HasSuffix(r.stdout, askResumed) {
		t.Errorf("record, answered at the prompt: %+v", r)
	}
}

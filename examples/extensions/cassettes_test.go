package extensions_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// sessions are the recorded sessions of each example, by example and
// cassette name: the messages sent to the config's first agent. Each
// example's directory holds its config (ganglion.yaml, on the scripted
// model of script.yaml) and cassettes/NAME.cassette with its golden
// transcript, which `ganglion ext test DIR` replays as this test does.
//
// A cassette that is missing is recorded, from the script: to record one
// again, delete it (and its golden file) and run the test.
var sessions = map[string]map[string][]string{
	"guardrail":   {"refusals": {"list the files", "please rm -rf / for me", "drop table users;"}},
	"redactor":    {"env": {"what is in env.txt?"}},
	"tool":        {"word_count": {"count these", "empty", "schema"}},
	"counter":     {"turns": {"hello", "look around", "again"}},
	"unconscious": {"hunch": {"the plan"}},
	"observer":    {"told": {"ship it", "and test it"}},
	"as-guard":    {"refusals": {"hello", "!shutdown"}},
	"minimal-wat": {"passes": {"hello"}},
}

// pauses are the recorded sessions whose turns pause, by example and
// cassette name: each input a message sent to the config's first agent
// (Op "send", Text the message) or the resolution of the first open
// pending item ("answer", "skip").
var pauses = map[string]map[string][]cassette.Input{
	"rust-question": {"launch": {{Op: "send", Text: "Plan the launch"}, {Op: "answer", Text: " subscription "},
		{Op: "send", Text: "Pick a colour"}, {Op: "skip"}}},
}

// exampleConfig loads an example's config, changed by edit if not nil,
// with its Go modules taken from where the test built them (ganglion ext
// build puts them beside the config; the committed modules are where the
// config says).
func exampleConfig(t *testing.T, ex string, edit func(string) string) *config.File {
	t.Helper()
	path := filepath.Join(ex, "ganglion.yaml")
	if edit != nil {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(t.TempDir(), "ganglion.yaml")
		if err := os.WriteFile(path, []byte(edit(string(text))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Agents {
		for j := range cfg.Agents[i].Extensions {
			e := &cfg.Agents[i].Extensions[j]
			if built := modulePath(strings.TrimSuffix(filepath.Base(e.Wasm), ".wasm")); built != "" {
				e.Wasm = built
			}
		}
	}
	return cfg
}

// TestExampleCassettes replays each example's cassettes against the
// example and checks the transcripts against their golden files.
func TestExampleCassettes(t *testing.T) {
	modules(t)
	all := map[string]map[string][]cassette.Input{}
	for ex, cassettes := range sessions {
		all[ex] = map[string][]cassette.Input{}
		for name, msgs := range cassettes {
			for _, m := range msgs {
				all[ex][name] = append(all[ex][name], cassette.Input{Op: "send", Text: m})
			}
		}
	}
	maps.Copy(all, pauses)
	for ex, cassettes := range all {
		t.Run(ex, func(t *testing.T) {
			cfgs := []*config.File{exampleConfig(t, ex, nil)}
			if ex == "rust-question" {
				// The committed module, which ganglion ext test replays
				// without a toolchain, and the one its source builds: both
				// must keep the recording, so the committed one is not
				// stale. (A build in another directory differs in bytes,
				// not in behaviour: only behaviour is compared.)
				src := exampleConfig(t, ex, nil)
				builtRust(t, src)
				cfgs = append(cfgs, src)
			}
			for _, cfg := range cfgs {
				opts := cassettetest.Options{Config: cfg, Runtime: []runtime.Option{runtime.WithWasmCache(cacheDir)}}
				for name, inputs := range cassettes {
					path := filepath.Join(ex, "cassettes", name+".cassette")
					if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
						recordExample(t, path, cfg, opts, inputs)
					}
					res := cassettetest.Check(t, path, opts)
					if strings.Contains(res.Transcript, "-> error:") {
						t.Errorf("%s: a session of the example failed:\n%s", path, res.Transcript)
					}
				}
			}
		})
	}
}

// builtRust puts, in cfg, the module of rust-question built from its
// source in place of the committed one, when Debian's Rust toolchain is
// installed: a change to the source must keep the recording.
func builtRust(t *testing.T, cfg *config.File) {
	t.Helper()
	var mods map[string]string
	t.Run("build", func(t *testing.T) { mods, _ = rustGuests.Build(t, "rust-question") })
	for i := range cfg.Agents {
		for j := range cfg.Agents[i].Extensions {
			if e := &cfg.Agents[i].Extensions[j]; filepath.Base(e.Wasm) == "rust-question.wasm" && mods["rust-question"] != "" {
				e.Wasm = mods["rust-question"]
			}
		}
	}
}

func recordExample(t *testing.T, path string, cfg *config.File, opts cassettetest.Options, sends []cassette.Input) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := cassette.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []cassette.Input
	for _, in := range sends {
		if in.Op == "send" {
			in = cassette.Input{Op: "send", Agent: cfg.Agents[0].Name, Instance: "default",
				Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: in.Text}}
		}
		inputs = append(inputs, in)
	}
	if _, err := cassettetest.Record(t.Context(), rec, inputs, opts); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", path)
}

// TestChangedExtensionDiverges: the guardrail with a pattern less lets
// "drop table" reach the model, which the recording never asked: the
// replay stops there and says so, and the transcript's diff shows the
// answer that changed.
func TestChangedExtensionDiverges(t *testing.T) {
	modules(t)
	cfg := exampleConfig(t, "guardrail", func(s string) string {
		return strings.Replace(s, `, '(?i)\bdrop\s+table\b'`, "", 1)
	})
	c, err := cassette.Open(filepath.Join("guardrail", "cassettes", "refusals.cassette"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg, Runtime: []runtime.Option{runtime.WithWasmCache(cacheDir)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `replay diverged at model call of agent "a" instance "default" turn-3 step 1:
  not in the recording: it has 0 such calls`
	if len(res.Divergences) != 1 || res.Divergences[0].Error() != want {
		t.Fatalf("divergences %v\nwant:\n%s", res.Divergences, want)
	}
	gold, err := os.ReadFile(filepath.Join("guardrail", "cassettes", "refusals.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`-> text_response turn-3 answered by guardrail: "I can't help with that: the request matches a blocked pattern (drop table)."`,
	} {
		if !strings.Contains(string(gold), want) || strings.Contains(res.Transcript, want) {
			t.Errorf("the golden transcript should hold %q and the changed replay not:\n%s", want, res.Transcript)
		}
	}
}

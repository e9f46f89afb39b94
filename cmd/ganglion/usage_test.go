package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunUsage: run ends with the usage of this run and of the instance
// over its life, when the provider reported any.
func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte("model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(`agents:
  a:
    fallback:
      steps:
        - text: "hi"
          usage: {input_tokens: 120, output_tokens: 30, cache_read_tokens: 100, cache_write_tokens: 7}
`), 0o644))
	for _, tt := range []struct{ stderr string }{
		{"[usage] this run: 120 in, 30 out, 100 cache read, 7 cache write; a/default in all: 120 in, 30 out, 100 cache read, 7 cache write (tokens; delegated agents count in their own instances)\n"},
		{"[usage] this run: 120 in, 30 out, 100 cache read, 7 cache write; a/default in all: 240 in, 60 out, 200 cache read, 14 cache write (tokens; delegated agents count in their own instances)\n"},
	} {
		r := runCLI(t, "", "run", dir, "--data", data, "hello")
		if r.code != exitOK || r.stdout != "hi\n" || r.stderr != tt.stderr {
			t.Errorf("exit %d\nstdout: %q\nstderr: %q\nwant:   %q", r.code, r.stdout, r.stderr, tt.stderr)
		}
	}
	r := runCLI(t, "", "run", dir, "--data", data, "--json", "hello")
	want := `{"topic":"cli.usage","time":"0001-01-01T00:00:00Z","agent":"a","instance":"default","source":"cli","data":{"instance":{"input_tokens":360,"output_tokens":90,"cache_read_tokens":300,"cache_write_tokens":21},"run":{"input_tokens":120,"output_tokens":30,"cache_read_tokens":100,"cache_write_tokens":7}}}` + "\n"
	if r.stderr != want {
		t.Errorf("--json stderr = %s\nwant %s", r.stderr, want)
	}
}

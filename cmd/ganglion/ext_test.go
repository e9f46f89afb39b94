package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExtInspect(t *testing.T) {
	guard := filepath.Join("..", "..", "extensions", "wasm", "testdata", "guard.wasm")
	notWasm := filepath.Join(t.TempDir(), "x.wasm")
	must(t, os.WriteFile(notWasm, []byte("(module)"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"ext_inspect", []string{"ext", "inspect", guard}, exitOK},
		{"ext_inspect_files", []string{"ext", "inspect", filepath.Join(filepath.Dir(guard), "files.wasm")}, exitOK},
		{"ext_inspect_not_wasm", []string{"ext", "inspect", notWasm}, exitError},
		{"ext_inspect_missing", []string{"ext", "inspect", filepath.Join(filepath.Dir(notWasm), "nope.wasm")}, exitError},
		{"ext_inspect_no_args", []string{"ext", "inspect"}, exitUsage},
		{"ext_inspect_http", []string{"ext", "inspect", filepath.Join(filepath.Dir(guard), "hostile_http.wasm")}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, tt.code, r.stderr)
			}
			golden(t, tt.name, filepath.Dir(notWasm), r.stdout+r.stderr)
		})
	}
	r := runCLI(t, "", "ext", "inspect", "--json", guard)
	var info struct {
		Manifest struct{ Name string }
		Hooks    []string
		Tools    []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || info.Manifest.Name != "guard" || len(info.Hooks) != 1 || info.Tools[0] != "pong" {
		t.Fatalf("--json = %s (%v)", r.stdout, err)
	}
	// A list the module leaves empty is [], not null: a reader can range
	// over every field.
	if strings.Contains(r.stdout, "null") {
		t.Errorf("--json holds null:\n%s", r.stdout)
	}
	for _, key := range []string{`"agents": []`, `"secrets": []`, `"read": []`, `"write": []`, `"state": false`, `"models": false`} {
		if !strings.Contains(r.stdout, key) {
			t.Errorf("--json of guard lacks %s:\n%s", key, r.stdout)
		}
	}

	// What a module asks the config to grant, in JSON as in text.
	r = runCLI(t, "", "ext", "inspect", "--json", filepath.Join(filepath.Dir(guard), "files.wasm"))
	var files struct {
		Manifest struct {
			ABI   int
			Files struct{ Read, Write []string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &files); err != nil || files.Manifest.ABI != 2 ||
		strings.Join(files.Manifest.Files.Read, " ") != "CODEOWNERS docs/" || strings.Join(files.Manifest.Files.Write, " ") != "out/ notes.txt" {
		t.Errorf("--json of files.wasm = %s (%v)", r.stdout, err)
	}
}

// TestExtBuild builds the tool example with the Go toolchain and loads it.
func TestExtBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	out := filepath.Join(t.TempDir(), "tool.wasm")
	r := runCLI(t, "", "ext", "build", filepath.Join("..", "..", "examples", "extensions", "tool"), "-o", out)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "built " + out + " ("
	if !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "bytes): tool 1.0.0, hooks (none), tools word_count\n") {
		t.Errorf("stdout = %q, want %q...", r.stdout, want)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() < 1<<20 {
		t.Errorf("the module: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	r = runCLI(t, "", "ext", "build", missing)
	if r.code != exitError || !strings.Contains(r.stderr, "ganglion: go build in "+missing+": ") {
		t.Errorf("build of a missing dir: exit %d, stderr %q", r.code, r.stderr)
	}
}

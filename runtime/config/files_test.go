package config_test

import (
	"strings"
	"testing"
)

// TestValidateExtensionFiles: an extension's files: grants are for a
// WebAssembly extension, and each path is relative to the workspace,
// clean and without "..", refused where it is written.
func TestValidateExtensionFiles(t *testing.T) {
	const head = "model: {provider: scripted, script: s.yaml}\nagents:\n  - name: assistant\n    extensions:\n"
	tests := []struct {
		name, ext string
		want      []string // the errors, in order; none: valid
	}{
		{"granted", "      - wasm: guard.wasm\n        files: {read: [CODEOWNERS, docs/, ., ./], write: [out/, .github/notes.md]}\n", nil},
		{"native", "      - name: audit\n        files: {read: [docs/]}\n",
			[]string{`ganglion.yaml:6:17: agent "assistant": extension "audit": files: only a WebAssembly extension (wasm:) is granted files; a native one has the workspace's directory (API.Workspace)`}},
		{"bad paths", "      - wasm: guard.wasm\n        files:\n          read: [../x, /etc, docs//a]\n          write: [a/./b, '', 'a\\b', x/../..]\n",
			[]string{
				`ganglion.yaml:7:18: agent "assistant": extension "guard": files: read: "../x" climbs out with ".."; paths are relative to the workspace, inside it`,
				`ganglion.yaml:7:24: agent "assistant": extension "guard": files: read: "/etc" is absolute; paths are relative to the workspace`,
				`ganglion.yaml:7:30: agent "assistant": extension "guard": files: read: "docs//a" is not a clean path (no empty, "." or ".." part; "." alone is the workspace)`,
				`ganglion.yaml:8:19: agent "assistant": extension "guard": files: write: "a/./b" is not a clean path (no empty, "." or ".." part; "." alone is the workspace)`,
				`ganglion.yaml:8:26: agent "assistant": extension "guard": files: write: a path is empty`,
				`ganglion.yaml:8:30: agent "assistant": extension "guard": files: write: "a\\b" holds a backslash; separate directories with /`,
				`ganglion.yaml:8:37: agent "assistant": extension "guard": files: write: "x/../.." climbs out with ".."; paths are relative to the workspace, inside it`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, head+tt.ext)
			err := f.Validate(known)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			got := firstLines(errorList(t, err))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// FuzzParse checks that Parse never panics and that every error it, Validate
// or Extension.Decode returns is an ErrorList of positioned errors.
//
// Seeds: the YAML files in testdata and every case of the table tests.
// Run with: go test -run '^$' -fuzz FuzzParse ./runtime/config
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tt := range parseErrorCases {
		f.Add([]byte(tt.src))
	}
	for _, tt := range validateCases {
		f.Add([]byte(tt.src))
	}
	f.Add([]byte(extensionFile))
	f.Add([]byte("agents: [{name: a, extensions: [{name: x, config: &c {a: *c}}]}]"))
	f.Add([]byte("agents:\n  - <<: {name: a}\n    tools: [read_file]\n"))
	f.Add([]byte("agents: [{name: a, max_steps: !!int \"3\", system: !!str 12}]"))

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := config.Parse("fuzz.yaml", data)
		if err != nil {
			checkPositioned(t, err)
			return
		}
		if file == nil || len(file.Agents) == 0 {
			t.Fatalf("Parse returned %v without an error", file)
		}
		if err := file.Validate(known); err != nil {
			checkPositioned(t, err)
		}
		for _, a := range file.Agents {
			for _, e := range a.Extensions {
				var m map[string]any
				if err := e.Decode(&m); err != nil {
					checkPositioned(t, err)
				}
				var c auditConfig
				if err := e.Decode(&c); err != nil {
					checkPositioned(t, err)
				}
			}
		}
	})
}

func checkPositioned(t *testing.T, err error) {
	t.Helper()
	var list config.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("got %T %v, want a non-empty ErrorList", err, err)
	}
	for _, e := range list {
		if e.Line < 1 || e.Column < 1 {
			t.Fatalf("error at %d:%d: %v", e.Line, e.Column, e)
		}
		if !strings.HasPrefix(e.Error(), "fuzz.yaml:") {
			t.Fatalf("error does not start with the file name: %q", e.Error())
		}
	}
}

package scripted_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// limitCases are scripts over the size or nesting limits. The nested ones
// are about 200 KB, which the YAML library, unguarded, took gigabytes of
// memory and many seconds to parse: a test that regressed would show.
var limitCases = []struct {
	name, src string
	want      string // the first line of the error
}{
	{
		name: "too_large",
		src:  "agents:\n  a:\n    fallback:\n      steps:\n        - text: " + strings.Repeat("x", 1<<20) + "\n",
		want: "script.yaml: file is over the limit of 1048576 bytes (1 MiB)",
	},
	{
		name: "nested_flow",
		src:  "agents: " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "\n",
		want: "script.yaml:1:108: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_block_sequences",
		src:  "agents:\n  a:\n    turns:\n      " + strings.Repeat("- ", 100_000) + "x\n",
		want: "script.yaml:4:201: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_block_mappings",
		src:  nestedMappings(101),
		want: "script.yaml:101:101: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_tool_call_args",
		src:  "agents:\n  a:\n    fallback:\n      steps:\n        - tool_calls:\n            - name: t\n              args: " + strings.Repeat("{a: ", 50_000) + "\n",
		want: "script.yaml:7:389: nested deeper than the limit of 100 levels",
	},
}

// nestedMappings returns n block mappings, each nested in the one before.
func nestedMappings(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

func TestParseLimits(t *testing.T) {
	for _, tt := range limitCases {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scripted.Parse("script.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse: no error, want %q (agents %v)", tt.want, s.Agents())
			}
			if s != nil {
				t.Errorf("Parse returned a script with its error")
			}
			if first, _, _ := strings.Cut(err.Error(), "\n"); first != tt.want {
				t.Errorf("first line:\n got %s\nwant %s", first, tt.want)
			}
			golden(t, filepath.Join("testdata", "load_errors", "limit_"+tt.name+".golden"), err.Error())
		})
	}
}

func TestLoadLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("# padding\n", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scripted.Load(path)
	want := path + ": file is over the limit of 1048576 bytes (1 MiB)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

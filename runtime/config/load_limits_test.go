package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// limitCases are config files over the size or nesting limits. The nested
// ones are about 200 KB, which the YAML library, unguarded, took gigabytes
// of memory and many seconds to parse: a test that regressed would show.
var limitCases = []struct {
	name, src string
	want      string // the first line of the error
}{
	{
		name: "too_large",
		src:  "agents:\n  - name: a\n" + strings.Repeat("# padding\n", 1<<17),
		want: "ganglion.yaml: file is over the limit of 1048576 bytes (1 MiB)",
	},
	{
		name: "nested_flow",
		src:  "agents: " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "\n",
		want: "ganglion.yaml:1:108: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_block_sequences",
		src:  "agents:\n" + strings.Repeat("- ", 100_000) + "x\n",
		want: "ganglion.yaml:2:199: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_block_mappings",
		src:  blockNest(101),
		want: "ganglion.yaml:101:101: nested deeper than the limit of 100 levels",
	},
	{
		name: "nested_extension_config",
		src:  "agents:\n  - name: a\n    extensions:\n      - name: audit\n        config: " + strings.Repeat("{a: ", 50_000) + "\n",
		want: "ganglion.yaml:5:397: nested deeper than the limit of 100 levels",
	},
}

// blockNest returns n block mappings, each nested in the one before.
func blockNest(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

func TestParseLimits(t *testing.T) {
	for _, tt := range limitCases {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse("ganglion.yaml", []byte(tt.src))
			if f != nil {
				t.Errorf("got a File with the error")
			}
			var list config.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("got %T %v, want an ErrorList of one", err, err)
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if list[0].File != "ganglion.yaml" {
				t.Errorf("File = %q, want ganglion.yaml", list[0].File)
			}
			golden(t, "parse_limit_"+tt.name, err.Error())
		})
	}
}

// TestLoadLimits checks that Load refuses a large file, having read no more
// of it than it needs to tell.
func TestLoadLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ganglion.yaml")
	data := "agents:\n  - name: a\n" + strings.Repeat("# padding\n", 1<<20)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	want := path + ": file is over the limit of 1048576 bytes (1 MiB)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

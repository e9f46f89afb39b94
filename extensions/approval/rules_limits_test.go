package approval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadLimits: a rules file over the size or nesting limits is refused
// before it is parsed. The nested ones are about 200 KB, which the YAML
// library, unguarded, took gigabytes of memory and many seconds to parse: a
// test that regressed would show.
func TestLoadLimits(t *testing.T) {
	tests := []struct {
		name, src string
		want      string // the first line of the error
	}{
		{
			name: "too_large",
			src:  "default: ask\nrules: []\n" + strings.Repeat("# padding\n", 1<<17),
			want: "rules.yaml: file is over the limit of 1048576 bytes (1 MiB)",
		},
		{
			name: "nested_flow",
			src:  "default: ask\nrules: " + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "\n",
			want: "rules.yaml:2:107: nested deeper than the limit of 100 levels",
		},
		{
			name: "nested_block_sequences",
			src:  "default: ask\nrules:\n  " + strings.Repeat("- ", 100_000) + "x\n",
			want: "rules.yaml:3:201: nested deeper than the limit of 100 levels",
		},
		{
			name: "nested_block_mappings",
			src:  "default: ask\ntests:\n" + nestedMappings(100),
			want: "rules.yaml:102:101: nested deeper than the limit of 100 levels",
		},
		{
			name: "nested_test_args",
			src:  "default: ask\nrules: []\ntests:\n  - name: deep\n    call: {tool: t, args: " + strings.Repeat("{a: ", 50_000) + "\n",
			want: "rules.yaml:5:411: nested deeper than the limit of 100 levels",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("rules.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("parse accepted it")
			}
			if first, _, _ := strings.Cut(err.Error(), "\n"); first != tt.want {
				t.Errorf("first line:\n got %s\nwant %s", first, tt.want)
			}
			golden(t, "load_limit_"+tt.name, err.Error()+"\n")
		})
	}

	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("# padding\n", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := path + ": file is over the limit of 1048576 bytes (1 MiB)"; err == nil || err.Error() != want {
		t.Fatalf("Load: got %v\nwant %s", err, want)
	}
}

// nestedMappings returns n block mappings, each nested in the one before,
// from column 1.
func nestedMappings(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i+1) + "a:\n")
	}
	return b.String()
}

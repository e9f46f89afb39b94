package approval

import (
	"fmt"
	"strings"
	"testing"
)

// thousandRules is a rules file of 1,000 rules shaped like real ones:
// per-tool rules on arguments and paths, shell command lists, and
// rules on every call.
func thousandRules() string {
	var b strings.Builder
	b.WriteString("default: ask\nprotected: [\"**/.env*\", \".git/**\"]\nrules:\n")
	for i := range 1000 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "  - name: r%d\n    when: tool.name == \"tool_%d\" && args.path startsWith \"dir_%d/\"\n    decision: approve\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "  - name: r%d\n    when: tool.name == \"execute_command\" && any(shell.commands, {.name == \"cmd_%d\"})\n    decision: deny\n", i, i)
		case 2:
			fmt.Fprintf(&b, "  - name: r%d\n    when: 'tool.category == \"write\" && any(paths, {glob(\"src_%d/**\", #)})'\n    decision: ask\n", i, i)
		case 3:
			fmt.Fprintf(&b, "  - name: r%d\n    when: tool.name == \"read_file\" && args.path == \"file_%d.txt\"\n    decision: approve\n", i, i)
		case 4:
			fmt.Fprintf(&b, "  - name: r%d\n    when: agent == \"agent_%d\" && step > 10\n    decision: ask\n", i, i)
		}
	}
	return b.String()
}

// BenchmarkApproval decides one call against 1,000 rules.
func BenchmarkApproval(b *testing.B) {
	r, err := parse("bench.yaml", []byte(thousandRules()))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		call Call
	}{
		{"execute_command", call("execute_command", map[string]any{"command": "git status && ls -la src"})},
		{"read_file", call("read_file", map[string]any{"path": "notes/file_3.txt"})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Decide(bc.call)
			}
		})
	}
}

package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
)

// TestConfigNeedsItsImports: a config that uses a part of the runtime the
// program did not link is refused at load, at the part, with the import to
// add; the same config loads once it is linked.
func TestConfigNeedsItsImports(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ganglion.yaml")
	cfg := "model: {provider: scripted, script: script.yaml}\nmcp_servers:\n  - name: dict\n    command: [dict-server]\nagents:\n  - name: a\n    mcp_servers: [dict]\n"
	for name, data := range map[string]string{path: cfg, filepath.Join(dir, "script.yaml"): "agents:\n  a:\n    turns: [{steps: [{text: hi}]}]\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		linked  bool
		wantErr string
	}{
		{"not linked", false, `ganglion.yaml:3:3: mcp_servers: MCP is not linked into this program; add: import _ "github.com/ganglion-dev/ganglion/runtime/mcp"`},
		{"linked", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.linked {
				saved := seam.MCP
				seam.MCP = nil
				t.Cleanup(func() { seam.MCP = saved })
			} else if seam.MCP == nil {
				t.Fatal("the runtime's tests do not link runtime/mcp (links_test.go)")
			}
			rt, err := New(context.Background(), WithConfigFile(path), WithMemoryStore())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				rt.Close()
				return
			}
			if err == nil {
				rt.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: %v\nwant it to contain %s", err, tc.wantErr)
			}
		})
	}
}

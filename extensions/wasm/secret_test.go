package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestSecretImport: a WASM extension granted a secret reads it through the
// secret import; what it then puts in a tool result is redacted by the
// runtime before the model, the history or the events see it. Before the
// secret is provided, the import answers NOT_FOUND.
func TestSecretImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	script := `
agents:
  a:
    turns:
      - steps:
          - text: "before"
            tool_calls: [{name: execute_command, id: c0, args: {command: "true"}}]
          - text: "first: {{ .LastMessage }}"
      - steps:
          - text: |
              [DEPENDENCY_REQUEST]
              type: api_key
              name: OPENAI_API_KEY
              description: for the API
              required: true
              [/DEPENDENCY_REQUEST]
      - steps:
          - text: "after"
            tool_calls: [{name: execute_command, id: c1, args: {command: "true"}}]
          - text: "tool said {{ .LastMessage }}"
`
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644)
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`model: {provider: scripted, script: script.yaml}
workspace: ws
agents:
  - name: a
    tools: [execute_command]
    extensions:
      - name: protocol
      - {wasm: `+filepath.Join(wd, "testdata", "secret.wasm")+`, secrets: [OPENAI_API_KEY]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.WithConfig(c), runtime.WithMemoryStore(), runtime.WithoutExpiryTimer())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("one"))
	if err != nil || res.Response.Content != "first: no secret: -2" {
		t.Fatalf("before providing: %+v, %v; want NOT_FOUND (-2)", res, err)
	}
	if res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("two")); err != nil || res.FinishReason != pipeline.FinishPaused {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	items, _ := rt.Pending(ctx, ledger.Filter{Open: true})
	const key = "sk-wasm-canary-5e0c1b9a7d"
	res, err = rt.Provide(ctx, items[0].ID, key)
	if err != nil {
		t.Fatal(err)
	}
	if want := "tool said [secret OPENAI_API_KEY]"; res.Response.Content != want {
		t.Fatalf("response = %q, want %q", res.Response.Content, want)
	}
	msgs, _ := rt.History(ctx, "a", "k")
	for _, m := range msgs {
		if strings.Contains(m.Content, key) {
			t.Fatalf("the secret reached the history: %q", m.Content)
		}
	}
}

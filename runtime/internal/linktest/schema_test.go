package linktest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

// toolScript calls weather right, then wrong; each turn ends with the
// text of the tool's result.
const toolScript = `agents:
  a:
    turns:
      - steps:
          - tool_calls: [{name: weather, args: {city: Lisbon}}]
          - text: "{{ .ToolResult }}"
      - steps:
          - tool_calls: [{name: weather, args: {city: 5, when: today}}]
          - text: "{{ .ToolResult }}"
`

// TestToolSchemasWithoutValidator: a program that does not link the JSON
// Schema validator checks a flat schema itself, with the validator's
// words, and refuses a tool whose schema is not flat where it refuses a
// schema that does not compile, at New, naming the keyword and the import
// to add.
func TestToolSchemasWithoutValidator(t *testing.T) {
	if tool.JSONSchema != nil {
		t.Fatal("the test binary links the JSON Schema validator; it must not")
	}
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(scriptPath, []byte(toolScript), 0o644); err != nil {
		t.Fatal(err)
	}
	called := 0
	newTool := func(name, schema string) pipeline.Tool {
		return pipeline.Tool{
			ToolSpec: pipeline.ToolSpec{Name: name, Description: name, Category: pipeline.CategoryRead, Parameters: json.RawMessage(schema)},
			Func: func(context.Context, *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
				called++
				return &pipeline.ToolResult{Content: "sunny"}, nil
			},
		}
	}
	src := "model: {provider: scripted, script: " + scriptPath + "}\nagents:\n  - name: a\n    tools: [weather]\n"
	rt, err := newRuntime(t, src,
		runtime.WithTool(newTool("weather", `{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"],"additionalProperties":false}`)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"sunny",
		"arguments do not match the schema:\n- (root): additional properties 'when' not allowed\n- /city: got number, want string",
	} {
		res, err := rt.Send(context.Background(), "a", "default", hello)
		if err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
		if got := res.Response.Content; !strings.Contains(got, want) {
			t.Errorf("turn %d: the tool's result is\n%s\nwant it to hold\n%s", i+1, got, want)
		}
	}
	if called != 1 {
		t.Errorf("the tool ran %d times, want once: its right call", called)
	}

	_, err = newRuntime(t, src, runtime.WithTool(newTool("weather", `{"type":"object","properties":{"unit":{"type":"string","enum":["c","f"]}}}`)))
	const want = `tool "weather": parameters schema uses "enum" (at /properties/unit), which needs the JSON Schema validator: add import _ "github.com/ganglion-dev/ganglion/runtime/jsonschema"`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("New with a tool whose schema is not flat: %v\nwant an error that ends with %s", err, want)
	}
}

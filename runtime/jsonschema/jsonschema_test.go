package jsonschema_test

import (
	"encoding/json"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	_ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
)

// TestImportLinksTheValidator: importing the package lets CheckArguments
// check a schema that is not flat, in the validator's words.
func TestImportLinksTheValidator(t *testing.T) {
	if tool.JSONSchema == nil {
		t.Fatal("importing runtime/jsonschema did not set tool.JSONSchema")
	}
	units := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "units",
		Parameters: json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":["unit"]}`)}}
	for _, tt := range []struct{ args, want string }{
		{`{"unit":"c"}`, ""},
		{`{"unit":"k"}`, `arguments do not match the schema: /unit: value must be one of 'c', 'f'`},
		{`{}`, `arguments do not match the schema: (root): missing property 'unit'`},
	} {
		err := tool.CheckArguments(units, json.RawMessage(tt.args))
		if got := errText(err); got != tt.want {
			t.Errorf("CheckArguments(%s):\n got %s\nwant %s", tt.args, got, tt.want)
		}
	}
	bad := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "bad", Parameters: json.RawMessage(`{"minLength":-1}`)}}
	const want = `tool "bad": parameters schema does not compile: /minLength: minimum: got -1, want 0`
	if got := errText(tool.CheckArguments(bad, json.RawMessage(`{}`))); got != want {
		t.Errorf("a schema that does not compile:\n got %s\nwant %s", got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

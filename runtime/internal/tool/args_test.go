package tool_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

const fileSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "offset": {"type": "integer", "minimum": 1},
    "tags": {"type": "array", "items": {"type": "string"}},
    "a/b~c": {"type": "object", "properties": {"n": {"type": "number"}}}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func TestCheckArguments(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		args    string
		wantErr string
	}{
		// No schema: any object.
		{name: "no schema, empty object", args: `{}`},
		{name: "no schema, object", args: ` {"a": [1, 2]} `},
		{name: "no schema, empty input", args: ``, wantErr: `arguments are not valid JSON: unexpected end of JSON input`},
		{name: "no schema, truncated", args: `{"a":`, wantErr: `arguments are not valid JSON: unexpected end of JSON input`},
		{name: "no schema, bad character", args: `{'a': 1}`, wantErr: `arguments are not valid JSON: invalid character '\'' looking for beginning of object key string`},
		{name: "no schema, trailing data", args: `{} x`, wantErr: `arguments are not valid JSON: invalid character 'x' after top-level value`},
		{name: "no schema, array", args: `[1]`, wantErr: `arguments must be a JSON object, got array`},
		{name: "no schema, null", args: `null`, wantErr: `arguments must be a JSON object, got null`},
		{name: "no schema, string", args: `"x"`, wantErr: `arguments must be a JSON object, got string`},
		{name: "no schema, number", args: `-1.5`, wantErr: `arguments must be a JSON object, got number`},
		{name: "no schema, boolean", args: ` true`, wantErr: `arguments must be a JSON object, got boolean`},
		// Trivial schemas take the same path.
		{name: "empty schema", schema: `{}`, args: `{"x":1}`},
		{name: "true schema", schema: `true`, args: `{"x":1}`},
		{name: "object schema, array", schema: `{"type":"object"}`, args: `[]`, wantErr: `arguments must be a JSON object, got array`},
		// Real schemas.
		{name: "valid", schema: fileSchema, args: `{"path":"a.txt","offset":3,"tags":["x"],"a/b~c":{"n":1.5}}`},
		{name: "big integer", schema: fileSchema, args: `{"path":"a","offset":123456789012345678901234567890}`},
		{name: "malformed", schema: fileSchema, args: `{"path":`, wantErr: `arguments are not valid JSON: unexpected end of JSON input`},
		{name: "trailing data", schema: fileSchema, args: `{"path":"a"}}`, wantErr: `arguments are not valid JSON: invalid character '}' after top-level value`},
		{name: "not an object", schema: fileSchema, args: `["a.txt"]`, wantErr: `arguments must be a JSON object, got array`},
		{name: "missing property", schema: fileSchema, args: `{}`, wantErr: `arguments do not match the schema: (root): missing property 'path'`},
		{name: "wrong type", schema: fileSchema, args: `{"path":7}`, wantErr: `arguments do not match the schema: /path: got number, want string`},
		{name: "not an integer", schema: fileSchema, args: `{"path":"a","offset":1.5}`, wantErr: `arguments do not match the schema: /offset: got number, want integer`},
		{name: "below minimum", schema: fileSchema, args: `{"path":"a","offset":0}`, wantErr: `arguments do not match the schema: /offset: minimum: got 0, want 1`},
		{name: "array item", schema: fileSchema, args: `{"path":"a","tags":["x",2]}`, wantErr: `arguments do not match the schema: /tags/1: got number, want string`},
		{name: "escaped pointer", schema: fileSchema, args: `{"path":"a","a/b~c":{"n":"1"}}`, wantErr: `arguments do not match the schema: /a~1b~0c/n: got string, want number`},
		{name: "additional properties are sorted", schema: fileSchema, args: `{"path":"a","zz":1,"b":2,"m":3}`,
			wantErr: `arguments do not match the schema: (root): additional properties 'b', 'm', 'zz' not allowed`},
		{name: "several violations, one line each", schema: fileSchema, args: `{"offset":"x","tags":[1,true],"q":0}`,
			wantErr: "arguments do not match the schema:\n" +
				"- (root): additional properties 'q' not allowed\n" +
				"- (root): missing property 'path'\n" +
				"- /offset: got string, want integer\n" +
				"- /tags/0: got number, want string\n" +
				"- /tags/1: got boolean, want string"},
		{name: "anyOf", schema: `{"anyOf":[{"required":["path"]},{"properties":{"url":{"type":"string"}},"required":["url"]}]}`, args: `{"url":1}`,
			wantErr: `arguments do not match the schema: (root): 'anyOf' failed: missing property 'path'; or /url: got number, want string`},
		{name: "draft-07", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["x"]}`, args: `{}`,
			wantErr: `arguments do not match the schema: (root): missing property 'x'`},
		{name: "local $ref", schema: `{"$defs":{"p":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/p"}}}`, args: `{"p":1}`,
			wantErr: `arguments do not match the schema: /p: got number, want string`},
		// Numbers too large to check cheaply.
		{name: "huge exponent", schema: fileSchema, args: `{"path":"a","a/b~c":{"n":2},"offset":1e999999}`,
			wantErr: `arguments do not match the schema: /offset: number 1e999999 is out of range`},
		{name: "huge negative exponent, first in key order", schema: fileSchema, args: `{"tags":[1E-401],"offset":1e401,"path":"a"}`,
			wantErr: `arguments do not match the schema: /offset: number 1e401 is out of range`},
		{name: "too many digits", schema: fileSchema, args: `{"path":"a","offset":` + strings.Repeat("9", 101) + `}`,
			wantErr: `arguments do not match the schema: /offset: number 9999999999999999999999999999999999999... is out of range`},
		{name: "largest exponent allowed", schema: fileSchema, args: `{"path":"a","offset":1e400}`},
		// Broken schemas name the tool.
		{name: "schema not JSON", schema: `{"type":`, args: `{}`, wantErr: `tool "t": parameters schema is not valid JSON: unexpected EOF`},
		{name: "schema invalid", schema: `{"minLength":-1}`, args: `{}`, wantErr: `tool "t": parameters schema does not compile: /minLength: minimum: got -1, want 0`},
		{name: "schema refers to URL", schema: `{"$ref":"https://example.com/s.json"}`, args: `{}`,
			wantErr: `tool "t": parameters schema does not compile: failing loading "https://example.com/s.json": schema refers to https://example.com/s.json; tool schemas must be self-contained`},
		{name: "schema missing $ref target", schema: `{"$ref":"#/$defs/none"}`, args: `{}`,
			wantErr: `tool "t": parameters schema does not compile: json-pointer in "mem:///parameters.json#/$defs/none" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.CheckArguments(fakeTool("t", tt.schema), json.RawMessage(tt.args))
			if got := errText(err); got != tt.wantErr {
				t.Errorf("CheckArguments error:\n got %s\nwant %s", got, tt.wantErr)
			}
		})
	}
}

// TestCheckArgumentsDeterministic checks that violations come out in the
// same order every time, though the library walks maps.
func TestCheckArgumentsDeterministic(t *testing.T) {
	tl := fakeTool("t", `{"properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"}},"additionalProperties":false}`)
	args := json.RawMessage(`{"d":1,"c":1,"b":1,"a":1,"z":1,"y":1,"x":1}`)
	first := errText(tool.CheckArguments(tl, args))
	for range 50 {
		if got := errText(tool.CheckArguments(tl, args)); got != first {
			t.Fatalf("error changed between calls:\n%s\n---\n%s", first, got)
		}
	}
}

// TestCheckArgumentsConcurrent compiles and uses schemas from many goroutines;
// run with -race.
func TestCheckArgumentsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				schema := `{"required":["k` + string(rune('a'+(g+i)%5)) + `"]}`
				err := tool.CheckArguments(fakeTool("t", schema), json.RawMessage(`{"ka":1}`))
				if err != nil && !strings.HasPrefix(err.Error(), "arguments do not match the schema: (root): missing property 'k") {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkCheckArguments(b *testing.B) {
	benches := []struct {
		name   string
		schema string
		args   string
	}{
		{name: "no schema", args: `{"path":"src/main.go","offset":10,"limit":20}`},
		{name: "schema/valid", schema: fileSchema, args: `{"path":"src/main.go","offset":10,"tags":["a","b"]}`},
		// A schema of typed properties only, the common shape: the fast check.
		{name: "flat schema/valid", schema: `{"type":"object","properties":{"path":{"type":"string","description":"p"},"offset":{"type":"integer"},"tags":{"type":"array"}},"required":["path"],"additionalProperties":false}`,
			args: `{"path":"src/main.go","offset":10,"tags":["a","b"]}`},
		// The workspace tools' shape: length and integer bounds.
		{name: "bounded schema/valid", schema: `{"type":"object","properties":{"path":{"type":"string","minLength":1},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`,
			args: `{"path":"src/main.go","offset":10,"limit":20}`},
		{name: "schema/invalid", schema: fileSchema, args: `{"path":7,"offset":"x"}`},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			tl := fakeTool("t", bb.schema)
			args := json.RawMessage(bb.args)
			_ = tool.CheckArguments(tl, args) // compile outside the loop
			b.ReportAllocs()
			for b.Loop() {
				_ = tool.CheckArguments(tl, args)
			}
		})
	}
}

func FuzzCheckArguments(f *testing.F) {
	schemas := []string{
		``,
		fileSchema,
		`{"anyOf":[{"required":["a"]},{"properties":{"b":{"type":"array","items":{"type":"integer"}}}}]}`,
		`{"properties":{"s":{"pattern":"^[a-z]+$","maxLength":5},"n":{"multipleOf":0.5,"maximum":10}},"patternProperties":{"^x":{"const":1}}}`,
	}
	seeds := []string{
		``, `{}`, `[]`, `null`, `1`, `"s"`, `{"path":"a"}`, `{"path":1,"offset":-1}`,
		`{"a":1} trailing`, `{"b":[1,2,"x"]}`, `{"s":"abcdefg","n":10.25,"x1":2}`,
		`{"path":"a","offset":1e400}`, `{"path":"\ud800"}`, `{"":{"":[]}}`, "{\"path\":\"a\x00\"}",
		`{"a/b~c":{"n":null}}`, `{"n":-0.0}`, `{"n":123456789012345678901234567890}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tl := fakeTool("t", schemas[int(which)%len(schemas)])
		err := tool.CheckArguments(tl, args)
		if err == nil {
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.UseNumber()
			var v map[string]any
			if !json.Valid(args) || dec.Decode(&v) != nil || v == nil {
				t.Fatalf("CheckArguments accepted %q, which is not a JSON object", args)
			}
		}
	})
}

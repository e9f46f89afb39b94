package schematest

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

type inner struct {
	Size int `yaml:"size"`
}

type outer struct {
	Name   string            `yaml:"name"`
	Tags   []string          `yaml:"tags"`
	Env    map[string]string `yaml:"env"`
	Inner  *inner            `yaml:"inner"`
	Skip   string            `yaml:"-"`
	hidden int               // unexported: no key
}

var _ = outer{hidden: 0}

// TestMatch: Match finds each way a schema and a type can disagree, and
// none when they agree.
func TestMatch(t *testing.T) {
	good := `{
		"type": "object", "additionalProperties": false, "required": ["name"],
		"properties": {
			"name": {"$ref": "#/$defs/name"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"env": {"type": "object", "additionalProperties": {"type": "string"}},
			"inner": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/inner"}]}
		},
		"$defs": {
			"name": {"type": "string", "pattern": "^a"},
			"inner": {"type": "object", "additionalProperties": false, "properties": {"size": {"type": "integer"}}}
		}
	}`
	tests := []struct {
		name  string
		patch func(m map[string]any)
		short bool
		want  []string
	}{
		{"agrees", nil, true, nil},
		{"a string form the type lacks", nil, false, []string{`#/properties/inner/anyOf/0: type [string], want "object" for schematest.inner`}},
		{"a missing property", func(m map[string]any) { delete(prop(m, "#"), "tags") }, true,
			[]string{`#: no property "tags" (outer.Tags)`}},
		{"a property of no field", func(m map[string]any) { prop(m, "#")["extra"] = map[string]any{"type": "string"} }, true,
			[]string{`#: property "extra" is no key of schematest.outer`}},
		{"a wrong type", func(m map[string]any) { prop(m, "#/$defs/inner")["size"] = map[string]any{"type": "string"} }, true,
			[]string{`#/$defs/inner/properties/size: type [string], want "integer" for int`}},
		{"other keys allowed", func(m map[string]any) { m["additionalProperties"] = true }, true,
			[]string{`#: additionalProperties must be false: schematest.outer has no other keys`}},
		{"a required key of no field", func(m map[string]any) { m["required"] = []any{"nmae"} }, true,
			[]string{`#: required "nmae" is no key of schematest.outer`}},
		{"a wrong element", func(m map[string]any) {
			prop(m, "#")["tags"].(map[string]any)["items"] = map[string]any{"type": "integer"}
		}, true,
			[]string{`#/properties/tags/items: type [integer], want "string" for string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(good), &doc); err != nil {
				t.Fatal(err)
			}
			if tt.patch != nil {
				tt.patch(doc)
			}
			s := &Schema{Doc: doc}
			types := Types{}
			if tt.short {
				types.ShortForms = []reflect.Type{reflect.TypeFor[inner]()}
			}
			if got := s.Match("#", reflect.TypeFor[outer](), types); !slices.Equal(got, tt.want) {
				t.Errorf("Match =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// prop returns the properties of the schema at ref of doc.
func prop(doc map[string]any, ref string) map[string]any {
	return (&Schema{Doc: doc}).At(ref)["properties"].(map[string]any)
}

// TestMatchNodes: a field kept as an ast.Node needs its shape.
func TestMatchNodes(t *testing.T) {
	type withNode struct {
		Body any `yaml:"body"`
	}
	doc := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{"body": map[string]any{"type": "integer"}}}
	s := &Schema{Doc: doc}
	if got := s.Match("#", reflect.TypeFor[withNode](), Types{}); !slices.Equal(got, []string{`#/properties/body: the Go type takes any value, the schema only [integer]`}) {
		t.Errorf("any: %q", got)
	}
	if got := s.Match("#", reflect.TypeFor[withNode](), Types{Nodes: map[string]reflect.Type{"withNode.body": reflect.TypeFor[int]()}}); len(got) != 0 {
		t.Errorf("with its shape: %q", got)
	}
}

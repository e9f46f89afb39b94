package approval

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/schematest"
	"github.com/ganglion-dev/ganglion/pipeline"
)

func rulesSchema(t *testing.T) *schematest.Schema {
	t.Helper()
	s, err := schematest.Load("rules.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRulesSchemaMatchesTypes: the JSON Schema of a rules file has a
// property for every key of the file's types, of the key's type, and no
// other; and its decisions and categories are the loader's.
func TestRulesSchemaMatchesTypes(t *testing.T) {
	s := rulesSchema(t)
	types := schematest.Types{Nodes: map[string]reflect.Type{"ruleDoc.when": reflect.TypeFor[string]()}}
	for _, p := range s.Match("#", reflect.TypeFor[fileDoc](), types) {
		t.Error(p)
	}
	var decisions []string
	for _, d := range []Decision{Approve, Ask, Deny} {
		if _, ok := parseDecision(string(d)); ok {
			decisions = append(decisions, string(d))
		}
	}
	if got := s.Enum("#/$defs/decision"); !slices.Equal(got, decisions) {
		t.Errorf("decisions %q, want %q", got, decisions)
	}
	var categories []string
	for _, c := range []pipeline.ToolCategory{pipeline.CategoryRead, pipeline.CategoryWrite, pipeline.CategoryExecute, pipeline.CategoryBrowser, pipeline.CategoryMCP, pipeline.CategoryOther} {
		categories = append(categories, string(c))
	}
	if got := s.Enum("#/$defs/category"); !slices.Equal(got, categories) {
		t.Errorf("categories %q, want %q", got, categories)
	}
	// Each category the schema lists, the loader takes.
	for _, c := range s.Enum("#/$defs/category") {
		mustParse(t, "default: ask\ncategories: {fetch: "+c+"}\nrules: []\n")
	}
}

// TestRulesSchemaRefuses: rules files the loader refuses, the schema
// refuses too, saying where.
func TestRulesSchemaRefuses(t *testing.T) {
	s := rulesSchema(t)
	tests := []struct{ name, src, want string }{
		{"no default", "rules: []\n", "missing property 'default'"},
		{"an unknown decision", "default: ask\nrules: [{name: r, when: 'true', decision: allow}]\n", "at '/rules/0/decision'"},
		{"a rule without when", "default: ask\nrules: [{name: r, decision: deny}]\n", "at '/rules/0': missing property 'when'"},
		{"an unknown key", "default: ask\nrules: [{name: r, when: 'true', decision: deny, decison: deny}]\n", "at '/rules/0': additional properties 'decison' not allowed"},
		{"an unknown category", "default: ask\ncategories: {fetch: network}\nrules: []\n", "at '/categories/fetch'"},
		{"a test that expects no decision", "default: ask\nrules: []\ntests: [{call: {tool: x}, expect: maybe}]\n", "at '/tests/0/expect'"},
		{"a call's args as a list", "default: ask\nrules: []\ntests: [{call: {tool: x, args: [a]}, expect: ask}]\n", "at '/tests/0/call/args'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateYAML([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("schema: %v, want an error with %q", err, tt.want)
			}
			if _, err := parse("rules.yaml", []byte(tt.src)); err == nil {
				t.Error("the loader accepts it")
			}
		})
	}
}

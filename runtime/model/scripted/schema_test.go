package scripted

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/schematest"
)

func scriptSchema(t *testing.T) *schematest.Schema {
	t.Helper()
	s, err := schematest.Load("script.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScriptSchemaMatchesTypes: the JSON Schema of a script has a property
// for every key of each level of a script, of the key's type, and no other.
func TestScriptSchemaMatchesTypes(t *testing.T) {
	types := schematest.Types{Nodes: map[string]reflect.Type{
		"scriptDoc.agents":   reflect.TypeFor[map[string]agentDoc](),
		"agentDoc.turns":     reflect.TypeFor[[]entryDoc](),
		"agentDoc.fallback":  reflect.TypeFor[entryDoc](),
		"entryDoc.steps":     reflect.TypeFor[[]stepDoc](),
		"stepDoc.tool_calls": reflect.TypeFor[[]toolCallDoc](),
		"stepDoc.usage":      reflect.TypeFor[usageDoc](),
		"toolCallDoc.args":   reflect.TypeFor[map[string]any](),
	}}
	for _, p := range scriptSchema(t).Match("#", reflect.TypeFor[scriptDoc](), types) {
		t.Error(p)
	}
	// The keys the loader's errors list are the types' keys.
	for _, level := range []struct {
		typ  reflect.Type
		keys string
	}{
		{reflect.TypeFor[scriptDoc](), scriptKeys},
		{reflect.TypeFor[agentDoc](), agentKeys},
		{reflect.TypeFor[entryDoc](), entryKeys},
		{reflect.TypeFor[stepDoc](), stepKeys},
		{reflect.TypeFor[toolCallDoc](), toolCallKeys},
		{reflect.TypeFor[usageDoc](), usageKeys},
	} {
		got := strings.Split(level.keys, ", ")
		if want := schematest.YAMLKeys(level.typ); !sameSet(got, want) {
			t.Errorf("%s: the loader names keys %q, the type has %q", level.typ.Name(), got, want)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}

// TestScriptSchemaRefuses: scripts the loader refuses, the schema refuses
// too, saying where.
func TestScriptSchemaRefuses(t *testing.T) {
	s := scriptSchema(t)
	tests := []struct{ name, src, want string }{
		{"no agents", "chunk_size: 3\n", "missing property 'agents'"},
		{"an agent with nothing", "agents: {a: {}}\n", "at '/agents/a'"},
		{"an empty step", "agents: {a: {fallback: {steps: [{}]}}}\n", "at '/agents/a/fallback/steps/0'"},
		{"args and arguments", "agents: {a: {fallback: {steps: [{tool_calls: [{name: t, args: {}, arguments: '{}'}]}]}}}\n", "at '/agents/a/fallback/steps/0/tool_calls/0'"},
		{"a negative chunk size", "chunk_size: -1\nagents: {a: {fallback: {steps: [{text: hi}]}}}\n", "at '/chunk_size'"},
		{"an unknown key", "agents: {a: {fallback: {steps: [{txt: hi}]}}}\n", "additional properties 'txt' not allowed"},
		{"an unknown kind", "agents: {a: {turns: [{kind: reply, steps: [{text: hi}]}]}}\n", "at '/agents/a/turns/0/kind'"},
		{"a fallback with a kind", "agents: {a: {fallback: {kind: resume, steps: [{text: hi}]}}}\n", "at '/agents/a/fallback'"},
		{"usage as text", "agents: {a: {fallback: {steps: [{text: hi, usage: {input_tokens: many}}]}}}\n", "at '/agents/a/fallback/steps/0/usage/input_tokens'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateYAML([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("schema: %v, want an error with %q", err, tt.want)
			}
			if _, err := Parse("script.yaml", []byte(tt.src)); err == nil {
				t.Error("the loader accepts it")
			}
		})
	}
}

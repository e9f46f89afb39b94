package config_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/internal/schematest"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// configTypes says what the config's types do not: the shape of the
// extension's config (any), and that an agent's mcp_servers entry may be a
// server's name.
var configTypes = schematest.Types{
	Nodes:      map[string]reflect.Type{"Extension.config": reflect.TypeFor[any]()},
	ShortForms: []reflect.Type{reflect.TypeFor[config.AgentMCP](), reflect.TypeFor[config.HTTPGrant]()},
}

func loadSchema(t *testing.T, name string) *schematest.Schema {
	t.Helper()
	s, err := schematest.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSchemaMatchesTypes: the JSON Schema of ganglion.yaml has a property
// for every key of the config's types, of the key's type, and no other.
func TestSchemaMatchesTypes(t *testing.T) {
	s := loadSchema(t, "ganglion.schema.json")
	for _, p := range s.Match("#", reflect.TypeFor[config.File](), configTypes) {
		t.Error(p)
	}
}

// TestSchemaEnums: where Validate accepts a fixed set of values, the
// schema lists the same, and Validate accepts each.
func TestSchemaEnums(t *testing.T) {
	s := loadSchema(t, "ganglion.schema.json")
	for ref, want := range config.Enums {
		if got := s.Enum(ref); !slices.Equal(got, want) {
			t.Errorf("%s: enum %q, want %q", ref, got, want)
		}
	}
	// Each value, in a file, passes both the schema and Validate.
	for _, v := range s.Enum("#/$defs/Model/properties/tool_protocol") {
		checkBoth(t, "model: {provider: scripted, script: s.yaml, tool_protocol: "+v+"}\nagents: [{name: a}]\n", "")
	}
	for _, v := range s.Enum("#/$defs/Extension/properties/on_error") {
		checkBoth(t, "model: {provider: scripted, script: s.yaml}\nagents: [{name: a, extensions: [{name: audit, on_error: "+v+"}]}]\n", "")
	}
	for _, v := range s.Enum("#/$defs/MCPServer/properties/start") {
		checkBoth(t, "model: {provider: scripted, script: s.yaml}\nmcp_servers: [{name: m, command: [m], start: "+v+"}]\nagents: [{name: a}]\n", "")
	}
	for _, v := range s.Enum("#/$defs/Webhook/properties/events/items") {
		checkBoth(t, "model: {provider: scripted, script: s.yaml}\nwebhooks: [{url: \"https://h.example\", secret_env: S, events: ["+v+"]}]\nagents: [{name: a}]\n", "")
	}
}

// checkBoth checks a config against the schema and the loader: both
// accept it if schemaErr is "", else both refuse it, the schema with an
// error that contains schemaErr.
func checkBoth(t *testing.T, src, schemaErr string) {
	t.Helper()
	s := loadSchema(t, "ganglion.schema.json")
	err := s.ValidateYAML([]byte(src))
	switch {
	case schemaErr == "" && err != nil:
		t.Errorf("the schema refuses\n%s: %v", src, err)
	case schemaErr != "" && err == nil:
		t.Errorf("the schema accepts\n%s", src)
	case schemaErr != "" && !strings.Contains(err.Error(), schemaErr):
		t.Errorf("the schema refuses\n%s: %v\nwant an error with %q", src, err, schemaErr)
	}
	f, err := config.Parse("ganglion.yaml", []byte(src))
	if err == nil {
		err = f.Validate(known)
	}
	switch {
	case schemaErr == "" && err != nil:
		t.Errorf("the loader refuses\n%s: %v", src, err)
	case schemaErr != "" && err == nil:
		t.Errorf("the loader accepts\n%s", src)
	}
}

// TestSchemaRefuses: configs the loader refuses, the schema refuses too,
// saying where.
func TestSchemaRefuses(t *testing.T) {
	const model = "model: {provider: scripted, script: s.yaml}\n"
	tests := []struct{ name, src, want string }{
		{"an unknown key", model + "agents: [{name: a}]\nagent: {name: b}\n", "additional properties 'agent' not allowed"},
		{"no agents", model, "missing property 'agents'"},
		{"an agent without a name", model + "agents: [{system: hi}]\n", "at '/agents/0': missing property 'name'"},
		{"a bad agent name", model + "agents: [{name: a b}]\n", "at '/agents/0/name'"},
		{"max_steps as text", model + "agents: [{name: a, max_steps: \"25\"}]\n", "at '/agents/0/max_steps': got string, want integer"},
		{"max_steps too large", model + "agents: [{name: a, max_steps: 1001}]\n", "at '/agents/0/max_steps': maximum"},
		{"an unknown tool protocol", "model: {provider: scripted, script: s.yaml, tool_protocol: json}\nagents: [{name: a}]\n", "at '/model/tool_protocol'"},
		{"the scripted model without a script", "model: {provider: scripted}\nagents: [{name: a}]\n", "at '/model': missing property 'script'"},
		{"an extension without a name or wasm", model + "agents: [{name: a, extensions: [{on_error: fail_open}]}]\n", "at '/agents/0/extensions/0'"},
		{"an unknown on_error", model + "agents: [{name: a, extensions: [{name: audit, on_error: ignore}]}]\n", "at '/agents/0/extensions/0/on_error'"},
		{"an mcp_servers entry of a list", model + "mcp_servers: [{name: calc, command: [calc]}]\nagents: [{name: a, mcp_servers: [[calc]]}]\n", "at '/agents/0/mcp_servers/0'"},
		{"an MCP server with a command and a url", model + "mcp_servers: [{name: calc, command: [calc], url: \"https://h.example\"}]\nagents: [{name: a}]\n", "at '/mcp_servers/0'"},
		{"an MCP server name with __", model + "mcp_servers: [{name: a__b, command: [calc]}]\nagents: [{name: a}]\n", "at '/mcp_servers/0/name'"},
		{"an unknown webhook event", model + "webhooks: [{url: \"https://h.example\", secret_env: S, events: [task.done]}]\nagents: [{name: a}]\n", "at '/webhooks/0/events/0'"},
		{"a webhook without a secret", model + "webhooks: [{url: \"https://h.example\"}]\nagents: [{name: a}]\n", "missing property 'secret_env'"},
		{"a size that is not one", model + "store: {memtable_size: lots}\nagents: [{name: a}]\n", "at '/store/memtable_size'"},
		{"a duration that is not one", model + "agent_calls: {timeout: soon}\nagents: [{name: a}]\n", "at '/agent_calls/timeout'"},
		{"too many replicas", model + "cluster: {url: \"nats://h:4222\", replicas: 6}\nagents: [{name: a}]\n", "at '/cluster/replicas'"},
		{"a team without agents", model + "agents: [{name: a}]\nteams: [{name: t}]\n", "at '/teams/0': missing property 'agents'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkBoth(t, tt.src, tt.want) })
	}
}

// TestSchemaAcceptsShortForms: an agent's mcp_servers entry is a name or a
// mapping, in the schema as in the loader.
func TestSchemaAcceptsShortForms(t *testing.T) {
	checkBoth(t, "model: {provider: scripted, script: s.yaml}\nmcp_servers: [{name: calc, command: [calc]}, {name: web, url: \"https://h.example/mcp\"}]\n"+
		"agents: [{name: a, mcp_servers: [calc, {server: web, tools: [search]}]}]\n", "")
}

// TestSchemasAcceptEveryFile: every config, approval rules file and
// scripted model script in the repository is valid under its schema. A
// YAML file is one of those kinds when the kind's loader accepts it; a
// YAML file that none accepts fails the test, so that no file is missed.
func TestSchemasAcceptEveryFile(t *testing.T) {
	root, err := schematest.Root()
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*schematest.Schema{}
	for _, name := range []string{"ganglion", "rules", "script"} {
		schemas[name] = loadSchema(t, name+".schema.json")
	}
	count := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml" {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		kind := ""
		if _, err := config.Parse(path, data); err == nil {
			kind = "ganglion"
		} else if _, err := approval.Load(path); err == nil {
			kind = "rules"
		} else if _, err := scripted.Parse(path, data); err == nil {
			kind = "script"
		}
		if kind == "" {
			t.Errorf("%s: no Ganglion reader accepts this YAML file: fix it, or teach this test what it is", rel)
			return nil
		}
		count[kind]++
		if err := schemas[kind].ValidateYAML(data); err != nil {
			t.Errorf("%s: schema/%s.schema.json refuses it: %v", rel, kind, err)
		}
		if !strings.Contains(rel, "testdata") && kind != "rules" {
			checkSchemaComment(t, rel, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The repository has configs, rules and scripts; finding none of a
	// kind means the walk went wrong.
	for _, kind := range []string{"ganglion", "rules", "script"} {
		if count[kind] == 0 {
			t.Errorf("found no %s file", kind)
		}
	}
	t.Logf("checked %v", count)
}

var schemaComment = regexp.MustCompile(`^# yaml-language-server: \$schema=(\S+)$`)

// checkSchemaComment checks that a yaml-language-server comment in a file,
// if any, names a schema that exists.
func checkSchemaComment(t *testing.T, rel, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := schemaComment.FindStringSubmatch(sc.Text())
		if m == nil || strings.Contains(m[1], "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), m[1])); err != nil {
			t.Errorf("%s: its schema comment names %s: %v", rel, m[1], err)
		}
	}
}

// TestReferenceComplete: REFERENCE.md has a section for every type of the
// config, whose table lists exactly the type's keys.
func TestReferenceComplete(t *testing.T) {
	data, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][]string{} // type name → the keys of its table
	heading := regexp.MustCompile("^## .* — `(\\w+)`$")
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	current := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			current = ""
			if m := heading.FindStringSubmatch(line); m != nil {
				current = m[1]
				sections[current] = []string{}
			}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && current != "" {
			sections[current] = append(sections[current], m[1])
		}
	}
	seen := map[reflect.Type]bool{}
	var visit func(reflect.Type)
	visit = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[config.File]().PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		keys, ok := sections[typ.Name()]
		want := schematest.YAMLKeys(typ)
		switch {
		case !ok:
			t.Errorf("REFERENCE.md has no section \"## ... — `%s`\" (keys %s)", typ.Name(), strings.Join(want, ", "))
		default:
			got := slices.Sorted(slices.Values(keys))
			if !slices.Equal(got, want) {
				t.Errorf("REFERENCE.md, section %s: keys %s, want %s", typ.Name(), strings.Join(got, ", "), strings.Join(want, ", "))
			}
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && f.Tag.Get("yaml") != "-" {
				visit(f.Type)
			}
		}
	}
	visit(reflect.TypeFor[config.File]())
	for name := range sections {
		found := false
		for typ := range seen {
			found = found || typ.Name() == name
		}
		if !found {
			t.Errorf("REFERENCE.md has a section for %s, which is no type of the config", name)
		}
	}
}

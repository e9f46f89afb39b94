package config_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

func TestLoadFull(t *testing.T) {
	f, err := config.Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	eq := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}

	eq("Path", f.Path, filepath.Join("testdata", "full.yaml"))
	eq("Workspace", f.Workspace, filepath.Join(dir, "work"))
	eq("Data", f.Data, "/var/lib/ganglion")
	eq("Model", *f.Model, config.Model{
		Provider:        "scripted",
		Name:            "replay",
		Script:          filepath.Join(dir, "scripts", "default.yaml"),
		ContextWindow:   8192,
		MaxOutputTokens: 1024,
	})
	if len(f.Agents) != 2 {
		t.Fatalf("got %d agents, want 2", len(f.Agents))
	}

	a := f.Agents[0]
	eq("Agents[0].Name", a.Name, "assistant")
	eq("Agents[0].Description", a.Description, "Answers questions about the workspace.")
	eq("Agents[0].System", a.System, "You are a careful assistant.\nRead before you write.\n")
	if a.Model != f.Model {
		t.Errorf("Agents[0].Model = %p, want the file's model %p", a.Model, f.Model)
	}
	eq("Agents[0].Tools", a.Tools, []string{"read_file", "write_file", "list_files", "execute_command"})
	eq("Agents[0].MaxSteps", a.MaxSteps, 40)
	eq("AgentCalls", *f.AgentCalls, config.AgentCalls{MaxDepth: 7, Timeout: "30s"})
	eq("TaskBudget", *f.TaskBudget, config.Budget{Delegations: 20, Turns: 90})
	eq("Agents[0].TaskBudget", *a.TaskBudget, config.Budget{Tokens: 250000})
	if len(a.Extensions) != 3 {
		t.Fatalf("got %d extensions, want 3", len(a.Extensions))
	}
	type ext struct {
		Name, Wasm, OnError string
		Priority            int
		HasConfig           bool
	}
	for i, want := range []ext{
		{Name: "audit", OnError: "fail_open", Priority: -1, HasConfig: true},
		{Name: "guard", Wasm: filepath.Join(dir, "ext", "guard.wasm"), OnError: "fail_closed"},
		{Name: "guard2", Wasm: "/opt/ext/guard.wasm", OnError: "fail_closed", Priority: 2},
	} {
		e := a.Extensions[i]
		eq("Agents[0].Extensions["+string(rune('0'+i))+"]", ext{e.Name, e.Wasm, e.OnError, e.Priority, e.Config != nil}, want)
	}
	var audit struct {
		Limit  int      `yaml:"limit"`
		Labels []string `yaml:"labels"`
	}
	if err := a.Extensions[0].Decode(&audit); err != nil {
		t.Fatal(err)
	}
	eq("audit config", audit.Limit, 3)
	eq("audit config labels", audit.Labels, []string{"a", "b"})

	b := f.Agents[1]
	eq("Agents[1].Name", b.Name, "reviewer.v2")
	eq("Agents[1].Description", b.Description, "")
	eq("Agents[1].System", b.System, "")
	eq("Agents[1].Model", *b.Model, config.Model{
		Provider:  "openai",
		Name:      "gpt-4o",
		BaseURL:   "https://api.example.com/v1",
		APIKeyEnv: "EXAMPLE_API_KEY",
		Script:    filepath.Join(dir, "unused", "relative.yaml"),
	})
	eq("Agents[1].Tools", b.Tools, []string{"read_file"})
	eq("Agents[1].MaxSteps", b.MaxSteps, config.DefaultMaxSteps)
	eq("Agents[1].Extensions", len(b.Extensions), 0)

	if err := f.Validate(known); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name, file, src string
		workspace, data string
		script          string
	}{
		{
			name: "relative name",
			file: "app/ganglion.yaml",
			src: `model: {provider: scripted, script: s.yaml}
agents: [{name: a}]
`,
			workspace: "app/workspace",
			data:      "app/.ganglion/data",
			script:    "app/s.yaml",
		},
		{
			name: "bare name",
			file: "ganglion.yaml",
			src: `model: {provider: scripted, script: ../s.yaml}
agents: [{name: a}]
`,
			workspace: "workspace",
			data:      ".ganglion/data",
			script:    "../s.yaml",
		},
		{
			name: "absolute name and paths kept",
			file: "/etc/ganglion/ganglion.yaml",
			src: `workspace: /srv/ws
model: {provider: scripted, script: /srv/s.yaml}
agents: [{name: a}]
`,
			workspace: "/srv/ws",
			data:      "/etc/ganglion/.ganglion/data",
			script:    "/srv/s.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse(tt.file, []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if f.Path != tt.file {
				t.Errorf("Path = %q, want %q", f.Path, tt.file)
			}
			if f.Workspace != tt.workspace {
				t.Errorf("Workspace = %q, want %q", f.Workspace, tt.workspace)
			}
			if f.Data != tt.data {
				t.Errorf("Data = %q, want %q (next to the config file)", f.Data, tt.data)
			}
			if f.Model.Script != tt.script {
				t.Errorf("Model.Script = %q, want %q", f.Model.Script, tt.script)
			}
			a := f.Agents[0]
			if a.Model != f.Model {
				t.Errorf("agent model is not the file's")
			}
			if a.MaxSteps != config.DefaultMaxSteps {
				t.Errorf("MaxSteps = %d, want %d", a.MaxSteps, config.DefaultMaxSteps)
			}
		})
	}
}

func TestParseSharedModelResolvedOnce(t *testing.T) {
	f := mustParse(t, `model: &m {provider: scripted, script: s.yaml}
agents:
  - name: a
    model: *m
  - name: b
    model: *m
`)
	for _, a := range f.Agents {
		if a.Model.Script != "s.yaml" {
			t.Errorf("agent %s: Script = %q, want s.yaml", a.Name, a.Model.Script)
		}
	}
}

func TestParseMergeKeys(t *testing.T) {
	f := mustParse(t, `model: {provider: scripted, script: s.yaml}
agents:
  - &base
    name: a
    tools: [read_file]
    max_steps: 7
  - name: b
    <<: *base
  - name: c
    tools: [list_files]
    <<: *base
    system: hi
`)
	type view struct {
		Name, System string
		Tools        []string
		MaxSteps     int
	}
	want := []view{
		{Name: "a", Tools: []string{"read_file"}, MaxSteps: 7},
		{Name: "b", Tools: []string{"read_file"}, MaxSteps: 7},
		{Name: "c", System: "hi", Tools: []string{"list_files"}, MaxSteps: 7},
	}
	var got []view
	for _, a := range f.Agents {
		got = append(got, view{a.Name, a.System, a.Tools, a.MaxSteps})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseTags(t *testing.T) {
	f := mustParse(t, `agents: [{name: !!str 12, system: !!null, description: !!str yes}]`)
	if a := f.Agents[0]; a.Name != "12" || a.System != "" || a.Description != "yes" {
		t.Errorf("got %+v", a)
	}
}

func TestLoadNotFound(t *testing.T) {
	_, err := config.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want fs.ErrNotExist", err)
	}
}

func TestLoadThenValidate(t *testing.T) {
	f, err := config.Load(filepath.Join("testdata", "full.yaml"))
	if err != nil || f == nil {
		t.Fatalf("full.yaml: %v", err)
	}
	if err := f.Validate(known); err != nil {
		t.Fatalf("full.yaml: %v", err)
	}
	err = f.Validate(config.Known{
		ToolNames: func() []string { return []string{"read_file"} },
	})
	list := errorList(t, err)
	if len(list) != 3 {
		t.Errorf("got %d errors, want 3:\n%v", len(list), err)
	}
}

// parseErrorCases are files that do not decode; each has a golden file
// parse_<name>.golden with the rendered error. FuzzParse uses them as seeds.
var parseErrorCases = []struct{ name, src string }{
	{"syntax_error", `agents:
  - name: assistant
    tools: [read_file, write_file
    max_steps: 3
`},
	{"syntax_bad_indent", `agents:
  - name: assistant
   system: hi
`},
	{"duplicate_key", `agents:
  - name: assistant
    tools: [read_file]
    tools: [write_file]
`},
	{"unknown_top_level_field", `model:
  provider: scripted
  script: s.yaml
agent:
  - name: assistant
`},
	{"unknown_agent_field", `agents:
  - name: assistant
    toolz: [read_file]
`},
	{"unknown_model_field", `model:
  provider: openai
  url: https://example.com
agents:
  - name: assistant
`},
	{"unknown_agent_model_field", `agents:
  - name: assistant
    model:
      provider: openai
      temperature: 0.2
`},
	{"unknown_extension_field", `agents:
  - name: assistant
    extensions:
      - name: audit
        cfg: {limit: 3}
`},
	{"max_steps_word", `agents:
  - name: assistant
    max_steps: many
`},
	{"max_steps_float", `agents:
  - name: assistant
    max_steps: 2.5
`},
	{"max_steps_quoted", `agents:
  - name: assistant
    max_steps: "25"
`},
	{"tools_not_a_list", `agents:
  - name: assistant
    tools: read_file
`},
	{"tool_not_a_string", `agents:
  - name: assistant
    tools: [read_file, 42]
`},
	{"name_number", `agents:
  - name: 1.10
`},
	{"model_not_a_mapping", `model: scripted
agents:
  - name: assistant
`},
	{"agents_mapping", `agents:
  assistant:
    tools: [read_file]
`},
	{"top_level_list", `- name: assistant
`},
	{"top_level_scalar", `hello
`},
	{"empty", ``},
	{"comments_only", `# nothing here yet
`},
	{"no_agents", `model:
  provider: scripted
  script: s.yaml
`},
	{"agents_empty", `workspace: ws
agents: []
`},
	{"two_documents", `agents:
  - name: a
---
agents:
  - name: b
`},
	{"undefined_alias", `agents:
  - name: assistant
    model: *default
`},
	{"unsupported_tag", `agents:
  - name: assistant
    max_steps: !!int "3"
`},
	{"unknown_field_in_merge", `agents:
  - <<: {name: a, toolz: [read_file]}
`},
	{"merge_list", `agents:
  - &a {name: a}
  - <<: [*a, {tools: [read_file]}]
`},
	{"several", `workspace: [ws]
agents:
  - name: assistant
    toolz: [read_file]
    max_steps: many
  - name: helper
    extensions:
      - name: audit
        priority: high
`},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse("ganglion.yaml", []byte(tt.src))
			if f != nil {
				t.Errorf("got a File with the error")
			}
			list := errorList(t, err)
			for _, e := range list {
				if e.File != "ganglion.yaml" {
					t.Errorf("File = %q, want ganglion.yaml", e.File)
				}
			}
			golden(t, "parse_"+tt.name, err.Error())
		})
	}
}

func TestParseSeveralInOrder(t *testing.T) {
	var src string
	for _, tt := range parseErrorCases {
		if tt.name == "several" {
			src = tt.src
		}
	}
	_, err := config.Parse("ganglion.yaml", []byte(src))
	got := firstLines(errorList(t, err))
	want := []string{
		`ganglion.yaml:1:12: workspace: expected a string, found a list`,
		`ganglion.yaml:4:5: agent "assistant": unknown field "toolz" (known: description, extensions, max_steps, mcp_servers, model, name, system, task_budget, tools)`,
		`ganglion.yaml:5:16: agent "assistant": max_steps: expected an integer, found string "many"`,
		`ganglion.yaml:9:19: agent "helper": extensions[0].priority: expected an integer, found string "high"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestErrorWithoutFileName(t *testing.T) {
	_, err := config.Parse("", []byte("agents: 3\n"))
	list := errorList(t, err)
	if got, want := firstLines(list)[0], "1:9: agents: expected a list, found integer 3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

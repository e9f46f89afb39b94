package config_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

func ExampleParse() {
	f, err := config.Parse("app/ganglion.yaml", []byte(`
model:
  provider: scripted
  script: replies.yaml
agents:
  - name: assistant
    tools: [read_file, list_files]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a := f.Agents[0]
	fmt.Println(f.Workspace)
	fmt.Println(a.Name, a.Model.Provider, a.Model.Script, a.MaxSteps)
	// Output:
	// app/workspace
	// assistant scripted app/replies.yaml 25
}

func ExampleFile_Validate() {
	f, err := config.Parse("ganglion.yaml", []byte(`model:
  provider: scripted
  script: replies.yaml
agents:
- name: assistant
  tools:
    - reed_file
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	builtins := []string{"execute_command", "list_files", "read_file", "write_file"}
	err = f.Validate(config.Known{
		Tool:      func(name string) bool { return slices.Contains(builtins, name) },
		ToolNames: func() []string { return builtins },
	})
	fmt.Println(err)
	// Output:
	// ganglion.yaml:7:7: agent "assistant": unknown tool "reed_file" (known: execute_command, list_files, read_file, write_file)
	//    4 | agents:
	//    5 | - name: assistant
	//    6 |   tools:
	// >  7 |     - reed_file
	//              ^
}

func ExampleExtension_Decode() {
	f, err := config.Parse("ganglion.yaml", []byte(`model: {provider: scripted, script: replies.yaml}
agents:
  - name: assistant
    extensions:
      - name: audit
        config:
          limit: lots
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var settings struct {
		Limit int `yaml:"limit"`
	}
	err = f.Agents[0].Extensions[0].Decode(&settings)
	fmt.Println(err)
	// Output:
	// ganglion.yaml:7:18: agent "assistant": extension "audit": config.limit: expected an integer, found string "lots"
	//    4 |     extensions:
	//    5 |       - name: audit
	//    6 |         config:
	// >  7 |           limit: lots
	//                         ^
}

// Every problem of a file is reported at once, as an ErrorList: an editor
// marks each at its position.
func ExampleErrorList() {
	_, err := config.Parse("ganglion.yaml", []byte(`model: {provider: scripted, script: replies.yaml}
agents:
  - name: assistant
    max_stepz: 10
  - name: helper
    tools: read_file
`))
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Printf("%d:%d %s: %s\n", e.Line, e.Column, e.Path, e.Msg)
		}
	}
	// Output:
	// 4:5 $.agents[0].max_stepz: agent "assistant": unknown field "max_stepz" (known: description, extensions, max_steps, mcp_servers, model, name, system, task_budget, tools)
	// 6:12 $.agents[1].tools: agent "helper": tools: expected a list, found string "read_file"
}

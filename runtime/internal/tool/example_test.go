package tool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

func ExampleOpenWorkspace() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\ncall Ada\n"), 0o644); err != nil {
		panic(err)
	}

	ws, err := tool.OpenWorkspace(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	// Register the workspace tools; an agent then selects the ones it may use.
	reg := tool.NewRegistry()
	for _, t := range ws.Tools() {
		if err := reg.Add(t); err != nil {
			panic(err)
		}
	}
	tools, err := reg.Select([]string{"read_file", "list_files"})
	if err != nil {
		panic(err)
	}

	// Run read_file as the innermost layer of a toolCall chain would.
	readFile := tools[0]
	for _, args := range []string{`{"path":"notes.txt","offset":2}`, `{"path":"../etc/passwd"}`} {
		c := pipeline.NewToolCallContext(pipeline.ToolCallInfo{
			Call: pipeline.ToolCall{ID: "call-1", Name: readFile.Name, Arguments: []byte(args)},
		})
		res, _ := readFile.Func(context.Background(), c)
		fmt.Printf("error=%v %q\n", res.IsError, res.Content)
	}
	// Output:
	// error=false "call Ada\n"
	// error=true "path \"../etc/passwd\" escapes the workspace"
}
